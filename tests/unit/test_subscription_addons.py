"""Add-ons on subscriptions, the pure rules: line windows by cadence, the onetime period, when an
association is in force, where a removal ends it, and combined allowances (worked examples and
properties)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.addon_associations import AddonCadence
from billingkit.domain.allowances import Allowance, apply_allowance, combined_allowance
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import BillingPeriod, BillingSchedule, Period
from billingkit.domain.subscription_addons import in_force, line_window, onetime_period, removal_end
from billingkit.errors import ValidationError

D = Decimal


def at(month: int, day: int) -> datetime:
    return datetime(2026, month, day, tzinfo=UTC)


MAY = Period(at(5, 1), at(6, 1))
MONTHLY = BillingSchedule(anchor=at(1, 1), period=BillingPeriod.MONTHLY)
RECURRING, ONETIME = AddonCadence.RECURRING, AddonCadence.ONETIME
FIXED, USAGE = PriceType.FIXED, PriceType.USAGE


@pytest.mark.parametrize(
    ("start", "period"),
    [
        (at(5, 10), MAY),  # inside the current period
        (at(5, 1), MAY),  # at its start
        (at(6, 5), Period(at(6, 1), at(7, 1))),  # a later period, from the schedule
        (at(6, 1), Period(at(6, 1), at(7, 1))),  # the current period's end is the next one's start
    ],
)
def test_onetime_period(start: datetime, period: Period) -> None:
    assert onetime_period(start, MAY, MONTHLY) == period


def test_onetime_period_of_a_stub_is_the_stub() -> None:
    stub = Period(at(5, 15), at(6, 1))  # a calendar first period
    assert onetime_period(at(5, 20), stub, MONTHLY) == stub


@pytest.mark.parametrize(
    ("cadence", "price_type", "start", "period", "price_start", "price_end", "window"),
    [
        (RECURRING, FIXED, at(5, 10), None, None, None, (at(5, 10), None)),
        (RECURRING, USAGE, at(5, 10), None, None, at(8, 1), (at(5, 10), at(8, 1))),  # the price ends
        (RECURRING, FIXED, at(5, 10), None, at(5, 20), None, (at(5, 20), None)),  # the price starts later
        (ONETIME, FIXED, at(5, 10), MAY, None, None, (at(5, 1), at(6, 1))),  # the whole period: in full
        (ONETIME, USAGE, at(5, 10), MAY, None, None, (at(5, 10), at(6, 1))),  # usage from its start
        (ONETIME, FIXED, at(5, 10), MAY, None, at(5, 25), (at(5, 1), at(5, 25))),
    ],
)
def test_line_windows(
    cadence: AddonCadence,
    price_type: PriceType,
    start: datetime,
    period: Period | None,
    price_start: datetime | None,
    price_end: datetime | None,
    window: tuple[datetime, datetime | None],
) -> None:
    got = line_window(cadence, price_type, start, period, price_start=price_start, price_end=price_end)
    assert got == window


def test_a_onetime_line_needs_its_period() -> None:
    with pytest.raises(ValidationError) as caught:
        line_window(ONETIME, FIXED, at(5, 10), None)
    assert caught.value.field == "cadence"


@pytest.mark.parametrize(
    ("start", "end", "window", "expected"),
    [
        (at(5, 10), at(6, 1), MAY, True),  # part of May
        (at(5, 10), at(6, 1), Period(at(6, 1), at(7, 1)), False),  # ended with May
        (at(5, 10), None, Period(at(7, 1), at(8, 1)), True),  # open
        (at(6, 5), None, MAY, False),  # not started in May
        (at(5, 10), at(5, 10), MAY, False),  # removed at its start: never in force
        (at(4, 1), at(5, 1), MAY, False),  # ended at May's start
    ],
)
def test_in_force(start: datetime, end: datetime | None, window: Period, expected: bool) -> None:
    assert in_force(start, end, window.start, window.end) is expected


def test_removal_end() -> None:
    assert removal_end(at(6, 1), at(5, 10)) == at(6, 1)
    assert removal_end(at(6, 1), at(6, 5)) == at(6, 5)  # removed before it started: ends at its start


@pytest.mark.parametrize(
    ("sources", "usage", "billable"),
    [
        ([Allowance(D(1000), is_soft_limit=True), Allowance(D(500), is_soft_limit=True)], "1800", "300"),
        ([Allowance(D(1000)), Allowance(D(500), is_soft_limit=True)], "1800", "300"),  # soft if any is
        ([Allowance(D(1000)), Allowance(D(500))], "1800", "0"),  # hard: overage not billed
        ([Allowance(D(1000), is_soft_limit=True), Allowance(None)], "99999", "0"),  # unlimited wins
        ([Allowance(D(1000), is_enabled=False), Allowance(D(200), is_soft_limit=True)], "500", "300"),
        ([Allowance(D(1000), is_enabled=False), Allowance(D(200), is_enabled=False)], "500", "500"),
    ],
)
def test_combined_allowances(sources: list[Allowance], usage: str, billable: str) -> None:
    combined = combined_allowance(sources)
    assert combined is not None
    assert apply_allowance(combined, D(usage)).billable == D(billable)


def test_combining_nothing_or_one() -> None:
    assert combined_allowance([]) is None
    one = Allowance(D(7), is_soft_limit=True)
    assert combined_allowance([one]) is one
    with pytest.raises(ValidationError):
        combined_allowance(["100"])  # type: ignore[list-item]


limits = st.one_of(st.none(), st.integers(min_value=0, max_value=10_000).map(D))
allowances = st.builds(Allowance, limits, is_soft_limit=st.booleans(), is_enabled=st.booleans())


@given(st.lists(allowances, min_size=2, max_size=5), st.integers(min_value=0, max_value=50_000).map(D))
def test_combined_limits_add_up_and_unlimited_wins(given_sources: list[Allowance], usage: Decimal) -> None:
    combined = combined_allowance(given_sources)
    assert combined is not None
    enabled = [a for a in given_sources if a.is_enabled]
    assert combined.is_enabled is bool(enabled)
    if not enabled:
        assert apply_allowance(combined, usage).billable == usage
        return
    if any(a.usage_limit is None for a in enabled):
        assert combined.usage_limit is None
    else:
        assert combined.usage_limit == sum((a.usage_limit or D(0) for a in enabled), D(0))
    assert combined.is_soft_limit is any(a.is_soft_limit for a in enabled)
    assert D(0) <= apply_allowance(combined, usage).billable <= usage
