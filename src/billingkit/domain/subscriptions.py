"""Subscriptions: a customer on a plan, billed period after period.

A :class:`Subscription` holds its line items (one per plan price that matches its currency and
billing period), its billing schedule (anchor, period, count, cycle, time zone) and where it stands:
``current_period_start``/``current_period_end`` and ``subscription_status``.

Statuses used by billing: ``draft`` (stored, not billed until activated), ``trialing`` (the current
period is the trial window; nothing is billed until it ends), ``active`` (billed at every period
end), ``cancelled`` (ended; reaching ``end_date`` ends a subscription).

How a subscription moves between statuses, trials and periods is in
:mod:`billingkit.domain.subscription_lifecycle`; what falls due at an instant in
:mod:`billingkit.domain.renewals`.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from billingkit.domain.catalog.prices import BillingCadence, PriceType
from billingkit.domain.display import Displayed
from billingkit.domain.periods import BillingCycle, BillingPeriod, BillingSchedule, InvoiceCadence
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime

__all__ = [
    "CollectionMethod",
    "PauseStatus",
    "PaymentBehavior",
    "PaymentTerms",
    "ProrationBehavior",
    "Subscription",
    "SubscriptionLineItem",
    "SubscriptionStatus",
    "SubscriptionType",
]


class SubscriptionStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    INCOMPLETE = "incomplete"
    TRIALING = "trialing"
    DRAFT = "draft"


class SubscriptionType(StrEnum):
    STANDALONE = "standalone"
    DELEGATED_INVOICING = "delegated_invoicing"
    PARENT = "parent"
    INHERITED = "inherited"
    GROUPED_INVOICING = "grouped_invoicing"


class PauseStatus(StrEnum):
    NONE = "none"
    ACTIVE = "active"
    SCHEDULED = "scheduled"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class CollectionMethod(StrEnum):
    CHARGE_AUTOMATICALLY = "charge_automatically"
    SEND_INVOICE = "send_invoice"


class PaymentBehavior(StrEnum):
    ALLOW_INCOMPLETE = "allow_incomplete"
    DEFAULT_INCOMPLETE = "default_incomplete"
    ERROR_IF_INCOMPLETE = "error_if_incomplete"
    DEFAULT_ACTIVE = "default_active"


class ProrationBehavior(StrEnum):
    CREATE_PRORATIONS = "create_prorations"
    NONE = "none"


class PaymentTerms(StrEnum):
    """Days after the period end an invoice is due: ``30 NET`` -> 30 days."""

    NET_15 = "15 NET"
    NET_30 = "30 NET"
    NET_45 = "45 NET"
    NET_60 = "60 NET"
    NET_75 = "75 NET"
    NET_90 = "90 NET"

    @property
    def days(self) -> int:
        return int(self.value.split()[0])


# Bookkeeping of billingkit's own, kept out of the wire form (see ``Subscription``).
_INTERNAL = frozenset({"billing_sequence", "renewal_notice_for", "next_run_at", "billing_anchor_requested"})


class SubscriptionLineItem(BaseModel):
    """One charge of a subscription, copied from a plan price when the subscription was created.

    ``quantity`` is the billed quantity of a FIXED line (the price's ``min_quantity``, else 1) and
    0 for USAGE lines, whose quantity comes from the meter at each period end.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    subscription_id: str
    customer_id: str
    entity_type: str = "plan"
    entity_id: str
    plan_display_name: str | None = None
    display_name: str | None = None
    price_id: str
    price_type: PriceType
    price_unit: str | None = None
    price_unit_id: str | None = None
    meter_id: str | None = None
    meter_display_name: str | None = None
    quantity: Decimal
    currency: str
    billing_period: BillingPeriod
    billing_period_count: int = 1
    invoice_cadence: InvoiceCadence
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    subscription_phase_id: str | None = None
    addon_association_id: str | None = None
    metadata: dict[str, str] = {}
    commitment_amount: Decimal | None = None
    commitment_quantity: Decimal | None = None
    commitment_type: str | None = None
    commitment_duration: BillingPeriod | None = None
    commitment_overage_factor: Decimal | None = None
    commitment_true_up_enabled: bool = False
    commitment_windowed: bool = False
    commitment_time_buckets: tuple[dict[str, Any], ...] = ()


class Subscription(Displayed, EnvironmentResource):
    """A customer's subscription to a plan (the spec's Subscription, stored).

    Besides the spec's fields it keeps four of its own, never shown on the wire:
    ``billing_sequence`` (invoices issued so far), ``renewal_notice_for`` (the period end whose
    ``subscription.renewal.due`` was sent), ``next_run_at`` (when the billing run must next look at
    it; ``None`` for drafts and ended subscriptions) and ``billing_anchor_requested`` (the creator
    gave ``billing_anchor``, so activating a draft at a new start keeps it; anniversary cycle only).
    """

    lookup_key: str | None = None
    plan_id: str
    customer_id: str
    invoicing_customer_id: str | None = None
    parent_subscription_id: str | None = None
    gateway_payment_method_id: str | None = None
    subscription_status: SubscriptionStatus
    subscription_type: SubscriptionType = SubscriptionType.STANDALONE
    pause_status: PauseStatus = PauseStatus.NONE
    active_pause_id: str | None = None
    billing_cadence: BillingCadence = BillingCadence.RECURRING
    billing_cycle: BillingCycle = BillingCycle.ANNIVERSARY
    billing_period: BillingPeriod
    billing_period_count: int = 1
    billing_anchor: UtcDatetime
    currency: str
    timezone: str = "UTC"
    start_date: UtcDatetime
    end_date: UtcDatetime | None = None
    trial_start: UtcDatetime | None = None
    trial_end: UtcDatetime | None = None
    current_period_start: UtcDatetime
    current_period_end: UtcDatetime
    cancel_at: UtcDatetime | None = None
    cancelled_at: UtcDatetime | None = None
    cancel_at_period_end: bool = False
    collection_method: CollectionMethod = CollectionMethod.CHARGE_AUTOMATICALLY
    payment_behavior: PaymentBehavior = PaymentBehavior.DEFAULT_ACTIVE
    payment_terms: PaymentTerms | None = None
    proration_behavior: ProrationBehavior = ProrationBehavior.NONE
    commitment_amount: Decimal | None = None
    commitment_duration: BillingPeriod | None = None
    overage_factor: Decimal | None = None
    auto_invoice_threshold: Decimal | None = None
    enable_true_up: bool = False
    metadata: dict[str, str] = {}
    line_items: tuple[SubscriptionLineItem, ...] = ()
    synced_price_sequence: int = 0
    version: int = 1
    billing_sequence: int = 0
    renewal_notice_for: UtcDatetime | None = None
    next_run_at: UtcDatetime | None = None
    billing_anchor_requested: bool = False

    def __repr__(self) -> str:
        return (
            f"<Subscription {self.id} {self.subscription_status.value} {self.currency} "
            f"{self.billing_period.value} {self.current_period_start:%Y-%m-%d}.."
            f"{self.current_period_end:%Y-%m-%d}>"
        )

    def to_dict(self, *, line_items: bool = True) -> dict[str, Any]:
        """The wire form (the spec's Subscription): money as decimal strings, instants in ISO 8601
        UTC; ``line_items`` with the subscription's common fields when asked for. The four
        internal fields (see the class doc) are left out."""
        data = self.model_dump(mode="json", exclude=set(_INTERNAL))
        if not line_items:
            del data["line_items"]
            return data
        common = {
            **self.common_fields(),
        }
        data["line_items"] = [{**line, **common} for line in data["line_items"]]
        return data

    @property
    def billed_customer_id(self) -> str:
        """The customer its invoices are issued to: ``invoicing_customer_id`` when set (delegated
        invoicing), else its own customer."""
        return self.invoicing_customer_id or self.customer_id

    def schedule(self) -> BillingSchedule:
        """The subscription's billing boundaries (anchor, period, count, cycle, time zone)."""
        return BillingSchedule(
            anchor=self.billing_anchor,
            period=self.billing_period,
            count=self.billing_period_count,
            cycle=self.billing_cycle,
            timezone=self.timezone,
        )
