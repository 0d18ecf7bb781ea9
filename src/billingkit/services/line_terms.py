"""What a subscription line's core input needs beyond its price and usage: the window a line is
charged for, its first-stub proration coefficient (``create_prorations``) and its commitment terms
(the core :class:`~billingkit.domain.commitments.LineCommitment`, a cumulative window's prior usage,
a windowed commitment's bucket count, a time-bucket commitment's timestamped usage buckets).

Used by :mod:`billingkit.services.invoicing` when it builds each line's
:class:`~billingkit.domain.invoice_lines.LineItemInput`.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from billingkit.domain.commitments import UsageBucket
from billingkit.domain.invoice_lines import ARREAR
from billingkit.domain.money import ZERO
from billingkit.domain.periods import BillingPeriod, Period
from billingkit.domain.proration import stub_coefficient, stub_reference_period
from billingkit.domain.subscriptions import ProrationBehavior, SubscriptionLineItem
from billingkit.domain.usage import UsageResult
from billingkit.domain.usage_buckets import bucket_count
from billingkit.services.subscription_commitments import commitment_window, line_commitment

if TYPE_CHECKING:  # the invoicing module imports this one
    from billingkit.services.invoicing import Charge, Snapshot

__all__ = [
    "arrear_period",
    "arrear_window",
    "charged_window",
    "commitment_terms",
    "has_arrear",
    "prior_committed_usage",
    "stub_proration",
]


def arrear_window(line: SubscriptionLineItem, period: Period) -> tuple[datetime, datetime] | None:
    """``period`` clipped to the line's own ``[start_date, end_date)``; None when they do not meet."""
    start = period.start if line.start_date is None or line.start_date < period.start else line.start_date
    end = period.end if line.end_date is None or line.end_date > period.end else line.end_date
    return (start, end) if start < end else None


def has_arrear(charge: Charge) -> bool:
    """Whether ``charge`` bills ARREAR charges (period end invoices, cancellations and previews)."""
    return charge.reference_point in ("period_end", "cancel", "preview")


def arrear_period(charge: Charge) -> Period:
    """The part of ``charge``'s period its ARREAR charges are for: all of it, or up to the
    cancellation of a ``cancel`` charge."""
    if charge.cancel_at is None or charge.cancel_at >= charge.period.end:
        return charge.period
    return Period(charge.period.start, charge.cancel_at)


def charged_window(line: SubscriptionLineItem, charge: Charge) -> Period | None:
    """The billing period ``line`` is charged for on ``charge`` (by its cadence), if any."""
    if line.invoice_cadence.value == ARREAR:
        return charge.period if has_arrear(charge) else None
    return charge.period if charge.reference_point == "period_start" else charge.next_period


def stub_proration(line: SubscriptionLineItem, charge: Charge) -> Decimal | None:
    """The proration coefficient of a FIXED line charged for a first stub with
    ``create_prorations``: the seconds it covers over its reference period (None otherwise)."""
    sub = charge.subscription
    if sub.proration_behavior is not ProrationBehavior.CREATE_PRORATIONS:
        return None
    window = charged_window(line, charge)
    if window is None or (sub.trial_end is not None and window.start < sub.trial_end):
        return None
    reference = stub_reference_period(sub.schedule(), window)
    if reference is None:
        return None
    if line.invoice_cadence.value == ARREAR:  # a cancellation charges the stub up to its instant
        window = arrear_period(charge)
    clipped = arrear_window(line, window)
    return None if clipped is None else stub_coefficient(Period(*clipped), reference)


def prior_committed_usage(
    snapshot: Snapshot, charge: Charge, duration: BillingPeriod, line_id: str | None
) -> tuple[Decimal, bool]:
    """(usage already billed in the cumulative window before ``charge``'s period, whether the
    charge's period end reaches the window's end), for one line or, with ``line_id`` None, all."""
    sub = charge.subscription
    window = commitment_window(sub, duration, charge.period.start)
    prior = sum(
        (
            used.usage
            for used in snapshot.committed_usage.get(sub.id, ())
            if (line_id is None or used.line_item_id == line_id)
            and used.period_start >= window.start
            and used.period_end <= charge.period.start
        ),
        ZERO,
    )
    return prior, charge.period.end >= window.end


def commitment_terms(
    line: SubscriptionLineItem, charge: Charge, snapshot: Snapshot, usage: UsageResult | None
) -> dict[str, Any]:
    """The commitment arguments of a committed USAGE line's core input (empty without one)."""
    commitment = line_commitment(line, charge.subscription)
    if commitment is None:
        return {}
    terms: dict[str, Any] = {"commitment": commitment}
    if commitment.duration_periods > 1 and line.commitment_duration is not None:
        prior, closes = prior_committed_usage(snapshot, charge, line.commitment_duration, line.id)
        terms["commitment_prior_usage"] = prior
        terms["commitment_closes_window"] = closes
    meter = snapshot.meter_spec(line.meter_id) if line.meter_id else None
    if commitment.windowed and meter is not None and meter.bucket_size is not None:
        window = arrear_window(line, arrear_period(charge))
        if window is not None:
            terms["window_count"] = bucket_count(window[0], window[1], meter.bucket_size)
    if commitment.time_buckets:
        buckets = usage.buckets if usage is not None else ()
        terms["usage_buckets"] = tuple(UsageBucket(b.start, b.value) for b in buckets)
    return terms
