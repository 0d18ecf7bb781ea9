"""Pausing and resuming a subscription: the pure rules (reference notes §1.6, decision D6).

A pause stops billing for a while and hands the paused time back by stretching the billing period
it interrupted: nothing is invoiced or credited when it starts or ends. Each function here is a
pure rule; :mod:`billingkit.services.subscription_pauses` reads the store, calls them and writes.

Worked example (UTC, monthly anniversary, anchor 1 May 00:00, current period [1 May, 1 Jun)):

* ``immediate`` pause on 11 May with ``pause_days`` 10 → the subscription is ``paused`` over
  [11 May, 21 May). At 21 May the worker resumes it (``resume_mode`` ``auto``): the period end
  moves by the paused time, 1 Jun + 10 days = 11 Jun, and the anchor moves with it, so the periods
  after it are [11 Jun, 11 Jul), [11 Jul, 11 Aug), ... (full periods, same length as before).
* The same pause resumed by hand on 16 May → stretched by the 5 days really paused: 6 Jun.
* ``period_end`` pause with ``pause_days`` 10 → starts at 1 Jun, after [1 May, 1 Jun) is billed
  (its ARREAR charges and the ADVANCE charges of [1 Jun, 1 Jul)); at 11 Jun that period becomes
  [1 Jun, 11 Jul).
* ``scheduled`` pause from 20 May, no end → paused from 20 May until resumed.

A subscription's ``end_date`` is never moved: a pause still running at ``end_date`` ends there and
the stretched period is cut at it, so the subscription ends when it was meant to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from billingkit.domain.money import round_money
from billingkit.domain.periods import BillingCycle, Period
from billingkit.domain.resources import iso
from billingkit.domain.subscription_lifecycle import next_run_at
from billingkit.domain.subscription_pauses import PauseMode, SubscriptionPause
from billingkit.domain.subscriptions import PauseStatus, Subscription, SubscriptionStatus, SubscriptionType
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "BillingImpact",
    "PauseWindow",
    "check_pausable",
    "check_pause_request",
    "interrupted_period",
    "pause_window",
    "paused",
    "resume_due_at",
    "resumed",
    "scheduled",
    "status_at",
    "stretched_period",
    "withdrawn",
]

_ZERO = timedelta(0)


@dataclass(frozen=True, slots=True)
class PauseWindow:
    """When a pause starts and ends (``end`` ``None``: until resumed)."""

    start: datetime
    end: datetime | None


def check_pausable(sub: Subscription) -> None:
    """Only an ``active`` subscription with no pause running or scheduled and no cancellation
    pending may be paused, and not a child of a hierarchy (``inherited``, ``grouped_invoicing``:
    it follows its parent's periods); ``InvalidOperation`` naming the reason otherwise."""
    if sub.subscription_status is not SubscriptionStatus.ACTIVE:
        raise InvalidOperation(
            f"only active subscriptions can be paused; {sub.id} is {sub.subscription_status.value}"
        )
    if sub.subscription_type in (SubscriptionType.INHERITED, SubscriptionType.GROUPED_INVOICING):
        raise InvalidOperation(
            f"subscription {sub.id} is a {sub.subscription_type.value} child: it follows its parent "
            f"{sub.parent_subscription_id}'s periods; pause the parent instead"
        )
    if sub.pause_status in (PauseStatus.ACTIVE, PauseStatus.SCHEDULED):
        raise InvalidOperation(
            f"subscription {sub.id} already has a {sub.pause_status.value} pause ({sub.active_pause_id}); "
            "resume it first",
            details={"active_pause_id": sub.active_pause_id},
        )
    if sub.cancel_at is not None:
        raise InvalidOperation(
            f"subscription {sub.id} is to be cancelled at {iso(sub.cancel_at)}; a subscription with a "
            "pending cancellation cannot be paused"
        )


def check_pause_request(
    *, mode: PauseMode, pause_start: datetime | None, pause_end: datetime | None, pause_days: int | None
) -> None:
    """The rules a pause request obeys on its own: ``pause_end`` and ``pause_days`` (at least 1)
    exclude each other; ``pause_start`` is required by ``scheduled`` pauses and refused by the
    others (an ``immediate`` pause starts now, a ``period_end`` one at the current period's end).
    Raises ``ValidationError`` naming the field."""
    if pause_end is not None and pause_days is not None:
        raise ValidationError("give pause_end or pause_days, not both", field="pause_days")
    if pause_days is not None and pause_days < 1:
        raise ValidationError("pause_days must be at least 1", field="pause_days")
    if mode is PauseMode.SCHEDULED and pause_start is None:
        raise ValidationError("a scheduled pause needs pause_start", field="pause_start")
    if mode is not PauseMode.SCHEDULED and pause_start is not None:
        starts = "now" if mode is PauseMode.IMMEDIATE else "at the current period's end"
        raise ValidationError(
            f"pause_start is only for scheduled pauses; a {mode.value} pause starts {starts}",
            field="pause_start",
        )


def pause_window(
    *,
    mode: PauseMode,
    now: datetime,
    current_period_end: datetime,
    pause_start: datetime | None,
    pause_end: datetime | None,
    pause_days: int | None,
    end_date: datetime | None,
) -> PauseWindow:
    """The window a pause asked for at ``now`` covers.

    Start: ``now`` (``immediate``), ``pause_start`` (``scheduled``, which must be in the future),
    or the current period's end (``period_end``). End: ``pause_end``, else the start plus
    ``pause_days`` days of 24 hours, else none (paused until resumed). ``pause_start`` is only for
    ``scheduled`` pauses; ``pause_end`` and ``pause_days`` exclude each other. A pause that would
    start at or after the subscription's ``end_date`` pauses nothing.

    | mode | now | period end | asked | window |
    |---|---|---|---|---|
    | immediate | 11 May | 1 Jun | pause_days 10 | [11 May, 21 May) |
    | scheduled | 11 May | 1 Jun | pause_start 20 May, pause_end 25 May | [20 May, 25 May) |
    | period_end | 11 May | 1 Jun | none | [1 Jun, until resumed) |
    | immediate | 11 May | 1 Jun | pause_end 9 May | ``ValidationError`` on pause_end |

    Raises ``ValidationError`` naming ``pause_start``, ``pause_end`` or ``pause_days``, and
    ``InvalidOperation`` for a start at or after ``end_date``.
    """
    check_pause_request(mode=mode, pause_start=pause_start, pause_end=pause_end, pause_days=pause_days)
    if pause_start is not None:  # a scheduled pause: the others are refused one above
        if pause_start <= now:
            raise ValidationError(
                f"pause_start must be in the future (now is {iso(now)}); pause now with pause_mode immediate",
                field="pause_start",
            )
        start = pause_start
    else:
        start = now if mode is PauseMode.IMMEDIATE else current_period_end
    end = start + timedelta(days=pause_days) if pause_days is not None else pause_end
    if end is not None and end <= start:
        raise ValidationError(
            f"pause_end must be after the pause start ({iso(start)})",
            field="pause_end",
        )
    if end_date is not None and start >= end_date:
        raise InvalidOperation(
            f"the subscription ends at {iso(end_date)}, before the pause would start ({iso(start)})"
        )
    return PauseWindow(start, end)


def resume_due_at(pause_end: datetime | None, end_date: datetime | None) -> datetime | None:
    """When the worker must end an active pause by itself: at ``pause_end``, or at the
    subscription's ``end_date`` if that comes first (``None``: only a resume ends it).

    Example: pause_end 21 May, end_date 15 May → 15 May; no pause_end, no end_date → None.
    """
    ends = [at for at in (pause_end, end_date) if at is not None]
    return min(ends) if ends else None


def interrupted_period(sub: Subscription, pause_start: datetime) -> Period:
    """The billing period that will be current when a pause starting at ``pause_start`` begins:
    the current one, or (a pause starting at or after its end) the period of ``sub``'s schedule
    holding ``pause_start``, cut at ``end_date``.

    Example: current [1 May, 1 Jun) monthly; start 11 May → [1 May, 1 Jun); start 1 Jun →
    [1 Jun, 1 Jul); start 15 Jul → [1 Jul, 1 Aug).
    """
    period = Period(sub.current_period_start, sub.current_period_end)
    if pause_start < period.end:
        return period
    schedule = sub.schedule()
    while period.end <= pause_start and (sub.end_date is None or period.end < sub.end_date):
        period = schedule.first_period(period.end, end_date=sub.end_date)
    return period


def stretched_period(
    *,
    period_end: datetime,
    billing_anchor: datetime,
    billing_cycle: BillingCycle,
    end_date: datetime | None,
    pause_start: datetime,
    resumed_at: datetime,
) -> tuple[datetime, datetime]:
    """The current period's end and the billing anchor after a pause over
    ``[pause_start, resumed_at)``: the end moves by the paused time (never past ``end_date``).
    An anniversary anchor moves to the new end, so the periods after it keep their full length;
    a calendar anchor stays (calendar boundaries do not move: the next period runs from the new end
    to the next calendar boundary).

    | period end | anchor | cycle | paused | after |
    |---|---|---|---|---|
    | 1 Jun | 1 May | anniversary | 10 days | end 11 Jun, anchor 11 Jun |
    | 1 Jun | 1 Jun | calendar | 10 days | end 11 Jun, anchor 1 Jun |
    | 1 Jun, end_date 5 Jun | 1 May | anniversary | 10 days | end 5 Jun, anchor 5 Jun |
    | 1 Jun | 1 May | anniversary | 0 | unchanged |
    """
    paused = max(resumed_at - pause_start, _ZERO)
    if not paused:
        return period_end, billing_anchor
    end = period_end + paused
    if end_date is not None:
        end = min(end, end_date)
    anchor = end if billing_cycle is BillingCycle.ANNIVERSARY else billing_anchor
    return end, anchor


def scheduled(sub: Subscription, pause: SubscriptionPause) -> Subscription:
    """``sub`` with ``pause`` scheduled: still ``active``, ``pause_status`` ``scheduled``."""
    return sub.model_copy(update={"pause_status": PauseStatus.SCHEDULED, "active_pause_id": pause.id})


def paused(sub: Subscription, pause: SubscriptionPause) -> Subscription:
    """``sub`` paused by ``pause``: ``paused``, ``pause_status`` ``active``, nothing due for the
    billing run (``next_run_at`` ``None``) until it is resumed."""
    return sub.model_copy(
        update={
            "subscription_status": SubscriptionStatus.PAUSED,
            "pause_status": PauseStatus.ACTIVE,
            "active_pause_id": pause.id,
            "next_run_at": None,
        }
    )


def resumed(
    sub: Subscription, pause: SubscriptionPause, *, at: datetime, renewal_notice: timedelta | None
) -> Subscription:
    """``sub`` resumed at ``at`` from the active ``pause``: ``active``, ``pause_status`` ``none``,
    its period stretched by ``at - pause_start`` (:func:`stretched_period`) and its next billing-run
    time recomputed for the stretched period."""
    end, anchor = stretched_period(
        period_end=sub.current_period_end,
        billing_anchor=sub.billing_anchor,
        billing_cycle=sub.billing_cycle,
        end_date=sub.end_date,
        pause_start=pause.pause_start,
        resumed_at=at,
    )
    return sub.model_copy(
        update={
            "subscription_status": SubscriptionStatus.ACTIVE,
            "pause_status": PauseStatus.NONE,
            "active_pause_id": None,
            "current_period_end": end,
            "billing_anchor": anchor,
            "next_run_at": next_run_at(
                SubscriptionStatus.ACTIVE,
                sub.current_period_start,
                end,
                sub.renewal_notice_for,
                renewal_notice,
            ),
        }
    )


def status_at(sub: Subscription, windows: Sequence[Period], instant: datetime) -> SubscriptionStatus:
    """The status an ``active`` or ``paused`` subscription had at ``instant``, by the ``windows``
    it was paused over (:class:`Period`, a running pause open-ended): ``paused`` inside one,
    ``active`` outside them. Other statuses are the subscription's own, and so is ``paused`` when
    no window is known.

    Example: paused over [11 May, 21 May), now active: 15 May → paused, 1 May → active; paused now
    since 20 May: 1 May → active (what was due before the pause started is carried out).
    """
    if sub.subscription_status not in (SubscriptionStatus.ACTIVE, SubscriptionStatus.PAUSED) or not windows:
        return sub.subscription_status
    if any(window.contains(instant) for window in windows):
        return SubscriptionStatus.PAUSED
    return SubscriptionStatus.ACTIVE


def withdrawn(sub: Subscription) -> Subscription:
    """``sub`` once its scheduled pause is withdrawn (or ended without it): no pause."""
    return sub.model_copy(update={"pause_status": PauseStatus.NONE, "active_pause_id": None})


@dataclass(frozen=True, slots=True)
class BillingImpact:
    """What a pause does to billing, in the ``billing_impact`` of the pause and resume answers.

    ``period_start``/``original_period_end``: the billing period the pause interrupts (for a pause
    that has not started yet, the one that will be current when it starts);
    ``adjusted_period_end``: where that period ends once the pause is over (``None`` while an
    open-ended pause runs: it moves when the subscription is resumed); ``pause_duration_seconds``:
    the paused time (``None`` likewise). Pausing and resuming move no money: ``amount_invoiced``
    and ``amount_credited`` are zero, in the subscription's currency; the paused time is given back
    by the stretched period instead.
    """

    period_start: datetime
    original_period_end: datetime
    adjusted_period_end: datetime | None
    pause_start: datetime
    pause_end: datetime | None
    pause_duration_seconds: int | None
    currency: str

    @classmethod
    def of(
        cls,
        sub: Subscription,
        period: Period,
        *,
        pause_start: datetime,
        pause_end: datetime | None,
    ) -> BillingImpact:
        """The impact of pausing ``sub`` over ``[pause_start, pause_end)`` while ``period`` is
        current (``pause_end``: the resume time, or ``None`` while unknown)."""
        adjusted = None
        duration = None
        if pause_end is not None:
            adjusted, _ = stretched_period(
                period_end=period.end,
                billing_anchor=sub.billing_anchor,
                billing_cycle=sub.billing_cycle,
                end_date=sub.end_date,
                pause_start=pause_start,
                resumed_at=pause_end,
            )
            duration = int(max(pause_end - pause_start, _ZERO).total_seconds())
        return cls(period.start, period.end, adjusted, pause_start, pause_end, duration, sub.currency)

    def to_dict(self) -> dict[str, Any]:
        zero = str(round_money(Decimal(0), self.currency))
        return {
            "period_start": iso(self.period_start),
            "original_period_end": iso(self.original_period_end),
            "adjusted_period_end": iso(self.adjusted_period_end),
            "pause_start": iso(self.pause_start),
            "pause_end": iso(self.pause_end),
            "pause_duration_seconds": self.pause_duration_seconds,
            "amount_invoiced": zero,
            "amount_credited": zero,
            "currency": self.currency,
        }
