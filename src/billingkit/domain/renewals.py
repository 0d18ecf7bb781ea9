"""What falls due on a subscription at a given instant, and where it stands afterwards.

:func:`plan_due` walks a subscription forward to ``now`` without reading anything else, and returns
the steps a billing run must carry out, in order:

* ``renewal_notice``: an active subscription's current period ends within ``renewal_notice``
  (sent once per period, and only for a period that has not ended yet);
* ``trial_end``: the trial window is over; the subscription becomes ``active``, its anchor moves to
  the trial end, and the first paid period ``[trial_end, next boundary)`` is invoiced in advance
  (billing reason ``SUBSCRIPTION_TRIAL_END``);
* ``period_end``: the current period is over; one invoice with its ARREAR charges and the next
  period's ADVANCE charges (``SUBSCRIPTION_CYCLE``), then the next period becomes current. A run that
  finds several elapsed periods gets one step per period;
* ``end``: the subscription reached its ``end_date`` (after billing the last period) and is
  ``cancelled``.

Example: monthly from 31 Jan, ``now`` = 1 Apr → period_end [31 Jan, 29 Feb) and period_end
[29 Feb, 31 Mar); the current period becomes [31 Mar, 30 Apr).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from billingkit.domain.invoices import BillingReason
from billingkit.domain.periods import MAX_PERIODS, BillingCycle, BillingSchedule, Period, calendar_anchor
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.errors import ValidationError

__all__ = ["DuePlan", "DueStep", "StepKind", "next_run_at", "plan_due"]


class StepKind:
    RENEWAL_NOTICE = "renewal_notice"
    TRIAL_END = "trial_end"
    PERIOD_END = "period_end"
    END = "end"


@dataclass(frozen=True, slots=True)
class DueStep:
    """One thing a billing run does. ``period`` is the invoice period (the closing period of a
    ``period_end``, the first paid period of a ``trial_end``, the current period of a
    ``renewal_notice``); ``next_period`` is the period whose ADVANCE charges a ``period_end``
    invoice carries (``None`` when the subscription ends)."""

    kind: str
    at: datetime
    period: Period | None = None
    next_period: Period | None = None

    @property
    def billing_reason(self) -> BillingReason | None:
        if self.kind == StepKind.PERIOD_END:
            return BillingReason.SUBSCRIPTION_CYCLE
        if self.kind == StepKind.TRIAL_END:
            return BillingReason.SUBSCRIPTION_TRIAL_END
        return None

    @property
    def reference_point(self) -> str:
        """The invoice assembly reference point (see :mod:`billingkit.domain.invoicing`)."""
        return "period_end" if self.kind == StepKind.PERIOD_END else "period_start"


@dataclass(frozen=True, slots=True)
class DuePlan:
    """The steps due, and the subscription fields that change once they are carried out."""

    steps: tuple[DueStep, ...]
    changes: dict[str, Any]

    @property
    def invoicing_steps(self) -> tuple[DueStep, ...]:
        return tuple(s for s in self.steps if s.billing_reason is not None)


def next_run_at(
    status: SubscriptionStatus,
    current_period_start: datetime,
    current_period_end: datetime,
    renewal_notice_for: datetime | None,
    renewal_notice: timedelta | None,
) -> datetime | None:
    """When a billing run must next look at a subscription in this state (``None``: never).

    Active: the renewal notice time (period end minus ``renewal_notice``, not before the period
    start) until the notice for this period is sent, then the period end. Trialing: the trial end.
    """
    if status is SubscriptionStatus.TRIALING:
        return current_period_end
    if status is not SubscriptionStatus.ACTIVE:
        return None
    if renewal_notice and renewal_notice_for != current_period_end:
        return min(current_period_end, max(current_period_start, current_period_end - renewal_notice))
    return current_period_end


def _schedule_after_trial(sub: Subscription, trial_end: datetime) -> BillingSchedule:
    """Trial end resets the anchor: the trial end itself (anniversary) or the next calendar
    boundary after it (calendar)."""
    if sub.billing_cycle is BillingCycle.CALENDAR:
        anchor = calendar_anchor(
            trial_end, period=sub.billing_period, count=sub.billing_period_count, timezone=sub.timezone
        )
    else:
        anchor = trial_end
    return BillingSchedule(
        anchor=anchor,
        period=sub.billing_period,
        count=sub.billing_period_count,
        cycle=sub.billing_cycle,
        timezone=sub.timezone,
    )


def plan_due(sub: Subscription, now: datetime, *, renewal_notice: timedelta | None = None) -> DuePlan:
    """The steps due on ``sub`` at ``now`` and its fields afterwards (see the module doc).

    Pure: nothing is read but ``sub``. Drafts, cancelled and paused subscriptions have nothing due.
    Raises ``ValidationError`` when more than :data:`MAX_PERIODS` periods have elapsed.
    """
    status = sub.subscription_status
    start, end = sub.current_period_start, sub.current_period_end
    anchor = sub.billing_anchor
    notified = sub.renewal_notice_for
    cancelled_at = sub.cancelled_at
    end_date = sub.end_date
    schedule: BillingSchedule | None = None
    steps: list[DueStep] = []
    while len(steps) <= MAX_PERIODS:
        if status is SubscriptionStatus.TRIALING:
            if end > now:
                break
            if end_date is not None and end >= end_date:
                steps.append(DueStep(StepKind.END, end))
                status, cancelled_at = SubscriptionStatus.CANCELLED, end
                break
            schedule = _schedule_after_trial(sub, end)
            anchor = schedule.anchor
            first = schedule.first_period(end, end_date=end_date)
            steps.append(DueStep(StepKind.TRIAL_END, end, first))
            status = SubscriptionStatus.ACTIVE
            start, end = first.start, first.end
            continue
        if status is not SubscriptionStatus.ACTIVE:
            break
        if renewal_notice and notified != end and end > now and max(start, end - renewal_notice) <= now:
            steps.append(
                DueStep(StepKind.RENEWAL_NOTICE, max(start, end - renewal_notice), Period(start, end))
            )
            notified = end
        if end > now:
            break
        ended = end_date is not None and end >= end_date
        following = None
        if not ended:
            schedule = schedule or sub.schedule()
            following = schedule.first_period(end, end_date=end_date)
        steps.append(DueStep(StepKind.PERIOD_END, end, Period(start, end), following))
        if following is None:
            steps.append(DueStep(StepKind.END, end))
            status, cancelled_at = SubscriptionStatus.CANCELLED, end
            break
        start, end = following.start, following.end
    else:
        raise ValidationError(f"more than {MAX_PERIODS} billing periods are due", field="current_period_end")
    changes: dict[str, Any] = {
        "subscription_status": status,
        "current_period_start": start,
        "current_period_end": end,
        "billing_anchor": anchor,
        "renewal_notice_for": notified,
        "cancelled_at": cancelled_at,
        "next_run_at": next_run_at(status, start, end, notified, renewal_notice),
    }
    return DuePlan(tuple(steps), changes)
