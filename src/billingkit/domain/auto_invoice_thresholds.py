"""Auto-invoice thresholds: a mid-period invoice once a subscription's usage charges reach an amount.

A subscription created with ``auto_invoice_threshold`` (a decimal in its currency, > 0) is looked at
by the billing run every check interval (``Settings.auto_invoice_check_interval``, 5 minutes by
default) while it is ``active``. Each look prices the usage of its current period so far,
``[current_period_start, now)``, exactly as the period-end invoice would price it; when the usage
charges (the invoice subtotal, before discounts, taxes and credits) reach the threshold, that window
is invoiced with billing reason ``AUTO_INVOICE_THRESHOLD`` and ``current_period_start`` moves to
``now``. The period end stays, so the period-end invoice bills only the rest.

Example (0.10 a call, threshold 50.00, monthly from 1 May): 600 calls by 10 May 12:00 cost 60.00 ≥
50.00 → invoice [1 May, 10 May 12:00) of 60.00, the current period becomes [10 May 12:00, 1 Jun);
150 more calls by 1 Jun → the period-end invoice [10 May 12:00, 1 Jun) bills 15.00.

The rules here are pure; :mod:`billingkit.services.auto_invoice_thresholds` reads the store, prices
the windows and writes the invoices.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import Period
from billingkit.domain.subscriptions import (
    ProrationBehavior,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.domain.validation import DecimalText
from billingkit.errors import ValidationError

__all__ = [
    "DEFAULT_CHECK_INTERVAL",
    "FIELD",
    "AutoInvoiceThreshold",
    "check_threshold_terms",
    "cut_fields",
    "next_check_at",
    "reached",
    "threshold_window",
    "usage_lines",
    "with_next_check",
]

FIELD = "auto_invoice_threshold"
#: The request field: a decimal string above 0 in the subscription currency (``"50.00"``).
AutoInvoiceThreshold = Annotated[DecimalText, Field(gt=0)]
#: How often the billing run prices a threshold subscription's usage (the reference: every 5 minutes).
DEFAULT_CHECK_INTERVAL = timedelta(minutes=5)


def check_threshold_terms(
    *,
    threshold: Decimal,
    subscription_type: SubscriptionType,
    plan_lines: Iterable[SubscriptionLineItem],
    commitment: bool,
    proration_behavior: ProrationBehavior,
) -> None:
    """Refuse a threshold the subscription cannot honour (a ``ValidationError`` on
    ``auto_invoice_threshold`` unless said otherwise):

    * ``threshold`` must be above 0;
    * standalone subscriptions only (a parent's or child's usage is billed elsewhere);
    * every plan price the subscription bills must be ``USAGE`` (a threshold invoice bills usage
      only; a fixed charge has no share "so far");
    * no commitment (``commitment``: a subscription or line item commitment): a minimum spend is
      per billing period, and each threshold invoice would close a period of its own;
    * ``proration_behavior`` ``create_prorations`` is refused (field ``proration_behavior``): a
      period whose start moved would be prorated as a first stub.
    """
    if threshold <= 0:
        raise ValidationError("auto_invoice_threshold must be greater than 0", field=FIELD)
    if subscription_type is not SubscriptionType.STANDALONE:
        raise ValidationError(
            f"auto_invoice_threshold is for standalone subscriptions; this one is {subscription_type.value}",
            field=FIELD,
        )
    fixed = sorted({line.price_id for line in plan_lines if line.price_type is not PriceType.USAGE})
    if fixed:
        raise ValidationError(
            "auto_invoice_threshold needs every plan price to be usage-based; "
            f"{', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} not",
            field=FIELD,
        )
    if commitment:
        raise ValidationError(
            "auto_invoice_threshold cannot be combined with a commitment: a commitment is a minimum "
            "per billing period, and each threshold invoice closes a period early",
            field=FIELD,
        )
    if proration_behavior is ProrationBehavior.CREATE_PRORATIONS:
        raise ValidationError(
            "auto_invoice_threshold cannot be combined with create_prorations: a threshold invoice "
            "moves the period start, which proration would take for a first stub",
            field="proration_behavior",
        )


def next_check_at(sub: Subscription, now: datetime, interval: timedelta) -> datetime | None:
    """When the billing run must next look at ``sub``: its ``next_run_at``, or sooner, one
    ``interval`` after ``now`` (or after its current period starts, when that is later), for an
    ``active`` subscription with a threshold.

    Example: active [1 May, 1 Jun), threshold set, now 10 May 12:00, interval 5 min → 12:05;
    without a threshold (or not active) → its ``next_run_at`` unchanged.
    """
    if sub.auto_invoice_threshold is None or sub.subscription_status is not SubscriptionStatus.ACTIVE:
        return sub.next_run_at
    check = max(now, sub.current_period_start) + interval
    return check if sub.next_run_at is None else min(sub.next_run_at, check)


def with_next_check(sub: Subscription, now: datetime, interval: timedelta) -> Subscription:
    """``sub`` with ``next_run_at`` = :func:`next_check_at` (``sub`` itself when unchanged)."""
    due = next_check_at(sub, now, interval)
    return sub if due == sub.next_run_at else sub.model_copy(update={"next_run_at": due})


def threshold_window(sub: Subscription, now: datetime) -> Period | None:
    """The window a threshold invoice at ``now`` would bill: ``[current_period_start, now)``;
    ``None`` when there is nothing to check (no threshold, not ``active``, the period has not
    started, or it has ended: the period-end invoice bills it)."""
    if sub.auto_invoice_threshold is None or sub.subscription_status is not SubscriptionStatus.ACTIVE:
        return None
    if not sub.current_period_start < now < sub.current_period_end:
        return None
    return Period(sub.current_period_start, now)


def usage_lines(sub: Subscription) -> Subscription:
    """``sub`` as a threshold invoice bills it: its ``USAGE`` line items only (fixed lines a later
    change added keep their own place on the ordinary invoices)."""
    lines = tuple(line for line in sub.line_items if line.price_type is PriceType.USAGE)
    return sub if len(lines) == len(sub.line_items) else sub.model_copy(update={"line_items": lines})


def reached(usage_charges: Decimal, threshold: Decimal | None) -> bool:
    """Whether ``usage_charges`` (the window's subtotal) reach ``threshold``: 50.00 reaches 50.00."""
    return threshold is not None and usage_charges >= threshold


def cut_fields(*, at: datetime, billing_sequence: int) -> dict[str, Any]:
    """The subscription fields after a threshold invoice issued at ``at``: the current period
    starts there (its end stays) and the invoice took the next ``billing_sequence``."""
    return {"current_period_start": at, "billing_sequence": billing_sequence}
