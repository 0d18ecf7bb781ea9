"""Answers of the plan change routes in place (``POST /v1/subscriptions/{id}/change/v2/preview``
and ``/change/v2/execute``): the reference's ``SubscriptionChangeV2Response`` and its parts,
named as the reference names them."""

from __future__ import annotations

from enum import StrEnum

from billingkit.domain.subscription_changes import SubscriptionChangeType
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel
from billingkit.http.schemas.billing import InvoiceResponse, SubscriptionResponse
from billingkit.http.schemas.wallets import WalletTransactionResponse
from billingkit.services.plan_change_answers import EntityChangeBehaviour, LineAction

__all__ = [
    "ChangedInvoice",
    "ChangedLineItem",
    "ChangedResources",
    "ChangedSubscription",
    "EntityChangeResult",
    "PlanSummary",
    "SubscriptionChangeV2Response",
]


class ChangedInvoiceAction(StrEnum):
    CREATED = "created"
    WALLET_CREDIT = "wallet_credit"


class ChangedInvoiceStatus(StrEnum):
    PREVIEW = "preview"
    ISSUED = "issued"


class PlanSummary(WireModel):
    """A plan named in a change: its id, name, description and lookup key."""

    description: str | None
    id: str
    lookup_key: str | None
    name: str


class ChangedInvoice(WireModel):
    """The money of the change: ``created`` with the ``invoice`` of a net charge, or
    ``wallet_credit`` with the ``wallet_transaction`` of a net credit; ``status`` ``issued``
    (execute) or ``preview`` (nothing stored)."""

    action: ChangedInvoiceAction
    id: str
    status: ChangedInvoiceStatus
    invoice: InvoiceResponse | None = None
    wallet_transaction: WalletTransactionResponse | None = None


class ChangedLineItem(WireModel):
    """A line item the change ``created``, ``updated`` (carried to the new plan's price) or
    ``ended``, as the change leaves it."""

    change_action: LineAction
    id: str
    price_id: str
    quantity: DecimalString
    start_date: Timestamp | None
    end_date: Timestamp | None


class ChangedSubscription(WireModel):
    """The subscription the change ``updated`` (in place: always the same one)."""

    action: str
    id: str
    status: SubscriptionStatus
    current_period_end: Timestamp
    trial_end: Timestamp | None


class ChangedResources(WireModel):
    invoices: list[ChangedInvoice]
    line_items: list[ChangedLineItem]
    subscriptions: list[ChangedSubscription]


class EntityChangeResult(WireModel):
    """What the change did to an add-on association (``entity_id``; ``reference_id`` is its add-on)."""

    behaviour: EntityChangeBehaviour
    entity_id: str
    entity_type: str
    reference_id: str


class SubscriptionChangeV2Response(WireModel):
    """A plan change in place: ``change_type``, what it changed, the subscription after it (as it
    is now when the change is scheduled), the plans, and for ``end_of_period`` the schedule."""

    change_type: SubscriptionChangeType
    changed_resources: ChangedResources
    effective_at: Timestamp
    entity_changes: list[EntityChangeResult]
    from_plan: PlanSummary
    is_scheduled: bool
    metadata: dict[str, str]
    schedule_id: str | None
    scheduled_at: Timestamp | None
    subscription: SubscriptionResponse
    to_plan: PlanSummary
    warnings: list[str]
