"""The pure rules of credit grants granted: periods, expiries, and what a status does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.catalog import CreditGrant, CreditGrantPeriod
from billingkit.domain.credit_grant_applications import ApplicationReason
from billingkit.domain.credit_grant_schedule import (
    Decision,
    Disposition,
    GrantPeriod,
    billing_cycle_end,
    decide,
    disposition,
    first_grant_period,
    grant_expiry,
    next_grant_period,
)
from billingkit.domain.periods import BillingCycle, BillingPeriod, BillingSchedule, Period
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.errors import ValidationError
from billingkit.testing import strategies as bks
from billingkit.testing.contracts.samples import sample


def at(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


def grant(**fields: Any) -> CreditGrant:
    defaults: dict[str, Any] = {
        "cadence": "RECURRING",
        "period": "MONTHLY",
        "period_count": 1,
        "expiration_type": "NEVER",
        "expiration_duration": None,
        "expiration_duration_unit": None,
    }
    return sample("credit_grants", **{**defaults, **fields})  # type: ignore[no-any-return]


def periods(
    g: CreditGrant, start: datetime, end: datetime | None = None, n: int = 10, tz: str = "UTC"
) -> list[Any]:
    """Up to ``n`` periods of ``g`` on a subscription from ``start`` (until ``end``)."""
    found: list[GrantPeriod] = []
    current = first_grant_period(g, subscription_start=start, subscription_end=end, timezone=tz)
    while current is not None and len(found) < n:
        found.append(current)
        current = next_grant_period(
            g, current.start, subscription_start=start, subscription_end=end, timezone=tz
        )
    return [(p.start, p.end, p.reason) for p in found]


FIRST = ApplicationReason.FIRST_TIME_RECURRING
NEXT = ApplicationReason.RECURRING


# -- periods -------------------------------------------------------------------------------------


def test_onetime_is_one_open_period_at_the_start() -> None:
    g = grant(cadence="ONETIME", period=None, period_count=None)
    assert periods(g, at(2024, 1, 1)) == [(at(2024, 1, 1), None, ApplicationReason.ONETIME)]


def test_onetime_waits_for_the_grant_start_and_never_comes_after_its_end() -> None:
    g = grant(cadence="ONETIME", period=None, period_count=None, start_date=at(2024, 1, 15))
    assert periods(g, at(2024, 1, 1)) == [(at(2024, 1, 15), None, ApplicationReason.ONETIME)]
    ended = grant(cadence="ONETIME", period=None, period_count=None, end_date=at(2023, 12, 1))
    assert periods(ended, at(2024, 1, 1)) == []
    # ... nor once the subscription has ended.
    assert periods(g, at(2024, 1, 1), end=at(2024, 1, 10)) == []


@pytest.mark.parametrize(
    ("fields", "start", "expected"),
    [
        # Monthly from 1 Jan: one period a month, the first "first time".
        (
            {},
            at(2024, 1, 1),
            [
                (at(2024, 1, 1), at(2024, 2, 1), FIRST),
                (at(2024, 2, 1), at(2024, 3, 1), NEXT),
                (at(2024, 3, 1), at(2024, 4, 1), NEXT),
            ],
        ),
        # From 31 Jan: the day clamps in February and comes back in March.
        (
            {},
            at(2024, 1, 31, 10),
            [
                (at(2024, 1, 31, 10), at(2024, 2, 29, 10), FIRST),
                (at(2024, 2, 29, 10), at(2024, 3, 31, 10), NEXT),
                (at(2024, 3, 31, 10), at(2024, 4, 30, 10), NEXT),
            ],
        ),
        # Every two quarters.
        (
            {"period": "QUARTERLY", "period_count": 2},
            at(2024, 1, 1),
            [
                (at(2024, 1, 1), at(2024, 7, 1), FIRST),
                (at(2024, 7, 1), at(2025, 1, 1), NEXT),
                (at(2025, 1, 1), at(2025, 7, 1), NEXT),
            ],
        ),
        # Weekly and daily.
        (
            {"period": "WEEKLY"},
            at(2024, 1, 3),
            [
                (at(2024, 1, 3), at(2024, 1, 10), FIRST),
                (at(2024, 1, 10), at(2024, 1, 17), NEXT),
                (at(2024, 1, 17), at(2024, 1, 24), NEXT),
            ],
        ),
        (
            {"period": "DAILY", "period_count": 2},
            at(2024, 2, 28),
            [
                (at(2024, 2, 28), at(2024, 3, 1), FIRST),
                (at(2024, 3, 1), at(2024, 3, 3), NEXT),
                (at(2024, 3, 3), at(2024, 3, 5), NEXT),
            ],
        ),
        # A grant starting later than the subscription anchors its periods on its own start.
        (
            {"start_date": at(2024, 1, 10)},
            at(2024, 1, 1),
            [
                (at(2024, 1, 10), at(2024, 2, 10), FIRST),
                (at(2024, 2, 10), at(2024, 3, 10), NEXT),
                (at(2024, 3, 10), at(2024, 4, 10), NEXT),
            ],
        ),
        # The grant's end cuts the period holding it, and none starts at or after it.
        (
            {"end_date": at(2024, 3, 15)},
            at(2024, 1, 1),
            [
                (at(2024, 1, 1), at(2024, 2, 1), FIRST),
                (at(2024, 2, 1), at(2024, 3, 1), NEXT),
                (at(2024, 3, 1), at(2024, 3, 15), NEXT),
            ],
        ),
        (
            {"end_date": at(2024, 3, 1)},
            at(2024, 1, 1),
            [
                (at(2024, 1, 1), at(2024, 2, 1), FIRST),
                (at(2024, 2, 1), at(2024, 3, 1), NEXT),
            ],
        ),
    ],
)
def test_recurring_periods(fields: dict[str, Any], start: datetime, expected: list[Any]) -> None:
    # An open-ended grant has periods for ever: compare the first few; one with an end has no more.
    n = 10 if "end_date" in fields else len(expected)
    assert periods(grant(**fields), start, n=n) == expected


def test_the_subscription_end_cuts_like_the_grant_end_and_the_earlier_one_wins() -> None:
    g = grant(end_date=at(2024, 5, 1))
    assert periods(g, at(2024, 1, 1), end=at(2024, 2, 20)) == [
        (at(2024, 1, 1), at(2024, 2, 1), FIRST),
        (at(2024, 2, 1), at(2024, 2, 20), NEXT),
    ]


def test_periods_follow_the_subscription_time_zone() -> None:
    # Monthly from 1 Mar 00:00 in Berlin (23:00 UTC the day before, winter time): the next
    # boundary is 1 Apr 00:00 Berlin = 31 Mar 22:00 UTC (summer time).
    start = datetime(2024, 2, 29, 23, tzinfo=UTC)
    assert periods(grant(), start, n=1, tz="Europe/Berlin") == [
        (start, datetime(2024, 3, 31, 22, tzinfo=UTC), FIRST)
    ]


@settings(max_examples=60, deadline=None)
@given(
    start=bks.instants(max_value=datetime(2050, 1, 1, tzinfo=UTC)),
    period=st.sampled_from(list(CreditGrantPeriod)),
    count=st.integers(min_value=1, max_value=4),
    end_after=st.none() | st.integers(min_value=1, max_value=3 * 366 * 86400),
)
def test_periods_tile_the_grant_window_without_gaps(
    start: datetime, period: CreditGrantPeriod, count: int, end_after: int | None
) -> None:
    end = None if end_after is None else start + timedelta(seconds=end_after)
    found = periods(grant(period=period.value, period_count=count), start, end=end, n=40)
    assert found[0][0] == start and found[0][2] is FIRST
    assert all(reason is NEXT for _, _, reason in found[1:])
    for (_, end_a, _), (start_b, _, _) in pairwise(found):
        assert end_a == start_b  # contiguous
    for s, e, _ in found:
        assert s < e
        if end is not None:
            assert e <= end  # never past the end
    if end is not None and len(found) < 40:
        assert found[-1][1] == end  # the last one reaches the end


# -- expiry --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "period_start", "expected"),
    [
        ({"expiration_type": "NEVER"}, at(2024, 1, 31, 10), None),
        (
            {"expiration_type": "DURATION", "expiration_duration": 2, "expiration_duration_unit": "DAY"},
            at(2024, 1, 31, 10),
            at(2024, 2, 2, 10),
        ),
        (
            {"expiration_type": "DURATION", "expiration_duration": 1, "expiration_duration_unit": "WEEK"},
            at(2024, 1, 31, 10),
            at(2024, 2, 7, 10),
        ),
        (
            {"expiration_type": "DURATION", "expiration_duration": 1, "expiration_duration_unit": "MONTH"},
            at(2024, 1, 31, 10),
            at(2024, 2, 29, 10),
        ),
        (
            {"expiration_type": "DURATION", "expiration_duration": 3, "expiration_duration_unit": "MONTH"},
            at(2024, 11, 30),
            at(2025, 2, 28),
        ),
        (
            {"expiration_type": "DURATION", "expiration_duration": 1, "expiration_duration_unit": "YEAR"},
            at(2024, 2, 29),
            at(2025, 2, 28),
        ),
    ],
)
def test_expiry(fields: dict[str, Any], period_start: datetime, expected: datetime | None) -> None:
    assert grant_expiry(grant(**fields), period_start) == expected


def test_days_are_24_hours_across_a_daylight_saving_change() -> None:
    # 30 Mar 2024 12:00 UTC + 1 DAY is 31 Mar 12:00 UTC, whatever the clocks in Europe did.
    g = grant(expiration_type="DURATION", expiration_duration=1, expiration_duration_unit="DAY")
    assert grant_expiry(g, at(2024, 3, 30, 12)) == at(2024, 3, 31, 12)


def test_billing_cycle_expiry_is_the_given_cycle_end() -> None:
    g = grant(expiration_type="BILLING_CYCLE")
    assert grant_expiry(g, at(2024, 1, 31, 10), cycle_end=at(2024, 2, 29, 10)) == at(2024, 2, 29, 10)
    with pytest.raises(ValidationError) as err:
        grant_expiry(g, at(2024, 1, 31, 10))
    assert err.value.field == "cycle_end"


def test_billing_cycle_end() -> None:
    monthly = BillingSchedule(anchor=at(2024, 1, 31, 10), period=BillingPeriod.MONTHLY)
    assert billing_cycle_end(monthly, at(2024, 1, 31, 10)) == at(2024, 2, 29, 10)
    assert billing_cycle_end(monthly, at(2024, 2, 29, 10)) == at(2024, 3, 31, 10)
    assert billing_cycle_end(monthly, at(2024, 3, 15)) == at(2024, 3, 31, 10)
    # Calendar billing started 10 Jan: the current stub [10 Jan, 1 Feb) is not on the lattice.
    calendar = BillingSchedule(
        anchor=at(2024, 2, 1), period=BillingPeriod.MONTHLY, cycle=BillingCycle.CALENDAR
    )
    stub = Period(at(2024, 1, 10), at(2024, 2, 1))
    assert billing_cycle_end(calendar, at(2024, 1, 20), current=stub) == at(2024, 2, 1)
    assert billing_cycle_end(calendar, at(2024, 2, 15), current=stub) == at(2024, 3, 1)
    # A trial window as the current period: its end.
    trial = Period(at(2024, 1, 10), at(2024, 1, 24))
    assert billing_cycle_end(monthly, at(2024, 1, 10), current=trial) == at(2024, 1, 24)
    # Never after the subscription's end.
    assert billing_cycle_end(monthly, at(2024, 3, 1), end_date=at(2024, 3, 20)) == at(2024, 3, 20)


# -- status at processing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (SubscriptionStatus.ACTIVE, Disposition.APPLY),
        (SubscriptionStatus.TRIALING, Disposition.APPLY),
        (SubscriptionStatus.DRAFT, Disposition.DEFER),
        (SubscriptionStatus.INCOMPLETE, Disposition.DEFER),
        (SubscriptionStatus.PAUSED, Disposition.SKIP),
        (SubscriptionStatus.CANCELLED, Disposition.CANCEL),
    ],
)
def test_disposition_by_status(status: SubscriptionStatus, expected: Disposition) -> None:
    assert disposition(status) is expected


NOW = at(2024, 2, 2)


@pytest.mark.parametrize(
    ("status", "expiry", "expected"),
    [
        (SubscriptionStatus.CANCELLED, None, Decision(Disposition.CANCEL, "subscription cancelled")),
        (
            SubscriptionStatus.CANCELLED,
            at(2024, 1, 1),
            Decision(Disposition.CANCEL, "subscription cancelled"),
        ),
        (
            SubscriptionStatus.ACTIVE,
            at(2024, 2, 1),
            Decision(
                Disposition.SKIP, "credits expired at 2024-02-01T00:00:00+00:00 before they were granted"
            ),
        ),
        # Expiring exactly now is expired: nothing could be consumed.
        (
            SubscriptionStatus.TRIALING,
            NOW,
            Decision(
                Disposition.SKIP, "credits expired at 2024-02-02T00:00:00+00:00 before they were granted"
            ),
        ),
        (
            SubscriptionStatus.INCOMPLETE,
            at(2024, 1, 5),
            Decision(
                Disposition.SKIP, "credits expired at 2024-01-05T00:00:00+00:00 before they were granted"
            ),
        ),
        (
            SubscriptionStatus.INCOMPLETE,
            at(2024, 3, 1),
            Decision(Disposition.DEFER, "subscription incomplete"),
        ),
        (SubscriptionStatus.DRAFT, None, Decision(Disposition.DEFER, "subscription draft")),
        (SubscriptionStatus.PAUSED, None, Decision(Disposition.SKIP, "subscription paused")),
        (SubscriptionStatus.ACTIVE, at(2024, 3, 1), Decision(Disposition.APPLY)),
        (SubscriptionStatus.TRIALING, None, Decision(Disposition.APPLY)),
    ],
)
def test_decide(status: SubscriptionStatus, expiry: datetime | None, expected: Decision) -> None:
    assert decide(status, expiry, NOW) == expected
