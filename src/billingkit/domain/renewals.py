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
* ``end``: the subscription reached its ``end_date`` or a scheduled cancellation's ``cancel_at``
  (after billing the last period) and is ``cancelled``; its end date is then that instant and its
  open line items end there.

Example: monthly from 31 Jan, ``now`` = 1 Apr → period_end [31 Jan, 29 Feb) and period_end
[29 Feb, 31 Mar); the current period becomes [31 Mar, 30 Apr).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from billingkit.domain.cancellation import ended_fields, scheduled_end
from billingkit.domain.invoices import BillingReason
from billingkit.domain.periods import MAX_PERIODS, BillingSchedule, Period
from billingkit.domain.subscription_inheritance import is_child
from billingkit.domain.subscription_lifecycle import (
    Standing,
    close_period,
    end_trial,
    next_run_at,
    renewal_notice_at,
)
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


def plan_due(sub: Subscription, now: datetime, *, renewal_notice: timedelta | None = None) -> DuePlan:
    """The steps due on ``sub`` at ``now`` and its fields afterwards (see the module doc).

    Pure: nothing is read but ``sub``. Drafts, cancelled and paused subscriptions have nothing due,
    nor have ``inherited`` and ``grouped_invoicing`` children (their parent's billing moves them;
    one found due is just taken out of due work). Each transition is a rule of
    :mod:`billingkit.domain.subscription_lifecycle`; this walks them forward to ``now``. Raises
    ``ValidationError`` when more than :data:`MAX_PERIODS` periods have elapsed.
    """
    if is_child(sub):
        return DuePlan((), {"next_run_at": None})
    standing = Standing.of(sub)
    end_date = scheduled_end(sub)  # a scheduled cancellation ends it like an end date
    schedule: BillingSchedule | None = None
    steps: list[DueStep] = []
    while len(steps) <= MAX_PERIODS:
        if standing.status is SubscriptionStatus.TRIALING:
            trial_end = standing.period_end
            if trial_end > now:
                break
            standing, schedule = end_trial(
                standing,
                end_date=end_date,
                billing_cycle=sub.billing_cycle,
                billing_period=sub.billing_period,
                billing_period_count=sub.billing_period_count,
                timezone=sub.timezone,
            )
            if schedule is None:  # the trial ran to end_date
                steps.append(DueStep(StepKind.END, trial_end))
                break
            steps.append(DueStep(StepKind.TRIAL_END, trial_end, standing.period))
            continue
        if standing.status is not SubscriptionStatus.ACTIVE:
            break
        end = standing.period_end
        if renewal_notice and standing.renewal_notice_for != end and end > now:
            notice_at = renewal_notice_at(
                period_start=standing.period_start, period_end=end, notice=renewal_notice
            )
            if notice_at <= now:
                steps.append(DueStep(StepKind.RENEWAL_NOTICE, notice_at, standing.period))
                standing = replace(standing, renewal_notice_for=end)
        if end > now:
            break
        closing = standing.period
        schedule = schedule or sub.schedule()
        standing = close_period(standing, end_date=end_date, schedule=schedule)
        ended = standing.status is SubscriptionStatus.CANCELLED
        steps.append(DueStep(StepKind.PERIOD_END, end, closing, None if ended else standing.period))
        if ended:
            steps.append(DueStep(StepKind.END, end))
            break
    else:
        raise ValidationError(f"more than {MAX_PERIODS} billing periods are due", field="current_period_end")
    changes = standing.fields(renewal_notice=renewal_notice)
    cancelled_at = standing.cancelled_at
    was_cancelled = sub.subscription_status is SubscriptionStatus.CANCELLED
    ends = standing.status is SubscriptionStatus.CANCELLED and not was_cancelled
    if ends and cancelled_at is not None:  # it ends in this run: its open line items end too
        changes.update(ended_fields(sub, cancelled_at))
    return DuePlan(tuple(steps), changes)
