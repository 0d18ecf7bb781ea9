"""How a subscription moves through its life: the status, trial and period it starts with, what
activating a draft changes, what the end of a trial or of a period does, and when the billing run
must look at it next.

Each rule is a pure function of keywords that returns the new state; services and the billing run
(:func:`billingkit.domain.renewals.plan_due`) call them and store the result. Nothing here reads
the clock or the store. Worked examples (all UTC, anniversary cycle unless said):

* **Creation**: monthly from 10 Mar, no trial → ``active``, current period [10 Mar, 10 Apr).
  With 14 trial days → ``trialing``, trial and current period [10 Mar, 24 Mar); nothing is billed
  until 24 Mar. With ``end_date`` 20 Mar the trial is cut to [10 Mar, 20 Mar).
* **Activating a draft** created for 5 May with a 14-day trial, at a new start 12 May → ``trialing``
  [12 May, 26 May). Its anchor moves to 12 May unless the creator gave ``billing_anchor`` (then a
  requested 5 May anchor stays: the first paid period after the trial runs to the next 5th).
* **Trial end** on 24 Mar (monthly) → ``active``; the anchor moves to 24 Mar and the first paid
  period is [24 Mar, 24 Apr). Calendar cycle: the anchor is the next calendar boundary, 1 Apr,
  and the first paid period the stub [24 Mar, 1 Apr). A trial that ends at ``end_date`` →
  ``cancelled`` at that instant, with no paid period.
* **Period end** of [31 Jan, 29 Feb) → the next period [29 Feb, 31 Mar) becomes current. When the
  closing period ends at or after ``end_date`` → ``cancelled`` at the period end, no next period.
* **Next run**: active [1 Mar, 1 Apr) with a 7-day renewal notice not yet sent → 25 Mar; once sent
  → 1 Apr. Trialing → the trial end. Draft, cancelled, paused → never (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from billingkit.domain.periods import BillingCycle, BillingPeriod, BillingSchedule, Period, calendar_anchor
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionStatus
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "CREATABLE_STATUSES",
    "Opening",
    "Standing",
    "activate_draft",
    "close_period",
    "creation_status",
    "end_trial",
    "next_run_at",
    "opening",
    "renewal_notice_at",
    "schedule_after_trial",
    "trial_days_of",
]

#: The statuses a creator may ask for (none asked: active, or trialing with a trial).
CREATABLE_STATUSES = frozenset(
    {SubscriptionStatus.DRAFT, SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING}
)
_ONE_DAY = timedelta(days=1)


def creation_status(*, requested: SubscriptionStatus | None, trial_days: int) -> SubscriptionStatus:
    """The status a new subscription starts in: ``draft`` when asked for, else ``trialing`` with a
    trial, else ``active``. Asking for ``trialing`` without trial days is a ``ValidationError`` on
    ``subscription_status``.

    | requested | trial_days | status |
    |---|---|---|
    | none / active | 0 | active |
    | none / active / trialing | 14 | trialing |
    | draft | 0 or 14 | draft |
    | trialing | 0 | refused |
    """
    if requested is SubscriptionStatus.TRIALING and not trial_days:
        raise ValidationError("a trialing subscription needs trial_period_days", field="subscription_status")
    if requested is SubscriptionStatus.DRAFT:
        return SubscriptionStatus.DRAFT
    return SubscriptionStatus.TRIALING if trial_days else SubscriptionStatus.ACTIVE


@dataclass(frozen=True, slots=True)
class Opening:
    """Where a subscription starts (on creation or activation): its status, first current
    period, trial window (``None`` without a trial), anchor and first billing-run time."""

    status: SubscriptionStatus
    period: Period
    trial: Period | None
    billing_anchor: datetime
    next_run_at: datetime | None

    def fields(self) -> dict[str, Any]:
        """The :class:`~billingkit.domain.subscriptions.Subscription` fields this sets."""
        return {
            "subscription_status": self.status,
            "billing_anchor": self.billing_anchor,
            "trial_start": self.trial.start if self.trial is not None else None,
            "trial_end": self.trial.end if self.trial is not None else None,
            "current_period_start": self.period.start,
            "current_period_end": self.period.end,
            "next_run_at": self.next_run_at,
        }


def opening(
    *,
    status: SubscriptionStatus,
    start: datetime,
    end_date: datetime | None,
    schedule: BillingSchedule,
    trial_days: int,
    renewal_notice: timedelta | None,
) -> Opening:
    """A subscription in ``status`` starting at ``start``: with a trial, the trial window
    ``[start, start + trial_days)`` (cut at ``end_date``) is the current period; without one, the
    schedule's first period. A draft is never due (``next_run_at`` ``None``).

    Example: start 10 Mar, 14 days, no end → trial and period [10 Mar, 24 Mar), next run 24 Mar.
    """
    if trial_days:
        trial_end = start + timedelta(days=trial_days)
        if end_date is not None:
            trial_end = min(trial_end, end_date)
        period = trial = Period(start, trial_end)
    else:
        period, trial = schedule.first_period(start, end_date=end_date), None
    due = None
    if status is not SubscriptionStatus.DRAFT:
        due = next_run_at(status, period.start, period.end, None, renewal_notice)
    return Opening(status, period, trial, schedule.anchor, due)


def trial_days_of(sub: Subscription) -> int:
    """Whole days of the subscription's trial window (0 without one).

    Example: trial [5 May 10:00, 19 May 10:00) → 14; [5 May, 5 May 23:00) → 0.
    """
    if sub.trial_start is None or sub.trial_end is None:
        return 0
    return (sub.trial_end - sub.trial_start) // _ONE_DAY


def activate_draft(
    draft: Subscription, *, start: datetime | None, renewal_notice: timedelta | None
) -> Subscription:
    """``draft`` activated at ``start`` (default: its own start date), before its ``end_date``.

    It keeps its trial length in whole days (:func:`trial_days_of`) and becomes ``trialing`` with
    one, else ``active``; its first period is recomputed from the new start. A ``billing_anchor``
    the creator gave stays; a derived one (the old start) follows the new start. Lines that started
    with the draft move with it; a line whose price starts later keeps its own later start.

    Example: draft for 5 May (derived anchor, 14-day trial), activated 12 May → trialing, trial and
    period [12 May, 26 May), anchor 12 May; a line starting 20 May keeps 20 May.
    Anything but a draft → ``InvalidOperation``; ``start`` at or after ``end_date`` →
    ``ValidationError`` on ``start_date``.
    """
    if draft.subscription_status is not SubscriptionStatus.DRAFT:
        raise InvalidOperation(
            f"only draft subscriptions can be activated; {draft.id} is {draft.subscription_status.value}"
        )
    start = start or draft.start_date
    if draft.end_date is not None and draft.end_date <= start:
        raise ValidationError("start_date must be before the subscription's end_date", field="start_date")
    schedule = BillingSchedule.for_start(
        start,
        period=draft.billing_period,
        count=draft.billing_period_count,
        cycle=draft.billing_cycle,
        timezone=draft.timezone,
        billing_anchor=draft.billing_anchor if draft.billing_anchor_requested else None,
    )
    trial_days = trial_days_of(draft)
    status = SubscriptionStatus.TRIALING if trial_days else SubscriptionStatus.ACTIVE
    opened = opening(
        status=status,
        start=start,
        end_date=draft.end_date,
        schedule=schedule,
        trial_days=trial_days,
        renewal_notice=renewal_notice,
    )
    return draft.model_copy(
        update={
            **opened.fields(),
            "start_date": start,
            "line_items": tuple(_moved_line(line, draft.start_date, start) for line in draft.line_items),
        }
    )


def _moved_line(line: SubscriptionLineItem, old_start: datetime, start: datetime) -> SubscriptionLineItem:
    """A draft's line when the draft is activated at ``start``: a line that started with the draft
    moves with it, a later one keeps its later start; a line that ended before ``start`` keeps its
    end and becomes empty (``[end, end)``: never charged), rather than ending before it starts."""
    moved = start if line.start_date is None or line.start_date == old_start else max(start, line.start_date)
    if line.end_date is not None and moved > line.end_date:
        moved = line.end_date
    return line.model_copy(update={"start_date": moved})


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a subscription stands between billing runs: the fields a run moves."""

    status: SubscriptionStatus
    period_start: datetime
    period_end: datetime
    billing_anchor: datetime
    renewal_notice_for: datetime | None = None
    cancelled_at: datetime | None = None

    @classmethod
    def of(cls, sub: Subscription) -> Standing:
        return cls(
            sub.subscription_status,
            sub.current_period_start,
            sub.current_period_end,
            sub.billing_anchor,
            sub.renewal_notice_for,
            sub.cancelled_at,
        )

    @property
    def period(self) -> Period:
        return Period(self.period_start, self.period_end)

    def fields(self, *, renewal_notice: timedelta | None) -> dict[str, Any]:
        """The subscription fields of this standing, ``next_run_at`` included."""
        return {
            "subscription_status": self.status,
            "current_period_start": self.period_start,
            "current_period_end": self.period_end,
            "billing_anchor": self.billing_anchor,
            "renewal_notice_for": self.renewal_notice_for,
            "cancelled_at": self.cancelled_at,
            "next_run_at": next_run_at(
                self.status, self.period_start, self.period_end, self.renewal_notice_for, renewal_notice
            ),
        }


def _reaches_end(instant: datetime, end_date: datetime | None) -> bool:
    return end_date is not None and instant >= end_date


def _cancelled(standing: Standing, *, at: datetime) -> Standing:
    return replace(standing, status=SubscriptionStatus.CANCELLED, cancelled_at=at)


def schedule_after_trial(
    *,
    trial_end: datetime,
    billing_cycle: BillingCycle,
    billing_period: BillingPeriod,
    billing_period_count: int,
    timezone: str,
) -> BillingSchedule:
    """The subscription's schedule once its trial ends: the anchor is the trial end itself
    (anniversary) or the next calendar boundary after it (calendar).

    Example: monthly, trial end 24 Mar 09:00 → anchor 24 Mar 09:00; calendar → 1 Apr 00:00.
    """
    if billing_cycle is BillingCycle.CALENDAR:
        anchor = calendar_anchor(
            trial_end, period=billing_period, count=billing_period_count, timezone=timezone
        )
    else:
        anchor = trial_end
    return BillingSchedule(
        anchor=anchor,
        period=billing_period,
        count=billing_period_count,
        cycle=billing_cycle,
        timezone=timezone,
    )


def end_trial(
    trialing: Standing,
    *,
    end_date: datetime | None,
    billing_cycle: BillingCycle,
    billing_period: BillingPeriod,
    billing_period_count: int,
    timezone: str,
) -> tuple[Standing, BillingSchedule | None]:
    """The standing after the trial (the current period of ``trialing``) ends, and the schedule
    billing goes on with (``None`` when it does not go on).

    A trial ending at or after ``end_date`` cancels the subscription at the trial end. Otherwise
    it becomes ``active`` on :func:`schedule_after_trial` with the first paid period
    ``[trial end, next boundary)``, cut at ``end_date``.

    | trial | cycle | end_date | after |
    |---|---|---|---|
    | [10 Mar, 24 Mar) | anniversary monthly | none | active [24 Mar, 24 Apr), anchor 24 Mar |
    | [10 Mar, 24 Mar) | calendar monthly | none | active [24 Mar, 1 Apr), anchor 1 Apr |
    | [10 Mar, 24 Mar) | anniversary monthly | 10 Apr | active [24 Mar, 10 Apr) |
    | [10 Mar, 20 Mar) | anniversary monthly | 20 Mar | cancelled at 20 Mar |
    """
    trial_end = trialing.period_end
    if _reaches_end(trial_end, end_date):
        return _cancelled(trialing, at=trial_end), None
    after = schedule_after_trial(
        trial_end=trial_end,
        billing_cycle=billing_cycle,
        billing_period=billing_period,
        billing_period_count=billing_period_count,
        timezone=timezone,
    )
    first = after.first_period(trial_end, end_date=end_date)
    active = replace(
        trialing,
        status=SubscriptionStatus.ACTIVE,
        period_start=first.start,
        period_end=first.end,
        billing_anchor=after.anchor,
    )
    return active, after


def close_period(active: Standing, *, end_date: datetime | None, schedule: BillingSchedule) -> Standing:
    """The standing after the current period of ``active`` ends: the next period on
    ``schedule`` (cut at ``end_date``) becomes current, or, when the closing period ends at or
    after ``end_date``, the subscription is cancelled at that instant.

    | current period | end_date | after |
    |---|---|---|
    | [31 Jan, 29 Feb) monthly | none | active [29 Feb, 31 Mar) |
    | [31 Jan, 29 Feb) monthly | 15 Mar | active [29 Feb, 15 Mar) |
    | [29 Feb, 15 Mar) | 15 Mar | cancelled at 15 Mar |
    """
    closing_end = active.period_end
    if _reaches_end(closing_end, end_date):
        return _cancelled(active, at=closing_end)
    following = schedule.first_period(closing_end, end_date=end_date)
    return replace(active, period_start=following.start, period_end=following.end)


def renewal_notice_at(*, period_start: datetime, period_end: datetime, notice: timedelta) -> datetime:
    """When the renewal notice of the period is due: ``notice`` before its end, not before its start.

    Example: [1 Mar, 1 Apr), 7 days → 25 Mar; [1 Mar, 4 Mar), 7 days → 1 Mar.
    """
    return max(period_start, period_end - notice)


def next_run_at(
    status: SubscriptionStatus,
    current_period_start: datetime,
    current_period_end: datetime,
    renewal_notice_for: datetime | None,
    renewal_notice: timedelta | None,
) -> datetime | None:
    """When a billing run must next look at a subscription in this state (``None``: never).

    Active: the renewal notice time (:func:`renewal_notice_at`) until the notice for this period
    is sent, then the period end. Trialing: the trial end. Anything else: never.
    """
    if status is SubscriptionStatus.TRIALING:
        return current_period_end
    if status is not SubscriptionStatus.ACTIVE:
        return None
    if renewal_notice and renewal_notice_for != current_period_end:
        notice_at = renewal_notice_at(
            period_start=current_period_start, period_end=current_period_end, notice=renewal_notice
        )
        return min(current_period_end, notice_at)
    return current_period_end
