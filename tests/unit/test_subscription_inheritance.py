"""Hierarchy rules (domain.subscription_inheritance): the type a request implies, where a child
starts, how it follows its parent, and which charges of a grouped child a parent's invoice bills,
each row with its dates worked out beside it; and a property: walking a grouped child through any
number of its parent's periods bills every instant of each line once."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import BillingPeriod, BillingSchedule, InvoiceCadence, Period
from billingkit.domain.renewals import plan_due
from billingkit.domain.subscription_inheritance import (
    MemberState,
    child_standing,
    follow_parent,
    implied_type,
    is_child,
)
from billingkit.domain.subscriptions import (
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.errors import ValidationError

ADVANCE, ARREAR = InvoiceCadence.ADVANCE, InvoiceCadence.ARREAR


def d(month: int, day: int) -> datetime:
    """An instant of 2026 in UTC."""
    return datetime(2026, month, day, tzinfo=UTC)


def line(
    line_id: str, cadence: InvoiceCadence, price_type: PriceType, start: datetime
) -> SubscriptionLineItem:
    return SubscriptionLineItem(
        id=line_id,
        subscription_id="subs_child",
        customer_id="cust_child",
        entity_id="plan_1",
        price_id=f"price_{line_id}",
        price_type=price_type,
        quantity=Decimal(1),
        currency="usd",
        billing_period=BillingPeriod.MONTHLY,
        invoice_cadence=cadence,
        start_date=start,
    )


def sub(**fields: Any) -> Subscription:
    base: dict[str, Any] = {
        "id": "subs_parent",
        "tenant_id": "t",
        "environment_id": "e",
        "created_at": d(1, 1),
        "updated_at": d(1, 1),
        "created_by": "u",
        "updated_by": "u",
        "plan_id": "plan_1",
        "customer_id": "cust_parent",
        "subscription_status": SubscriptionStatus.ACTIVE,
        "billing_period": BillingPeriod.MONTHLY,
        "billing_anchor": d(1, 1),
        "currency": "usd",
        "start_date": d(1, 1),
        "current_period_start": d(1, 1),
        "current_period_end": d(2, 1),
        "next_run_at": d(2, 1),
    }
    return Subscription(**{**base, **fields})


def child(start: datetime | None = None, sequence: int = 0, **fields: Any) -> Subscription:
    """A grouped child from ``start`` (16 Jan) with a fee in advance and calls in arrears."""
    start = start or d(1, 16)
    return sub(
        id="subs_child",
        customer_id="cust_child",
        subscription_type=SubscriptionType.GROUPED_INVOICING,
        parent_subscription_id="subs_parent",
        start_date=start,
        current_period_start=start,
        billing_sequence=sequence,
        next_run_at=None,
        line_items=(
            line("fee", ADVANCE, PriceType.FIXED, start),
            line("calls", ARREAR, PriceType.USAGE, start),
        ),
        **fields,
    )


@pytest.mark.parametrize(
    ("has_parent", "has_children", "payer", "expected"),
    [
        (False, False, False, SubscriptionType.STANDALONE),
        (False, False, True, SubscriptionType.DELEGATED_INVOICING),
        (False, True, False, SubscriptionType.PARENT),
        (False, True, True, SubscriptionType.PARENT),  # a parent billed to another customer
        (True, False, False, SubscriptionType.GROUPED_INVOICING),
    ],
)
def test_implied_type(has_parent: bool, has_children: bool, payer: bool, expected: SubscriptionType) -> None:
    assert (
        implied_type(has_parent=has_parent, has_children=has_children, has_invoicing_customer=payer)
        is expected
    )


@pytest.mark.parametrize(
    ("has_children", "payer", "field"),
    [
        (True, False, "inheritance.parent_subscription_id"),
        (False, True, "inheritance.invoicing_customer_external_id"),
    ],
)
def test_a_child_refuses_children_and_a_payer(has_children: bool, payer: bool, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        implied_type(has_parent=True, has_children=has_children, has_invoicing_customer=payer)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("start", "period"),
    [
        (d(1, 16), (d(1, 16), d(2, 1))),  # inside the parent's [1 Jan, 1 Feb): a first stub
        (d(1, 1), (d(1, 1), d(2, 1))),  # with the parent: its whole period
        (d(2, 3), (d(1, 1), d(2, 1))),  # after it (the parent's run is late): the parent's period
    ],
)
def test_a_child_starts_in_its_parents_period(start: datetime, period: tuple[datetime, datetime]) -> None:
    parent = sub(subscription_status=SubscriptionStatus.TRIALING, trial_start=d(1, 1), trial_end=d(2, 1))
    fields = child_standing(parent, start=start)
    assert (fields["current_period_start"], fields["current_period_end"]) == period
    assert (fields["subscription_status"], fields["trial_end"], fields["next_run_at"]) == (
        SubscriptionStatus.TRIALING,
        d(2, 1),
        None,
    )
    assert fields["billing_sequence"] == 0


def test_children_follow_their_parent_and_end_with_it() -> None:
    moved = sub(current_period_start=d(2, 1), current_period_end=d(3, 1), billing_anchor=d(1, 1))
    fields = follow_parent(child(), moved, billed=True)
    assert (fields["current_period_start"], fields["current_period_end"], fields["billing_sequence"]) == (
        d(2, 1),
        d(3, 1),
        1,
    )
    ended = sub(subscription_status=SubscriptionStatus.CANCELLED, cancelled_at=d(2, 1))
    gone = follow_parent(child(end_date=None), ended, billed=False)
    assert (gone["subscription_status"], gone["cancelled_at"], gone["end_date"]) == (
        SubscriptionStatus.CANCELLED,
        d(2, 1),
        d(2, 1),
    )
    assert "billing_sequence" not in gone


def test_children_have_no_due_work() -> None:
    grouped = child()
    assert is_child(grouped) and not is_child(sub())
    planned = plan_due(grouped.model_copy(update={"next_run_at": d(2, 1)}), d(2, 5))
    assert (planned.steps, planned.changes) == ((), {"next_run_at": None})


def shown(lines: tuple[SubscriptionLineItem, ...]) -> list[tuple[str, str, datetime | None]]:
    return [(item.id, item.invoice_cadence.value, item.start_date) for item in lines]


def test_member_lines_of_a_new_child() -> None:
    # Child from 16 Jan, never billed: usage from 16 Jan, the fee for February as usual, and the
    # fee again in arrears from 16 Jan (its first stub, [16 Jan, 1 Feb)).
    state = MemberState.of(child())
    assert state == MemberState(d(1, 16), d(1, 16))
    january, february = Period(d(1, 1), d(2, 1)), Period(d(2, 1), d(3, 1))
    billed = state.lines(child(), reference_point="period_end", period=january, next_period=february)
    assert shown(billed) == [
        ("fee", "ADVANCE", d(1, 16)),
        ("calls", "ARREAR", d(1, 16)),
        ("fee", "ARREAR", d(1, 16)),
    ]
    after = state.after(reference_point="period_end", period=january, next_period=february)
    assert after == MemberState(d(2, 1), d(3, 1))
    # February: nothing owed from before.
    again = after.lines(
        child(), reference_point="period_end", period=february, next_period=Period(d(3, 1), d(4, 1))
    )
    assert shown(again) == [("fee", "ADVANCE", d(1, 16)), ("calls", "ARREAR", d(1, 16))]


def test_member_lines_of_a_converted_child_paid_ahead_and_behind() -> None:
    # Joined 20 Jan (its usage invoiced up to then) with its fee paid to 10 Feb; the parent's
    # period is [20 Jan, 20 Feb): usage of that period (its window starts 20 Jan anyway), the fee of
    # [10 Feb, 20 Feb) in arrears, and the next period's fee as usual.
    joined = child(start=d(1, 10), sequence=1, current_period_end=d(2, 10)).model_copy(
        update={"current_period_start": d(1, 20)}
    )
    state = MemberState.of(joined)
    assert state == MemberState(d(1, 20), d(2, 10))
    period, following = Period(d(1, 20), d(2, 20)), Period(d(2, 20), d(3, 20))
    billed = state.lines(joined, reference_point="period_end", period=period, next_period=following)
    assert shown(billed) == [
        ("fee", "ADVANCE", d(1, 10)),
        ("calls", "ARREAR", d(1, 10)),
        ("fee", "ARREAR", d(2, 10)),
    ]
    # Paid beyond the parent's period end (10 Mar > 1 Mar): the next period's fee starts there.
    ahead = MemberState(d(1, 20), d(3, 10))
    billed = ahead.lines(
        joined,
        reference_point="period_end",
        period=Period(d(2, 1), d(3, 1)),
        next_period=Period(d(3, 1), d(4, 1)),
    )
    assert shown(billed) == [("fee", "ADVANCE", d(3, 10)), ("calls", "ARREAR", d(1, 10))]


def test_member_lines_at_a_trial_end() -> None:
    # The parent's trial ends 15 Jan: its first paid period [15 Jan, 15 Feb) in advance; the
    # child's usage during the trial is not billed, and no stub is owed.
    state = MemberState.of(child(start=d(1, 1)))
    first = Period(d(1, 15), d(2, 15))
    billed = state.lines(child(start=d(1, 1)), reference_point="period_start", period=first, next_period=None)
    assert shown(billed) == [("fee", "ADVANCE", d(1, 1)), ("calls", "ARREAR", d(1, 1))]
    assert state.after(reference_point="period_start", period=first, next_period=None) == MemberState(
        d(1, 15), d(2, 15)
    )


def _charged(
    item: SubscriptionLineItem, reference_point: str, period: Period, following: Period | None
) -> list[tuple[datetime, datetime]]:
    """The windows the invoice assembly charges ``item`` for (each clipped to its own start)."""
    if item.invoice_cadence is ARREAR:
        windows = [period] if reference_point == "period_end" else []
    else:
        window = period if reference_point == "period_start" else following
        windows = [window] if window is not None else []
    start = item.start_date or period.start
    return [(max(w.start, start), w.end) for w in windows if max(w.start, start) < w.end]


@given(joined_day=st.integers(min_value=1, max_value=27), months=st.integers(min_value=1, max_value=8))
def test_every_instant_of_a_childs_fee_is_billed_once(joined_day: int, months: int) -> None:
    schedule = BillingSchedule.for_start(d(1, 1), period=BillingPeriod.MONTHLY)
    start = d(1, joined_day)
    member = child(start=start)
    state = MemberState.of(member)
    fee_windows: list[tuple[datetime, datetime]] = []
    period = Period(d(1, 1), d(2, 1))
    for _ in range(months):
        following = schedule.first_period(period.end)
        for item in state.lines(member, reference_point="period_end", period=period, next_period=following):
            if item.id == "fee":
                fee_windows += _charged(item, "period_end", period, following)
        state = state.after(reference_point="period_end", period=period, next_period=following)
        period = following
    fee_windows.sort()
    # Contiguous from the child's start to the end of the last period billed in advance, no overlap.
    assert fee_windows[0][0] == start
    assert all(a[1] == b[0] for a, b in pairwise(fee_windows))
    assert fee_windows[-1][1] == period.end
