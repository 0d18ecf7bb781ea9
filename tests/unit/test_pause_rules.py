"""Pause rules (domain.pause_rules) and payment behaviour (domain.payment_behavior): tables of
worked examples with the dates beside them, and properties of the stretch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.pause_rules import (
    BillingImpact,
    interrupted_period,
    pause_window,
    status_at,
    stretched_period,
)
from billingkit.domain.payment_behavior import OpeningOutcome, charges_at_opening, opening_outcome
from billingkit.domain.periods import BillingCycle, BillingPeriod, Period
from billingkit.domain.subscription_pauses import PauseMode
from billingkit.domain.subscriptions import (
    CollectionMethod,
    PaymentBehavior,
    Subscription,
    SubscriptionStatus,
)
from billingkit.errors import InvalidOperation, ValidationError


def d(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


def sub(**fields: Any) -> Subscription:
    """Monthly anniversary from 1 May, current period [1 May, 1 Jun)."""
    values: dict[str, Any] = {
        "id": "subs_1",
        "tenant_id": "t",
        "environment_id": "e",
        "created_at": d(5, 1),
        "updated_at": d(5, 1),
        "created_by": "u",
        "updated_by": "u",
        "plan_id": "plan_1",
        "customer_id": "cust_1",
        "subscription_status": SubscriptionStatus.ACTIVE,
        "billing_period": BillingPeriod.MONTHLY,
        "billing_anchor": d(5, 1),
        "currency": "usd",
        "start_date": d(5, 1),
        "current_period_start": d(5, 1),
        "current_period_end": d(6, 1),
        **fields,
    }
    return Subscription(**values)


@pytest.mark.parametrize(
    ("mode", "start", "end", "days", "window"),
    [
        # immediate on 11 May: [11 May, 11 May + 10 days)
        (PauseMode.IMMEDIATE, None, None, 10, (d(5, 11), d(5, 21))),
        (PauseMode.IMMEDIATE, None, d(5, 13, 12), None, (d(5, 11), d(5, 13, 12))),
        (PauseMode.IMMEDIATE, None, None, None, (d(5, 11), None)),  # until resumed
        (PauseMode.SCHEDULED, d(5, 20), d(5, 25), None, (d(5, 20), d(5, 25))),
        (PauseMode.SCHEDULED, d(5, 20), None, 3, (d(5, 20), d(5, 23))),
        # period_end: at the current period's end, 1 Jun
        (PauseMode.PERIOD_END, None, None, 5, (d(6, 1), d(6, 6))),
        (PauseMode.PERIOD_END, None, None, None, (d(6, 1), None)),
    ],
)
def test_pause_windows(
    mode: PauseMode,
    start: datetime | None,
    end: datetime | None,
    days: int | None,
    window: tuple[datetime, datetime | None],
) -> None:
    got = pause_window(
        mode=mode,
        now=d(5, 11),
        current_period_end=d(6, 1),
        pause_start=start,
        pause_end=end,
        pause_days=days,
        end_date=None,
    )
    assert (got.start, got.end) == window


@pytest.mark.parametrize(
    ("mode", "start", "end", "days", "field"),
    [
        (PauseMode.IMMEDIATE, None, d(5, 11), None, "pause_end"),  # not after the start
        (PauseMode.IMMEDIATE, None, d(5, 1), None, "pause_end"),
        (PauseMode.IMMEDIATE, None, d(5, 20), 2, "pause_days"),  # both
        (PauseMode.IMMEDIATE, None, None, 0, "pause_days"),
        (PauseMode.IMMEDIATE, d(5, 20), None, None, "pause_start"),  # only for scheduled
        (PauseMode.PERIOD_END, d(6, 1), None, None, "pause_start"),
        (PauseMode.SCHEDULED, None, None, None, "pause_start"),  # required
        (PauseMode.SCHEDULED, d(5, 11), None, None, "pause_start"),  # not in the future
        (PauseMode.PERIOD_END, None, d(5, 31), None, "pause_end"),  # before 1 Jun
    ],
)
def test_bad_pause_windows(
    mode: PauseMode, start: datetime | None, end: datetime | None, days: int | None, field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        pause_window(
            mode=mode,
            now=d(5, 11),
            current_period_end=d(6, 1),
            pause_start=start,
            pause_end=end,
            pause_days=days,
            end_date=None,
        )
    assert caught.value.details["field"] == field


def test_a_pause_starting_at_the_end_date_is_refused() -> None:
    with pytest.raises(InvalidOperation):
        pause_window(
            mode=PauseMode.PERIOD_END,
            now=d(5, 11),
            current_period_end=d(6, 1),
            pause_start=None,
            pause_end=None,
            pause_days=None,
            end_date=d(6, 1),
        )


@pytest.mark.parametrize(
    ("period_end", "anchor", "cycle", "end_date", "paused", "after"),
    [
        # 1 Jun + 10 days; the anniversary anchor follows
        (d(6, 1), d(5, 1), BillingCycle.ANNIVERSARY, None, timedelta(days=10), (d(6, 11), d(6, 11))),
        # calendar boundaries stay
        (d(6, 1), d(6, 1), BillingCycle.CALENDAR, None, timedelta(days=10), (d(6, 11), d(6, 1))),
        # cut at end_date 5 Jun
        (d(6, 1), d(5, 1), BillingCycle.ANNIVERSARY, d(6, 5), timedelta(days=10), (d(6, 5), d(6, 5))),
        # nothing paused: nothing moves
        (d(6, 1), d(5, 1), BillingCycle.ANNIVERSARY, None, timedelta(0), (d(6, 1), d(5, 1))),
        # 5 days 12 hours
        (
            d(6, 1),
            d(5, 1),
            BillingCycle.ANNIVERSARY,
            None,
            timedelta(days=5, hours=12),
            (d(6, 6, 12), d(6, 6, 12)),
        ),
    ],
)
def test_stretched_periods(
    period_end: datetime,
    anchor: datetime,
    cycle: BillingCycle,
    end_date: datetime | None,
    paused: timedelta,
    after: tuple[datetime, datetime],
) -> None:
    got = stretched_period(
        period_end=period_end,
        billing_anchor=anchor,
        billing_cycle=cycle,
        end_date=end_date,
        pause_start=d(5, 11),
        resumed_at=d(5, 11) + paused,
    )
    assert got == after


@given(
    paused=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=400)),
    left=st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=31)),
    end_after=st.none() | st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=900)),
)
def test_the_stretch_gives_back_exactly_the_paused_time_within_the_end_date(
    paused: timedelta, left: timedelta, end_after: timedelta | None
) -> None:
    start = d(5, 11)
    period_end = start + left
    end_date = None if end_after is None else period_end + end_after
    end, anchor = stretched_period(
        period_end=period_end,
        billing_anchor=d(5, 1),
        billing_cycle=BillingCycle.ANNIVERSARY,
        end_date=end_date,
        pause_start=start,
        resumed_at=start + paused,
    )
    assert end == (period_end + paused if end_date is None else min(period_end + paused, end_date))
    assert end >= period_end
    assert anchor == (end if paused else d(5, 1))


def test_the_period_a_pause_interrupts() -> None:
    monthly = sub()
    assert interrupted_period(monthly, d(5, 11)) == Period(d(5, 1), d(6, 1))
    assert interrupted_period(monthly, d(6, 1)) == Period(d(6, 1), d(7, 1))  # period_end
    assert interrupted_period(monthly, d(7, 15)) == Period(d(7, 1), d(8, 1))
    assert interrupted_period(sub(end_date=d(6, 20)), d(6, 10)) == Period(d(6, 1), d(6, 20))


def test_status_by_pause_windows() -> None:
    past = [Period(d(5, 11), d(5, 21))]
    running = [Period(d(5, 20), datetime.max.replace(tzinfo=UTC))]
    active, paused = sub(), sub(subscription_status=SubscriptionStatus.PAUSED)
    assert status_at(active, past, d(5, 15)) is SubscriptionStatus.PAUSED
    assert status_at(active, past, d(5, 21)) is SubscriptionStatus.ACTIVE  # half-open
    assert status_at(paused, running, d(5, 1)) is SubscriptionStatus.ACTIVE  # due before it began
    assert status_at(paused, running, d(6, 1)) is SubscriptionStatus.PAUSED
    assert status_at(paused, [], d(5, 1)) is SubscriptionStatus.PAUSED  # no record: as it is
    cancelled = sub(subscription_status=SubscriptionStatus.CANCELLED)
    assert status_at(cancelled, past, d(5, 15)) is SubscriptionStatus.CANCELLED


def test_billing_impact() -> None:
    impact = BillingImpact.of(sub(), Period(d(5, 1), d(6, 1)), pause_start=d(5, 11), pause_end=d(5, 21))
    assert (impact.adjusted_period_end, impact.pause_duration_seconds) == (d(6, 11), 864000)
    assert impact.to_dict()["amount_invoiced"] == "0.00"
    jpy = BillingImpact.of(
        sub(currency="jpy"), Period(d(5, 1), d(6, 1)), pause_start=d(5, 11), pause_end=None
    )
    assert (jpy.adjusted_period_end, jpy.pause_duration_seconds, jpy.to_dict()["amount_credited"]) == (
        None,
        None,
        "0",
    )


A, DI, EI, DA = (
    PaymentBehavior.ALLOW_INCOMPLETE,
    PaymentBehavior.DEFAULT_INCOMPLETE,
    PaymentBehavior.ERROR_IF_INCOMPLETE,
    PaymentBehavior.DEFAULT_ACTIVE,
)


@pytest.mark.parametrize(
    ("behavior", "paid", "activation", "outcome"),
    [
        (DA, False, False, OpeningOutcome.ACTIVE),
        (DI, True, False, OpeningOutcome.ACTIVE),
        (DI, False, False, OpeningOutcome.INCOMPLETE),
        (A, False, False, OpeningOutcome.INCOMPLETE),
        (A, True, False, OpeningOutcome.ACTIVE),
        (EI, False, False, OpeningOutcome.REFUSED),
        (EI, False, True, OpeningOutcome.INCOMPLETE),  # a draft being activated exists already
        (EI, True, False, OpeningOutcome.ACTIVE),
    ],
)
def test_opening_outcomes(
    behavior: PaymentBehavior, paid: bool, activation: bool, outcome: OpeningOutcome
) -> None:
    assert opening_outcome(behavior, paid=paid, activation=activation) is outcome


def test_which_openings_are_charged() -> None:
    auto, send = CollectionMethod.CHARGE_AUTOMATICALLY, CollectionMethod.SEND_INVOICE
    assert [charges_at_opening(b, auto) for b in (A, EI, DA)] == [True, True, False]
    assert [charges_at_opening(b, send) for b in (DI, DA)] == [False, False]
