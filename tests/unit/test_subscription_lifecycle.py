"""Subscription transitions (domain.subscription_lifecycle): tables of worked examples, each row
with its dates worked out beside it, and properties of walking periods forward."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import BillingCycle, BillingPeriod, BillingSchedule, InvoiceCadence, Period
from billingkit.domain.renewals import StepKind, plan_due
from billingkit.domain.subscription_lifecycle import (
    Standing,
    activate_draft,
    close_period,
    creation_status,
    end_trial,
    next_run_at,
    opening,
    renewal_notice_at,
    schedule_after_trial,
    trial_days_of,
)
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionStatus
from billingkit.errors import InvalidOperation, ValidationError

ACTIVE, TRIALING, DRAFT, CANCELLED = (
    SubscriptionStatus.ACTIVE,
    SubscriptionStatus.TRIALING,
    SubscriptionStatus.DRAFT,
    SubscriptionStatus.CANCELLED,
)
MONTHLY = BillingPeriod.MONTHLY
ANNIVERSARY, CALENDAR = BillingCycle.ANNIVERSARY, BillingCycle.CALENDAR


def d(month: int, day: int, hour: int = 0) -> datetime:
    """An instant of 2024 (a leap year) in UTC."""
    return datetime(2024, month, day, hour, tzinfo=UTC)


def monthly_from(anchor: datetime, cycle: BillingCycle = ANNIVERSARY) -> BillingSchedule:
    return BillingSchedule.for_start(anchor, period=MONTHLY, cycle=cycle)


def draft(**fields: Any) -> Subscription:
    """A monthly draft for 5 May 2024 with one line that started with it."""
    start = fields.pop("start_date", d(5, 5))
    line = SubscriptionLineItem(
        id="subs_line_1",
        subscription_id="subs_1",
        customer_id="cust_1",
        entity_id="plan_1",
        price_id="price_1",
        price_type=PriceType.FIXED,
        quantity=Decimal(1),
        currency="usd",
        billing_period=MONTHLY,
        invoice_cadence=InvoiceCadence.ADVANCE,
        start_date=start,
    )
    values: dict[str, Any] = {
        "id": "subs_1",
        "tenant_id": "tenant_a",
        "environment_id": "env_a",
        "created_at": start,
        "updated_at": start,
        "created_by": "test",
        "updated_by": "test",
        "plan_id": "plan_1",
        "customer_id": "cust_1",
        "subscription_status": DRAFT,
        "billing_period": MONTHLY,
        "billing_anchor": start,
        "currency": "usd",
        "start_date": start,
        "current_period_start": start,
        "current_period_end": d(6, 5),
        "line_items": (line,),
    }
    return Subscription.model_validate({**values, **fields})


# -- creation ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "trial_days", "expected"),
    [
        (None, 0, ACTIVE),  # nothing asked, no trial: billed from the start
        (ACTIVE, 0, ACTIVE),
        (None, 14, TRIALING),  # a trial (asked or inherited from the plan) makes it trialing
        (ACTIVE, 14, TRIALING),
        (TRIALING, 14, TRIALING),
        (DRAFT, 0, DRAFT),  # a draft stays a draft, trial or not
        (DRAFT, 14, DRAFT),
    ],
)
def test_creation_status(
    requested: SubscriptionStatus | None, trial_days: int, expected: SubscriptionStatus
) -> None:
    assert creation_status(requested=requested, trial_days=trial_days) is expected


def test_asking_for_trialing_without_trial_days_is_refused_on_the_status() -> None:
    with pytest.raises(ValidationError) as caught:
        creation_status(requested=TRIALING, trial_days=0)
    assert caught.value.field == "subscription_status"
    assert caught.value.message == "a trialing subscription needs trial_period_days"


@pytest.mark.parametrize(
    ("status", "trial_days", "end_date", "period", "trial", "next_run"),
    [
        # monthly from 10 Mar: first period [10 Mar, 10 Apr), billed again at its end
        (ACTIVE, 0, None, (d(3, 10), d(4, 10)), None, d(4, 10)),
        # 10 Mar + 14 days = 24 Mar: the trial is the current period; next run at its end
        (TRIALING, 14, None, (d(3, 10), d(3, 24)), (d(3, 10), d(3, 24)), d(3, 24)),
        # end_date 20 Mar comes before 24 Mar: the trial is cut there
        (TRIALING, 14, d(3, 20), (d(3, 10), d(3, 20)), (d(3, 10), d(3, 20)), d(3, 20)),
        # end_date 1 Apr cuts the first period [10 Mar, 10 Apr) short
        (ACTIVE, 0, d(4, 1), (d(3, 10), d(4, 1)), None, d(4, 1)),
        # a draft gets its periods worked out but is never due
        (DRAFT, 14, None, (d(3, 10), d(3, 24)), (d(3, 10), d(3, 24)), None),
        (DRAFT, 0, None, (d(3, 10), d(4, 10)), None, None),
    ],
)
def test_opening(
    status: SubscriptionStatus,
    trial_days: int,
    end_date: datetime | None,
    period: tuple[datetime, datetime],
    trial: tuple[datetime, datetime] | None,
    next_run: datetime | None,
) -> None:
    start = d(3, 10)
    opened = opening(
        status=status,
        start=start,
        end_date=end_date,
        schedule=monthly_from(start),
        trial_days=trial_days,
        renewal_notice=None,
    )
    assert opened.status is status
    assert opened.period == Period(*period)
    assert opened.trial == (Period(*trial) if trial else None)
    assert opened.billing_anchor == start
    assert opened.next_run_at == next_run
    fields = opened.fields()
    assert (fields["trial_start"], fields["trial_end"]) == (trial or (None, None))
    assert (fields["current_period_start"], fields["current_period_end"]) == period


# -- activating a draft -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("draft_fields", "new_start", "status", "period", "trial", "anchor"),
    [
        # no trial, same start: active [5 May, 5 Jun)
        ({}, None, ACTIVE, (d(5, 5), d(6, 5)), None, d(5, 5)),
        # derived anchor follows the new start 12 May: [12 May, 12 Jun)
        ({}, d(5, 12), ACTIVE, (d(5, 12), d(6, 12)), None, d(5, 12)),
        # requested anchor 5 May stays: stub [12 May, 5 Jun)
        ({"billing_anchor_requested": True}, d(5, 12), ACTIVE, (d(5, 12), d(6, 5)), None, d(5, 5)),
        # a 14-day trial [5 May, 19 May) moves with the start: 12 May + 14 days = 26 May
        (
            {"trial_start": d(5, 5), "trial_end": d(5, 19)},
            d(5, 12),
            TRIALING,
            (d(5, 12), d(5, 26)),
            (d(5, 12), d(5, 26)),
            d(5, 12),
        ),
        # a trial of 23 hours is 0 whole days: no trial after activation
        ({"trial_start": d(5, 5), "trial_end": d(5, 5, 23)}, None, ACTIVE, (d(5, 5), d(6, 5)), None, d(5, 5)),
        # end_date 20 May cuts the moved trial [12 May, 26 May) at 20 May
        (
            {"trial_start": d(5, 5), "trial_end": d(5, 19), "end_date": d(5, 20)},
            d(5, 12),
            TRIALING,
            (d(5, 12), d(5, 20)),
            (d(5, 12), d(5, 20)),
            d(5, 12),
        ),
    ],
)
def test_activate_draft(
    draft_fields: dict[str, Any],
    new_start: datetime | None,
    status: SubscriptionStatus,
    period: tuple[datetime, datetime],
    trial: tuple[datetime, datetime] | None,
    anchor: datetime,
) -> None:
    before = draft(**draft_fields)
    after = activate_draft(before, start=new_start, renewal_notice=None)
    assert after.subscription_status is status
    assert after.start_date == (new_start or before.start_date)
    assert (after.current_period_start, after.current_period_end) == period
    assert (after.trial_start, after.trial_end) == (trial or (None, None))
    assert after.billing_anchor == anchor
    assert after.next_run_at == period[1]
    assert after.line_items[0].start_date == after.start_date  # the line started with the draft


def test_activating_moves_lines_that_started_with_the_draft_and_keeps_later_ones() -> None:
    before = draft()
    later = before.line_items[0].model_copy(update={"id": "subs_line_2", "start_date": d(5, 20)})
    before = before.model_copy(update={"line_items": (*before.line_items, later)})
    # new start 12 May: the first line (5 May, with the draft) moves to 12 May; 20 May stays
    moved = activate_draft(before, start=d(5, 12), renewal_notice=None)
    assert [line.start_date for line in moved.line_items] == [d(5, 12), d(5, 20)]
    # new start 25 May: a later line cannot start before the subscription: max(25 May, 20 May)
    moved = activate_draft(before, start=d(5, 25), renewal_notice=None)
    assert [line.start_date for line in moved.line_items] == [d(5, 25), d(5, 25)]


def test_only_drafts_activate_and_never_at_or_after_their_end() -> None:
    with pytest.raises(InvalidOperation, match="only draft subscriptions can be activated; subs_1 is active"):
        activate_draft(draft(subscription_status=ACTIVE), start=None, renewal_notice=None)
    with pytest.raises(ValidationError) as caught:
        activate_draft(draft(end_date=d(5, 12)), start=d(5, 12), renewal_notice=None)
    assert caught.value.field == "start_date"


@pytest.mark.parametrize(
    ("trial", "days"),
    [
        ((d(5, 5, 10), d(5, 19, 10)), 14),  # exactly two weeks
        ((d(5, 5), d(5, 5, 23)), 0),  # under a day
        ((d(3, 30), d(4, 2, 12)), 3),  # 3.5 days: whole days only
        (None, 0),
    ],
)
def test_trial_days_of(trial: tuple[datetime, datetime] | None, days: int) -> None:
    start, end = trial or (None, None)
    assert trial_days_of(draft(trial_start=start, trial_end=end)) == days


# -- trial end and period end ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trial_end", "cycle", "end_date", "status", "period", "anchor"),
    [
        # anniversary: the trial end 24 Mar is the new anchor, first paid period [24 Mar, 24 Apr)
        (d(3, 24), ANNIVERSARY, None, ACTIVE, (d(3, 24), d(4, 24)), d(3, 24)),
        # calendar: next calendar boundary after 24 Mar is 1 Apr: stub [24 Mar, 1 Apr)
        (d(3, 24), CALENDAR, None, ACTIVE, (d(3, 24), d(4, 1)), d(4, 1)),
        # end_date 10 Apr cuts the first paid period [24 Mar, 24 Apr) at 10 Apr
        (d(3, 24), ANNIVERSARY, d(4, 10), ACTIVE, (d(3, 24), d(4, 10)), d(3, 24)),
        # the trial ran to end_date 20 Mar: cancelled then, period and anchor untouched
        (d(3, 20), ANNIVERSARY, d(3, 20), CANCELLED, (d(3, 10), d(3, 20)), d(3, 10)),
    ],
)
def test_end_trial(
    trial_end: datetime,
    cycle: BillingCycle,
    end_date: datetime | None,
    status: SubscriptionStatus,
    period: tuple[datetime, datetime],
    anchor: datetime,
) -> None:
    trialing = Standing(TRIALING, d(3, 10), trial_end, d(3, 10))
    after, schedule = end_trial(
        trialing,
        end_date=end_date,
        billing_cycle=cycle,
        billing_period=MONTHLY,
        billing_period_count=1,
        timezone="UTC",
    )
    assert after.status is status
    assert (after.period_start, after.period_end) == period
    assert after.billing_anchor == anchor
    if status is CANCELLED:
        assert after.cancelled_at == trial_end and schedule is None
    else:
        assert after.cancelled_at is None and schedule is not None and schedule.anchor == anchor


def test_schedule_after_trial_in_a_time_zone() -> None:
    # calendar, Europe/Berlin: trial ends 24 Mar 09:00 UTC -> 1 Apr 00:00 CEST = 31 Mar 22:00 UTC
    schedule = schedule_after_trial(
        trial_end=d(3, 24, 9),
        billing_cycle=CALENDAR,
        billing_period=MONTHLY,
        billing_period_count=1,
        timezone="Europe/Berlin",
    )
    assert schedule.anchor == d(3, 31, 22)


@pytest.mark.parametrize(
    ("current", "end_date", "status", "period"),
    [
        # 31 Jan -> 29 Feb (leap year) -> 31 Mar: the anchor day comes back after February
        ((d(1, 31), d(2, 29)), None, ACTIVE, (d(2, 29), d(3, 31))),
        # end_date 15 Mar cuts the next period [29 Feb, 31 Mar) at 15 Mar
        ((d(1, 31), d(2, 29)), d(3, 15), ACTIVE, (d(2, 29), d(3, 15))),
        # the closing period ends at end_date: cancelled at 15 Mar, no next period
        ((d(2, 29), d(3, 15)), d(3, 15), CANCELLED, (d(2, 29), d(3, 15))),
    ],
)
def test_close_period(
    current: tuple[datetime, datetime],
    end_date: datetime | None,
    status: SubscriptionStatus,
    period: tuple[datetime, datetime],
) -> None:
    active = Standing(ACTIVE, *current, d(1, 31))
    after = close_period(active, end_date=end_date, schedule=monthly_from(d(1, 31)))
    assert after.status is status
    assert (after.period_start, after.period_end) == period
    assert after.cancelled_at == (current[1] if status is CANCELLED else None)


@pytest.mark.parametrize(
    ("status", "period", "notified", "notice", "expected"),
    [
        # 1 Apr - 7 days = 25 Mar, not yet sent
        (ACTIVE, (d(3, 1), d(4, 1)), None, timedelta(days=7), d(3, 25)),
        # sent for this period end: next look at the period end
        (ACTIVE, (d(3, 1), d(4, 1)), d(4, 1), timedelta(days=7), d(4, 1)),
        # sent for the previous period only: due again, 25 Mar
        (ACTIVE, (d(3, 1), d(4, 1)), d(3, 1), timedelta(days=7), d(3, 25)),
        # a 3-day stub: 4 Mar - 7 days is before the start, so the start 1 Mar
        (ACTIVE, (d(3, 1), d(3, 4)), None, timedelta(days=7), d(3, 1)),
        (ACTIVE, (d(3, 1), d(4, 1)), None, None, d(4, 1)),  # no notices
        (TRIALING, (d(3, 10), d(3, 24)), None, timedelta(days=7), d(3, 24)),  # trial end
        (DRAFT, (d(3, 1), d(4, 1)), None, None, None),
        (CANCELLED, (d(3, 1), d(4, 1)), None, None, None),
        (SubscriptionStatus.PAUSED, (d(3, 1), d(4, 1)), None, None, None),
    ],
)
def test_next_run_at(
    status: SubscriptionStatus,
    period: tuple[datetime, datetime],
    notified: datetime | None,
    notice: timedelta | None,
    expected: datetime | None,
) -> None:
    assert next_run_at(status, *period, notified, notice) == expected


def test_renewal_notice_at() -> None:
    week = timedelta(days=7)
    assert renewal_notice_at(period_start=d(3, 1), period_end=d(4, 1), notice=week) == d(3, 25)
    assert renewal_notice_at(period_start=d(3, 1), period_end=d(3, 4), notice=week) == d(3, 1)


# -- properties --------------------------------------------------------------------------------------

_starts = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC))


@settings(max_examples=60, deadline=None)
@given(
    start=_starts,
    period=st.sampled_from([BillingPeriod.DAILY, BillingPeriod.WEEKLY, MONTHLY, BillingPeriod.ANNUAL]),
    cycle=st.sampled_from([ANNIVERSARY, CALENDAR]),
    steps=st.integers(1, 24),
    end_after=st.one_of(st.none(), st.integers(1, 800)),
)
def test_closing_periods_chains_them_without_gaps_and_stops_exactly_at_end_date(
    start: datetime, period: BillingPeriod, cycle: BillingCycle, steps: int, end_after: int | None
) -> None:
    schedule = BillingSchedule.for_start(start, period=period, cycle=cycle)
    end_date = start + timedelta(days=end_after) if end_after is not None else None
    first = schedule.first_period(start, end_date=end_date)
    standing = Standing(ACTIVE, first.start, first.end, schedule.anchor)
    for _ in range(steps):
        closing_end = standing.period_end
        standing = close_period(standing, end_date=end_date, schedule=schedule)
        if standing.status is CANCELLED:
            # only ever at end_date, and exactly there
            assert end_date is not None and standing.cancelled_at == closing_end == end_date
            break
        assert standing.period_start == closing_end  # no gap, no overlap
        assert standing.period_end > standing.period_start
        assert end_date is None or standing.period_end <= end_date


@settings(max_examples=60, deadline=None)
@given(
    start=_starts,
    trial_days=st.integers(0, 60),
    cycle=st.sampled_from([ANNIVERSARY, CALENDAR]),
    days_later=st.integers(0, 400),
)
def test_plan_due_leaves_a_subscription_current_at_now(
    start: datetime, trial_days: int, cycle: BillingCycle, days_later: int
) -> None:
    schedule = BillingSchedule.for_start(start, period=MONTHLY, cycle=cycle)
    status = TRIALING if trial_days else ACTIVE
    opened = opening(
        status=status,
        start=start,
        end_date=None,
        schedule=schedule,
        trial_days=trial_days,
        renewal_notice=None,
    )
    sub = draft(
        start_date=start,
        billing_cycle=cycle,
        **opened.fields(),
    )
    now = start + timedelta(days=days_later)
    plan = plan_due(sub, now)
    after = sub.model_copy(update=plan.changes)
    # the current period holds now, the subscription is active or still in its trial
    assert after.current_period_start <= now < after.current_period_end
    assert after.subscription_status is (
        TRIALING if trial_days and now < start + timedelta(days=trial_days) else ACTIVE
    )
    # one period_end step per elapsed period, each closing where the previous one started the next
    closings = [s.period for s in plan.steps if s.kind == StepKind.PERIOD_END]
    for closing, following in pairwise(closings):
        assert closing is not None and following is not None and following.start == closing.end
