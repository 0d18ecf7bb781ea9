"""The answers of a v1 plan change (:mod:`billingkit.services.plan_change_replace`), in the
reference's wire shapes: ``SubscriptionChangeExecuteResponse`` (:class:`PlanChangeResult`) and
``SubscriptionChangePreviewResponse`` (:class:`PlanChangePreview`). Money is a ``Decimal`` in the
subscription's currency, rounded; ``to_dict`` writes it as decimal strings and instants in ISO 8601
UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from billingkit.domain.catalog import Plan
from billingkit.domain.catalog.prices import BillingCadence
from billingkit.domain.invoices import Invoice
from billingkit.domain.money import ZERO
from billingkit.domain.periods import BillingPeriod, Period
from billingkit.domain.resources import iso
from billingkit.domain.subscription_changes import SubscriptionChangeType
from billingkit.domain.subscription_schedules import SubscriptionSchedule
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import WalletTransaction
from billingkit.services.plan_change_in_place_results import plan_summary

__all__ = ["NewBillingCycle", "PlanChangePreview", "PlanChangeResult", "ProrationFigures", "summary"]

_DAY = timedelta(days=1)


def summary(sub: Subscription) -> dict[str, Any]:
    """``sub`` as the reference's ``SubscriptionSummary``; a cancelled one's ``archived_at`` is
    when it was cancelled (it stays readable: see docs/decisions.md)."""
    return {
        "id": sub.id,
        "plan_id": sub.plan_id,
        "status": sub.subscription_status.value,
        "current_period_start": iso(sub.current_period_start),
        "current_period_end": iso(sub.current_period_end),
        "billing_anchor": iso(sub.billing_anchor),
        "created_at": iso(sub.created_at),
        "archived_at": iso(sub.cancelled_at),
    }


@dataclass(frozen=True, slots=True)
class ProrationFigures:
    """The money of a change (the reference's ``ProrationDetails``): ``credit_amount`` the old
    subscription's unused ADVANCE time at ``proration_date`` (0 with ``proration_behavior: none``
    or a trialing subscription), ``charge_amount`` the new subscription's first-period ADVANCE
    fees, ``net_amount = charge - credit`` (before taxes and prepaid credits). ``period`` is the
    old subscription's current period; ``days_used`` and ``days_remaining`` are whole days of it
    before and after ``proration_date``."""

    currency: str
    proration_date: datetime
    period: Period
    credit_amount: Decimal = ZERO
    charge_amount: Decimal = ZERO
    credit_description: str = ""
    charge_description: str = ""

    @classmethod
    def of(
        cls, old: Subscription, effective: datetime, *, credit: Decimal = ZERO, charge: Decimal = ZERO
    ) -> ProrationFigures:
        """The figures of replacing ``old`` at ``effective``, over its current period."""
        return cls(
            currency=old.currency,
            proration_date=effective,
            period=Period(old.current_period_start, old.current_period_end),
            credit_amount=credit,
            charge_amount=charge,
            credit_description=f"Unused time on plan {old.plan_id}" if credit else "",
            charge_description="First period of the new plan" if charge else "",
        )

    @property
    def net_amount(self) -> Decimal:
        return self.charge_amount - self.credit_amount

    @property
    def days_used(self) -> int:
        return max(self.proration_date - self.period.start, timedelta(0)) // _DAY

    @property
    def days_remaining(self) -> int:
        return max(self.period.end - self.proration_date, timedelta(0)) // _DAY

    def to_dict(self) -> dict[str, Any]:
        return {
            "credit_amount": str(self.credit_amount),
            "credit_description": self.credit_description,
            "charge_amount": str(self.charge_amount),
            "charge_description": self.charge_description,
            "net_amount": str(self.net_amount),
            "proration_date": iso(self.proration_date),
            "current_period_start": iso(self.period.start),
            "current_period_end": iso(self.period.end),
            "days_used": self.days_used,
            "days_remaining": self.days_remaining,
            "currency": self.currency,
        }


@dataclass(frozen=True, slots=True)
class NewBillingCycle:
    """The new subscription's first period and schedule (the reference's ``BillingCycleInfo``)."""

    period: Period
    billing_anchor: datetime
    billing_period: BillingPeriod
    billing_period_count: int
    billing_cadence: BillingCadence = BillingCadence.RECURRING

    def to_dict(self) -> dict[str, Any]:
        return {
            "period_start": iso(self.period.start),
            "period_end": iso(self.period.end),
            "billing_anchor": iso(self.billing_anchor),
            "billing_cadence": self.billing_cadence.value,
            "billing_period": self.billing_period.value,
            "billing_period_count": self.billing_period_count,
        }


def _invoice_preview(invoice: Invoice) -> dict[str, Any]:
    """``invoice`` (built, not stored) as the reference's ``InvoicePreview``."""
    lines = []
    for line in invoice.line_items:
        unit = line.amount / line.quantity if line.quantity else line.amount
        lines.append(
            {
                "description": line.display_name,
                "amount": str(line.amount),
                "quantity": str(line.quantity),
                "unit_price": str(unit.quantize(Decimal("0.01")) if line.quantity else unit),
                "period_start": iso(line.period_start),
                "period_end": iso(line.period_end),
                "is_proration": "proration" in line.metadata,
            }
        )
    return {
        "line_items": lines,
        "subtotal": str(invoice.subtotal),
        "tax_amount": str(invoice.total_tax),
        "total": str(invoice.total),
        "currency": invoice.currency,
        "due_date": iso(invoice.due_date),
    }


@dataclass(frozen=True, slots=True)
class PlanChangePreview:
    """What a plan change would do, computed and not stored. ``invoice``: the new subscription's
    opening invoice as it would be issued (``None`` when nothing would be invoiced now, e.g. a
    credit above the charges, or an end-of-period change whose opening invoice is computed at the
    boundary); ``new_cycle``: the new subscription's first period."""

    subscription_id: str
    current_plan: Plan | None
    target_plan: Plan
    change_type: SubscriptionChangeType
    proration: ProrationFigures
    effective_date: datetime
    new_cycle: NewBillingCycle
    invoice: Invoice | None = None
    wallet_credit: Decimal = ZERO
    warnings: tuple[str, ...] = ()
    metadata: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "subscription_id": self.subscription_id,
            "current_plan": None if self.current_plan is None else plan_summary(self.current_plan),
            "target_plan": plan_summary(self.target_plan),
            "change_type": self.change_type.value,
            "proration_details": self.proration.to_dict(),
            "next_invoice_preview": None if self.invoice is None else _invoice_preview(self.invoice),
            "new_billing_cycle": self.new_cycle.to_dict(),
            "effective_date": iso(self.effective_date),
            "warnings": list(self.warnings),
            "metadata": self.metadata or {},
        }


@dataclass(frozen=True, slots=True)
class PlanChangeResult:
    """What a plan change did: ``old_subscription`` (cancelled, or unchanged while the change is
    scheduled), ``new_subscription`` (``None`` while scheduled), the new subscription's opening
    ``invoice`` (``SUBSCRIPTION_UPDATE`` when the old unused time was netted on it), the wallet
    ``transaction`` holding a credit above the opening charges, and the ``schedule`` of an
    end-of-period change."""

    old_subscription: Subscription
    change_type: SubscriptionChangeType
    effective_date: datetime
    proration: ProrationFigures
    new_subscription: Subscription | None = None
    invoice: Invoice | None = None
    transaction: WalletTransaction | None = None
    schedule: SubscriptionSchedule | None = None
    metadata: dict[str, str] | None = None

    @property
    def is_scheduled(self) -> bool:
        return self.schedule is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "old_subscription": summary(self.old_subscription),
            "new_subscription": None if self.new_subscription is None else summary(self.new_subscription),
            "change_type": self.change_type.value,
            "effective_date": iso(self.effective_date),
            "invoice": None if self.invoice is None else self.invoice.to_dict(),
            "proration_applied": self.proration.to_dict(),
            "is_scheduled": self.is_scheduled,
            "schedule_id": None if self.schedule is None else self.schedule.id,
            "scheduled_at": None if self.schedule is None else iso(self.schedule.scheduled_at),
            "metadata": self.metadata or {},
        }
