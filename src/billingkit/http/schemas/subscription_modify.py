"""Answers of ``POST /v1/subscriptions/{id}/modify/execute`` and ``/modify/preview``: the
subscription after the change (or as it would be) and the other resources it changed (the
reference's ``SubscriptionModifyResponse``)."""

from __future__ import annotations

from typing import Literal

from billingkit import SubscriptionStatus
from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel
from billingkit.http.schemas.billing import InvoiceResponse, SubscriptionResponse
from billingkit.http.schemas.checkout import CheckoutSessionResponse
from billingkit.http.schemas.wallets import WalletTransactionResponse

__all__ = [
    "ChangedInvoiceResponse",
    "ChangedLineItemResponse",
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
    """Money the change moved: an invoice it issued (``action: created``, with ``invoice``) or a
    wallet credit (``action: wallet_credit``, with ``wallet_transaction``); ``status: preview``
    in a preview's answer, else ``issued``."""

    id: str
    action: Literal["created", "wallet_credit"]
    status: Literal["preview", "issued"]
    invoice: InvoiceResponse | None = None
    wallet_transaction: WalletTransactionResponse | None = None


class ChangedLineItemResponse(WireModel):
    """A line item the change ``created`` (a replacement), ``updated`` in place or ``ended``."""

    id: str
    change_action: Literal["created", "updated", "ended"]
    price_id: str
    quantity: DecimalString
    start_date: Timestamp | None
    end_date: Timestamp | None


class ChangedResourcesResponse(WireModel):
    subscriptions: list[ChangedSubscriptionResponse]
    invoices: list[ChangedInvoiceResponse]
    line_items: list[ChangedLineItemResponse] | None = None


class SubscriptionModifyResponse(WireModel):
    """The subscription after the change; ``changed_resources`` for every type but ``coupon``;
    ``checkout_session`` for a quantity change made with ``checkout`` (then nothing changed yet)."""

    subscription: SubscriptionResponse
    changed_resources: ChangedResourcesResponse | None = None
    checkout_session: CheckoutSessionResponse | None = None
