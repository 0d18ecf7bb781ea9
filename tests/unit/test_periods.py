"""Billing periods and anchors: worked examples and properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.periods import (
    BillingCycle,
    BillingPeriod,
    BillingSchedule,
    Period,
    calendar_anchor,
    ensure_utc,
    next_billing_date,
    period_multiple,
    periods_between,
    previous_billing_date,
)
from billingkit.domain.usage_buckets import BucketSize, bucket_count
from billingkit.errors import ValidationError
from billingkit.testing import strategies as bks

M = BillingPeriod.MONTHLY


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def local(zone: str, *args: int) -> datetime:
    return datetime(*args, tzinfo=ZoneInfo(zone)).astimezone(UTC)  # type: ignore[misc]


def walk(schedule: BillingSchedule, steps: int) -> list[datetime]:
    out = [schedule.anchor]
    for _ in range(steps):
        out.append(schedule.next_boundary(out[-1]))
    return out


def test_month_end_anchor_is_clamped_and_restored() -> None:
    # 31 Jan -> 29 Feb (leap) -> 31 Mar -> 30 Apr -> 31 May: never drifts to the 29th/30th
    schedule = BillingSchedule(anchor=utc(2024, 1, 31, 9, 30), period=M)
    assert walk(schedule, 4) == [
        utc(2024, 1, 31, 9, 30),
        utc(2024, 2, 29, 9, 30),
        utc(2024, 3, 31, 9, 30),
        utc(2024, 4, 30, 9, 30),
        utc(2024, 5, 31, 9, 30),
    ]


@pytest.mark.parametrize(
    ("period", "count", "anchor", "expected"),
    [
        (BillingPeriod.DAILY, 1, utc(2024, 2, 28, 6), utc(2024, 2, 29, 6)),  # + 1 day (leap)
        (BillingPeriod.DAILY, 3, utc(2024, 2, 28, 6), utc(2024, 3, 2, 6)),  # + 3 days
        (BillingPeriod.WEEKLY, 1, utc(2024, 1, 3, 12), utc(2024, 1, 10, 12)),  # Wed -> Wed
        (BillingPeriod.WEEKLY, 2, utc(2024, 1, 3, 12), utc(2024, 1, 17, 12)),  # + 14 days
        (M, 1, utc(2023, 1, 31), utc(2023, 2, 28)),  # 31 Jan -> 28 Feb (not leap)
        (M, 2, utc(2024, 12, 31), utc(2025, 2, 28)),  # 2 months, clamped
        (BillingPeriod.QUARTERLY, 1, utc(2024, 11, 30), utc(2025, 2, 28)),  # 30 Nov + 3 months
        (BillingPeriod.QUARTERLY, 1, utc(2024, 8, 31), utc(2024, 11, 30)),  # 31 Aug -> 30 Nov
        (BillingPeriod.HALF_YEARLY, 1, utc(2024, 8, 31), utc(2025, 2, 28)),  # + 6 months
        (BillingPeriod.ANNUAL, 1, utc(2024, 2, 29), utc(2025, 2, 28)),  # leap day -> 28 Feb
        (BillingPeriod.ANNUAL, 4, utc(2024, 2, 29), utc(2028, 2, 29)),  # 4 years: leap again
    ],
)
def test_next_boundary_examples(
    period: BillingPeriod, count: int, anchor: datetime, expected: datetime
) -> None:
    schedule = BillingSchedule(anchor=anchor, period=period, count=count)
    assert schedule.next_boundary(anchor) == expected
    assert schedule.previous_boundary(expected) == anchor


def test_annual_leap_day_anchor_over_eight_years() -> None:
    schedule = BillingSchedule(anchor=utc(2024, 2, 29), period=BillingPeriod.ANNUAL)
    days = [(b.year, b.month, b.day) for b in walk(schedule, 8)]
    assert days == [
        (2024, 2, 29),
        (2025, 2, 28),
        (2026, 2, 28),
        (2027, 2, 28),
        (2028, 2, 29),  # restored in the next leap year
        (2029, 2, 28),
        (2030, 2, 28),
        (2031, 2, 28),
        (2032, 2, 29),
    ]


def test_boundaries_before_the_anchor() -> None:
    schedule = BillingSchedule(anchor=utc(2024, 3, 31), period=M)
    # b(-1) = 29 Feb, b(-2) = 31 Jan, b(-3) = 31 Dec
    assert [schedule.boundary(k) for k in (-1, -2, -3)] == [
        utc(2024, 2, 29),
        utc(2024, 1, 31),
        utc(2023, 12, 31),
    ]


def test_anchor_later_in_month_gives_short_first_period() -> None:
    # anchor on the 20th, subscription starts 5 Mar: first period [5 Mar, 20 Mar)
    schedule = BillingSchedule(anchor=utc(2024, 1, 20), period=M)
    assert schedule.first_period(utc(2024, 3, 5)) == Period(utc(2024, 3, 5), utc(2024, 3, 20))
    # a start on a boundary gives a full period
    assert schedule.first_period(utc(2024, 3, 20)) == Period(utc(2024, 3, 20), utc(2024, 4, 20))


def test_time_of_day_comes_from_the_anchor() -> None:
    schedule = BillingSchedule(anchor=utc(2024, 1, 15, 17, 45, 10), period=M)
    # an instant earlier on the anchor day of month is still in the previous period
    assert schedule.period_containing(utc(2024, 3, 15, 8)) == Period(
        utc(2024, 2, 15, 17, 45, 10), utc(2024, 3, 15, 17, 45, 10)
    )


@pytest.mark.parametrize(
    ("period", "start", "anchor"),
    [
        (BillingPeriod.DAILY, utc(2024, 5, 10, 13), utc(2024, 5, 11)),  # next midnight
        (BillingPeriod.WEEKLY, utc(2024, 5, 8, 13), utc(2024, 5, 13)),  # Wed -> next Monday
        (BillingPeriod.WEEKLY, utc(2024, 5, 13, 0), utc(2024, 5, 20)),  # Monday -> next Monday
        (M, utc(2024, 1, 10, 15), utc(2024, 2, 1)),  # 1st of next month
        (M, utc(2024, 12, 31, 23), utc(2025, 1, 1)),  # across the year
        (BillingPeriod.QUARTERLY, utc(2024, 5, 10), utc(2024, 7, 1)),  # next quarter
        (BillingPeriod.HALF_YEARLY, utc(2024, 5, 10), utc(2024, 7, 1)),  # 1 Jul
        (BillingPeriod.HALF_YEARLY, utc(2024, 8, 10), utc(2025, 1, 1)),  # 1 Jan
        (BillingPeriod.ANNUAL, utc(2024, 5, 10), utc(2025, 1, 1)),  # next 1 Jan
    ],
)
def test_calendar_anchor_examples(period: BillingPeriod, start: datetime, anchor: datetime) -> None:
    assert calendar_anchor(start, period=period) == anchor
    schedule = BillingSchedule.for_start(start, period=period, cycle=BillingCycle.CALENDAR)
    assert schedule.anchor == anchor
    assert schedule.first_period(start) == Period(start, anchor)


def test_calendar_with_count_extends_the_calendar_block() -> None:
    # bi-monthly calendar from 10 Jan: first period [10 Jan, 1 Mar), then [1 Mar, 1 May)
    schedule = BillingSchedule.for_start(utc(2024, 1, 10), period=M, count=2, cycle=BillingCycle.CALENDAR)
    assert schedule.periods(utc(2024, 1, 10), utc(2024, 4, 1)) == [
        Period(utc(2024, 1, 10), utc(2024, 3, 1)),
        Period(utc(2024, 3, 1), utc(2024, 5, 1)),
    ]


def test_calendar_in_a_time_zone() -> None:
    # 1 Feb 00:00 in Berlin is 31 Jan 23:00 UTC; 1 Apr 00:00 (summer time) is 31 Mar 22:00 UTC
    start = local("Europe/Berlin", 2024, 1, 10, 15)
    schedule = BillingSchedule.for_start(
        start, period=M, cycle=BillingCycle.CALENDAR, timezone="Europe/Berlin"
    )
    assert schedule.anchor == utc(2024, 1, 31, 23)
    assert [p.end for p in schedule.periods(start, utc(2024, 3, 15))] == [
        utc(2024, 1, 31, 23),
        utc(2024, 2, 29, 23),
        utc(2024, 3, 31, 22),
    ]


def test_calendar_anchor_must_be_aligned() -> None:
    with pytest.raises(ValidationError) as info:
        BillingSchedule(anchor=utc(2024, 2, 2), period=M, cycle=BillingCycle.CALENDAR)
    assert info.value.field == "billing_anchor"
    with pytest.raises(ValidationError) as info:
        BillingSchedule.for_start(
            utc(2024, 2, 2), period=M, cycle=BillingCycle.CALENDAR, billing_anchor=utc(2024, 3, 1)
        )
    assert info.value.field == "billing_anchor"


def test_dst_boundaries_keep_local_wall_time() -> None:
    # daily at 09:00 New York: 14:00 UTC in winter (EST), 13:00 UTC after 10 Mar 2024 (EDT)
    schedule = BillingSchedule(
        anchor=local("America/New_York", 2024, 3, 9, 9),
        period=BillingPeriod.DAILY,
        timezone="America/New_York",
    )
    assert walk(schedule, 2) == [utc(2024, 3, 9, 14), utc(2024, 3, 10, 13), utc(2024, 3, 11, 13)]
    # that day is 23 hours long
    assert schedule.period_containing(utc(2024, 3, 10, 0)).seconds == 23 * 3600


def test_nonexistent_wall_time_moves_forward() -> None:
    # 02:30 does not exist on 10 Mar 2024 in New York; the boundary lands at 03:30 EDT (07:30 UTC)
    schedule = BillingSchedule(
        anchor=local("America/New_York", 2024, 3, 9, 2, 30),
        period=BillingPeriod.DAILY,
        timezone="America/New_York",
    )
    assert schedule.next_boundary(schedule.anchor) == utc(2024, 3, 10, 7, 30)
    assert schedule.boundary(2) == utc(2024, 3, 11, 6, 30)  # back to 02:30 EDT


def test_periods_and_end_date() -> None:
    schedule = BillingSchedule(anchor=utc(2024, 1, 15), period=M)
    # 15 Jan -> 20 Mar: three periods, the last reaching past the end
    assert schedule.periods(utc(2024, 1, 15), utc(2024, 3, 20)) == [
        Period(utc(2024, 1, 15), utc(2024, 2, 15)),
        Period(utc(2024, 2, 15), utc(2024, 3, 15)),
        Period(utc(2024, 3, 15), utc(2024, 4, 15)),
    ]
    # a subscription end date of 1 Apr cuts the last period
    assert schedule.periods(utc(2024, 1, 15), utc(2024, 6, 1), end_date=utc(2024, 4, 1))[-1] == (
        Period(utc(2024, 3, 15), utc(2024, 4, 1))
    )
    assert schedule.periods(utc(2024, 1, 15), utc(2024, 1, 15)) == []
    assert periods_between(utc(2024, 1, 20), utc(2024, 2, 1), anchor=utc(2024, 1, 15), period=M) == [
        Period(utc(2024, 1, 20), utc(2024, 2, 15))
    ]


def test_module_functions() -> None:
    kw: dict[str, Any] = {"anchor": utc(2024, 1, 31), "period": M}
    assert next_billing_date(utc(2024, 2, 29), **kw) == utc(2024, 3, 31)
    assert next_billing_date(utc(2024, 2, 29), end_date=utc(2024, 3, 10), **kw) == utc(2024, 3, 10)
    assert previous_billing_date(utc(2024, 3, 31), **kw) == utc(2024, 2, 29)
    assert previous_billing_date(utc(2024, 3, 30), **kw) == utc(2024, 2, 29)
    with pytest.raises(ValidationError) as info:
        next_billing_date(utc(2024, 2, 29), end_date=utc(2024, 2, 1), **kw)
    assert info.value.field == "end_date"


def test_ensure_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert ensure_utc(datetime(2024, 1, 1, 12, tzinfo=plus_two), "x") == utc(2024, 1, 1, 10)
    with pytest.raises(ValidationError) as info:
        ensure_utc(datetime(2024, 1, 1), "start_date")
    assert info.value.field == "start_date"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"anchor": datetime(2024, 1, 1)}, "billing_anchor"),  # naive
        ({"anchor": "2024-01-01"}, "billing_anchor"),
        ({"period": "ONETIME"}, "billing_period"),
        ({"period": "FORTNIGHTLY"}, "billing_period"),
        ({"count": 0}, "billing_period_count"),
        ({"count": True}, "billing_period_count"),
        ({"count": 1.0}, "billing_period_count"),
        ({"count": 1001}, "billing_period_count"),
        ({"cycle": "yearly"}, "billing_cycle"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"timezone": "../../etc/passwd"}, "timezone"),
        ({"timezone": ""}, "timezone"),
        ({"timezone": 5}, "timezone"),
    ],
)
def test_schedule_rejects(kwargs: dict[str, Any], field: str) -> None:
    base: dict[str, Any] = {"anchor": utc(2024, 1, 1), "period": M}
    base.update(kwargs)
    with pytest.raises(ValidationError) as info:
        BillingSchedule(**base)
    assert info.value.field == field


def test_period_rejects_empty_interval() -> None:
    with pytest.raises(ValidationError) as info:
        Period(utc(2024, 1, 2), utc(2024, 1, 1))
    assert info.value.field == "end"


def test_out_of_range_is_a_validation_error() -> None:
    schedule = BillingSchedule(anchor=utc(2024, 1, 1), period=BillingPeriod.ANNUAL, count=1000)
    with pytest.raises(ValidationError):
        schedule.next_boundary(datetime(9999, 6, 1, tzinfo=UTC))
    with pytest.raises(ValidationError):
        schedule.previous_boundary(datetime(1, 6, 1, tzinfo=UTC))


@settings(max_examples=80, deadline=None)
@given(bks.billing_schedules(), bks.instants())
def test_next_and_previous_are_inverse(schedule: BillingSchedule, instant: datetime) -> None:
    nxt = schedule.next_boundary(instant)
    prev = schedule.previous_boundary(nxt)
    assert nxt > instant
    assert prev <= instant
    assert schedule.next_boundary(prev) == nxt
    assert schedule.previous_boundary(nxt) == prev
    period = schedule.period_containing(instant)
    assert period.start == prev and period.end == nxt
    assert period.contains(instant)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([29, 30, 31]),
    st.integers(min_value=0, max_value=86399),
    st.sampled_from(bks.TIME_ZONES),
    st.sampled_from([M, BillingPeriod.QUARTERLY, BillingPeriod.HALF_YEARLY]),
)
def test_month_end_anchors_never_drift_over_48_months(
    day: int, second: int, zone: str, period: BillingPeriod
) -> None:
    anchor_local = datetime(2024, 1, day, tzinfo=ZoneInfo(zone)) + timedelta(seconds=second)
    schedule = BillingSchedule(anchor=anchor_local.astimezone(UTC), period=period, timezone=zone)
    boundaries = walk(schedule, 48)
    wall = anchor_local.replace(tzinfo=None)
    for boundary in boundaries:
        seen = boundary.astimezone(ZoneInfo(zone))
        last_day = (seen.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
        assert seen.day == min(day, last_day.day)  # clamped, then restored
        if seen.replace(tzinfo=None).time() != wall.time():
            # only a wall time inside a DST gap may move, and by at most the gap
            assert abs(
                datetime.combine(seen.date(), seen.time()) - datetime.combine(seen.date(), wall.time())
            ) <= timedelta(hours=1)


@settings(max_examples=40, deadline=None)
@given(bks.billing_schedules(), bks.instants(), st.integers(min_value=1, max_value=2000))
def test_periods_tile_the_interval(schedule: BillingSchedule, start: datetime, days: int) -> None:
    end = start + timedelta(days=days)
    periods = schedule.periods(start, end)
    assert periods[0].start == start
    assert periods[-1].start < end <= periods[-1].end
    for before, after in pairwise(periods):
        assert before.end == after.start
        assert after.start == schedule.period_containing(after.start).start


junk = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=20),
    st.datetimes(),
    st.datetimes(timezones=st.just(UTC)),
    st.sampled_from(list(BillingPeriod) + list(BillingCycle)),
    st.sampled_from(bks.TIME_ZONES),
)


@settings(max_examples=200, deadline=None)
@given(junk, junk, junk, junk, junk, junk)
def test_schedules_are_total(anchor: Any, period: Any, count: Any, cycle: Any, zone: Any, t: Any) -> None:
    try:
        schedule = BillingSchedule(anchor=anchor, period=period, count=count, cycle=cycle, timezone=zone)
    except ValidationError:
        return
    try:
        nxt = schedule.next_boundary(t)
    except ValidationError:
        return
    assert nxt > t


def test_period_multiple_counts_whole_billing_periods_only() -> None:
    assert period_multiple(BillingPeriod.ANNUAL, BillingPeriod.MONTHLY) == 12
    assert period_multiple(BillingPeriod.ANNUAL, BillingPeriod.MONTHLY, 3) == 4
    assert period_multiple(BillingPeriod.ANNUAL, BillingPeriod.MONTHLY, 5) is None  # not 5-month steps
    assert period_multiple(BillingPeriod.WEEKLY, BillingPeriod.DAILY) == 7
    assert period_multiple(BillingPeriod.MONTHLY, BillingPeriod.WEEKLY) is None  # months and days never mix
    assert period_multiple(BillingPeriod.MONTHLY, BillingPeriod.ANNUAL) is None


def test_bucket_count_counts_overlapping_buckets() -> None:
    def t(month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
        return datetime(2025, month, day, hour, minute, tzinfo=UTC)

    assert bucket_count(t(1, 1, 10, 30), t(1, 1, 13), BucketSize.HOUR) == 3  # 10:00, 11:00, 12:00
    assert bucket_count(t(1, 1), t(2, 1), BucketSize.DAY) == 31
    assert bucket_count(t(1, 15), t(3, 1), BucketSize.MONTH) == 2  # January, February
    assert bucket_count(t(1, 1), t(1, 1), BucketSize.DAY) == 0
