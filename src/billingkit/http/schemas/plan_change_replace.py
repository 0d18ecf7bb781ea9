"""Answers of the v1 plan change routes (``POST /v1/subscriptions/{id}/change/preview`` and
``/change/execute``), named as the reference names them: ``SubscriptionChangePreviewResponse`` and
``SubscriptionChangeExecuteResponse``."""

from __future__ import annotations

from billingkit.domain.catalog.prices import BillingCadence
from billingkit.domain.periods import BillingPeriod
from billingkit.domain.subscription_changes import SubscriptionChangeType
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel
from billingkit.http.schemas.billing import InvoiceResponse
from billingkit.http.schemas.plan_change_in_place import PlanSummary

__all__ = [
    "BillingCycleInfo",
    "InvoiceLineItemPreview",
    "InvoicePreview",
    "ProrationDetails",
    "SubscriptionChangeExecuteResponse",
    "SubscriptionChangePreviewResponse",
    "SubscriptionSummary",
]


class SubscriptionSummary(WireModel):
    """A subscription in brief; ``archived_at``: when a replaced subscription was cancelled."""

    id: str
    plan_id: str
    status: SubscriptionStatus
    current_period_start: Timestamp
    current_period_end: Timestamp
    billing_anchor: Timestamp
    created_at: Timestamp
    archived_at: Timestamp | None


class ProrationDetails(WireModel):
    """The money of the change: the old subscription's unused ADVANCE time (``credit_amount``),
    the new subscription's first-period ADVANCE fees (``charge_amount``), ``net_amount`` = charge
    - credit (before taxes), over the old subscription's current period."""

    credit_amount: DecimalString
    credit_description: str
    charge_amount: DecimalString
    charge_description: str
    net_amount: DecimalString
    proration_date: Timestamp
    current_period_start: Timestamp
    current_period_end: Timestamp
    days_used: int
    days_remaining: int
    currency: str


class InvoiceLineItemPreview(WireModel):
    description: str
    amount: DecimalString
    quantity: DecimalString
    unit_price: DecimalString
    period_start: Timestamp
    period_end: Timestamp
    is_proration: bool


class InvoicePreview(WireModel):
    """The new subscription's opening invoice as the change would issue it."""

    line_items: list[InvoiceLineItemPreview]
    subtotal: DecimalString
    tax_amount: DecimalString
    total: DecimalString
    currency: str
    due_date: Timestamp | None


class BillingCycleInfo(WireModel):
    """The new subscription's first period and schedule."""

    period_start: Timestamp
    period_end: Timestamp
    billing_anchor: Timestamp
    billing_cadence: BillingCadence
    billing_period: BillingPeriod
    billing_period_count: int


class SubscriptionChangePreviewResponse(WireModel):
    """What the change would do, written nowhere. ``next_invoice_preview`` is null when nothing
    would be invoiced now (a credit above the charges goes to the wallet; an end-of-period
    change's opening invoice is computed at the boundary)."""

    subscription_id: str
    current_plan: PlanSummary | None
    target_plan: PlanSummary
    change_type: SubscriptionChangeType
    proration_details: ProrationDetails
    next_invoice_preview: InvoicePreview | None
    new_billing_cycle: BillingCycleInfo
    effective_date: Timestamp
    warnings: list[str]
    metadata: dict[str, str]


class SubscriptionChangeExecuteResponse(WireModel):
    """What the change did: the old subscription (cancelled, or unchanged while scheduled), the
    new one (null while scheduled), the new opening ``invoice``, the figures applied, and the
    schedule of an ``end_of_period`` change (``is_scheduled``, ``schedule_id``, ``scheduled_at``)."""

    old_subscription: SubscriptionSummary
    new_subscription: SubscriptionSummary | None
    change_type: SubscriptionChangeType
    effective_date: Timestamp
    invoice: InvoiceResponse | None
    proration_applied: ProrationDetails
    is_scheduled: bool
    schedule_id: str | None
    scheduled_at: Timestamp | None
    metadata: dict[str, str]
