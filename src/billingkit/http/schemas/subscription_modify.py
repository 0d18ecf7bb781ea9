"""Answers of ``POST /v1/subscriptions/{id}/modify/execute``: the subscription after the change
and the other resources it changed (the reference's ``SubscriptionModifyResponse``)."""

from __future__ import annotations

from typing import Literal

from billingkit import SubscriptionStatus
from billingkit.http.schemas.base import Timestamp, WireModel
from billingkit.http.schemas.billing import InvoiceResponse, SubscriptionResponse

__all__ = [
    "ChangedInvoiceResponse",
    "ChangedResourcesResponse",
    "ChangedSubscriptionResponse",
    "SubscriptionModifyResponse",
]


class ChangedSubscriptionResponse(WireModel):
    """Another subscription the change created (a new inherited child) or updated (a child that
    joined, left or was cancelled)."""

    id: str
    action: Literal["created", "updated"]
    status: SubscriptionStatus
    current_period_end: Timestamp


class ChangedInvoiceResponse(WireModel):
    """An invoice the change issued (a subscription's usage invoiced as it joins a group, or a
    child's first charges as it leaves one)."""

    id: str
    action: Literal["created"]
    status: Literal["issued"]
    invoice: InvoiceResponse


class ChangedResourcesResponse(WireModel):
    subscriptions: list[ChangedSubscriptionResponse]
    invoices: list[ChangedInvoiceResponse]


class SubscriptionModifyResponse(WireModel):
    """The subscription after the change; ``changed_resources`` for hierarchy changes
    (``inheritance``, ``grouped_invoicing``)."""

    subscription: SubscriptionResponse
    changed_resources: ChangedResourcesResponse | None = None
