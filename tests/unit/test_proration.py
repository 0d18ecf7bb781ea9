"""Proration: worked examples, caps and the split property."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.periods import BillingCycle, BillingPeriod, BillingSchedule, Period
from billingkit.domain.pricing import BillingModel, PriceSpec, Tier, TierMode, price_quantity
from billingkit.domain.proration import (
    InvoiceCadence,
    ProratedItem,
    ProrationAction,
    prorate_change,
    prorate_charge,
    prorate_credit,
    proration_coefficient,
    stub_coefficient,
    stub_reference_period,
)
from billingkit.errors import ValidationError
from billingkit.testing import strategies as bks

D = Decimal
APRIL = Period(datetime(2024, 4, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC))  # 30 days


def day(n: float) -> datetime:
    return APRIL.start + timedelta(days=n)


def flat(amount: str, currency: str = "usd") -> PriceSpec:
    return PriceSpec(billing_model=BillingModel.FLAT_FEE, amount=D(amount), currency=currency)


def item(amount: str, quantity: int | str, cadence: str = "ADVANCE") -> ProratedItem:
    return ProratedItem(flat(amount), D(quantity), InvoiceCadence(cadence))


@pytest.mark.parametrize(
    ("at", "remaining", "total", "value"),
    [
        (day(0), 2592000, 2592000, "1"),  # at the start: the whole period left
        (day(10), 1728000, 2592000, "0.6666666666666666666666666667"),  # 20 of 30 days
        (day(15), 1296000, 2592000, "0.5"),  # half
        (day(30), 0, 2592000, "0"),  # at the end: nothing left
        (day(45), 0, 2592000, "0"),  # after the end: floored at 0
        (day(10) + timedelta(microseconds=900000), 1728000, 2592000, None),  # truncated seconds
    ],
)
def test_coefficient(at: datetime, remaining: int, total: int, value: str | None) -> None:
    c = proration_coefficient(APRIL, at)
    assert (c.remaining_seconds, c.period_seconds) == (remaining, total)
    if value is not None:
        assert c.value == D(value)


@pytest.mark.parametrize(
    ("action", "old", "new", "at", "credit", "charge", "net"),
    [
        # 2 -> 5 seats at 10.00, half left: credit 20*0.5 = 10.00, charge 50*0.5 = 25.00
        ("quantity_change", item("10", 2), item("10", 5), day(15), "10.00", "25.00", "15.00"),
        # upgrade 30.00 -> 90.00, 20 of 30 days left: credit 20.00, charge 60.00
        ("upgrade", item("30", 1), item("90", 1), day(10), "20.00", "60.00", "40.00"),
        # downgrade 90.00 -> 30.00, 20 of 30 days left: credit 60.00, charge 20.00, net -40.00
        ("downgrade", item("90", 1), item("30", 1), day(10), "60.00", "20.00", "-40.00"),
        # add a 10.00 item with 1/3 left: 10 * 1/3 = 3.333.. -> 3.33
        ("add_item", None, item("10", 1), day(20), None, "3.33", "3.33"),
        # remove a 10.00 item with 2/3 left: 6.666.. -> 6.67
        ("remove_item", item("10", 1), None, day(10), "6.67", None, "-6.67"),
        # immediate cancellation, 29 of 30 days left: 100 * 29/30 = 96.666.. -> 96.67
        ("cancellation", item("100", 1), None, day(1), "96.67", None, "-96.67"),
        # ARREAR items: no credit, no charge now
        ("cancellation", item("100", 1, "ARREAR"), None, day(1), None, None, "0"),
        ("upgrade", item("30", 1, "ARREAR"), item("90", 1, "ARREAR"), day(10), None, None, "0"),
    ],
)
def test_change_examples(
    action: str,
    old: ProratedItem | None,
    new: ProratedItem | None,
    at: datetime,
    credit: str | None,
    charge: str | None,
    net: str,
) -> None:
    result = prorate_change(ProrationAction(action), APRIL, at, old=old, new=new)
    assert (None if result.credit is None else result.credit.amount) == (
        None if credit is None else D(credit)
    )
    assert (None if result.charge is None else result.charge.amount) == (
        None if charge is None else D(charge)
    )
    assert result.net == D(net)


def test_credit_is_capped_by_what_was_billed() -> None:
    # billed 60.00 (a discounted 100.00 item), 29/30 left: 96.67 capped at 60.00
    line = prorate_credit(item("100", 1), APRIL, day(1), amount_billed=D("60.00"))
    assert line is not None
    assert line.amount == D("60.00") and line.capped
    # 30.00 already credited earlier: at most 30.00 more
    line = prorate_credit(
        item("100", 1), APRIL, day(1), amount_billed=D("60.00"), already_credited=D("30.00")
    )
    assert line is not None and line.amount == D("30.00")
    # more already credited than billed: nothing
    line = prorate_credit(item("100", 1), APRIL, day(1), amount_billed=D("60.00"), already_credited=D("80"))
    assert line is not None and line.amount == D("0.00")
    assert line.signed_amount == D("0.00")


def test_tiered_prices_prorate_their_full_amount() -> None:
    # SLAB 150 units = 100*0.10 + 50*0.08 = 14.00; half the period left -> 7.00
    spec = PriceSpec(
        billing_model=BillingModel.TIERED,
        amount=D(0),
        currency="usd",
        tier_mode=TierMode.SLAB,
        tiers=(Tier(100, D("0.10")), Tier(None, D("0.08"))),
    )
    line = prorate_charge(ProratedItem(spec, D(150)), APRIL, day(15))
    assert line is not None
    assert line.full_amount == D("14.00")
    assert line.amount == D("7.00")
    assert line.trace()["coefficient"] == "0.5"


def test_signed_amount_and_trace() -> None:
    result = prorate_change(
        ProrationAction.QUANTITY_CHANGE, APRIL, day(15), old=item("10", 2), new=item("10", 5)
    )
    assert result.credit is not None and result.credit.signed_amount == D("-10.00")
    trace = result.trace()
    assert trace["net"] == "15.00"
    assert trace["credit"]["remaining_seconds"] == 1296000
    assert trace["charge"]["amount"] == "25.00"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"action": "upgrade", "old": None, "new": item("1", 1)}, "old"),
        ({"action": "upgrade", "old": item("1", 1), "new": None}, "new"),
        ({"action": "add_item", "old": item("1", 1), "new": item("1", 1)}, "old"),
        ({"action": "cancellation", "old": item("1", 1), "new": item("1", 1)}, "new"),
        ({"action": "refund", "old": item("1", 1)}, "action"),
        ({"action": "remove_item", "old": "item"}, "old"),
        ({"action": "remove_item", "old": item("1", 1), "at": day(-1)}, "effective_date"),
        (
            {"action": "remove_item", "old": item("1", 1), "at": datetime(2024, 4, 2)},
            "effective_date",
        ),
        ({"action": "remove_item", "old": item("1", 1), "amount_billed": D(-1)}, "amount_billed"),
        ({"action": "remove_item", "old": item("1", 1), "period": "april"}, "period"),
        (
            {
                "action": "upgrade",
                "old": item("1", 1),
                "new": ProratedItem(flat("1", "eur"), D(1)),
            },
            "currency",
        ),
    ],
)
def test_change_rejects(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"period": APRIL, "at": day(3)}
    args.update(kwargs)
    action = args.pop("action")
    period = args.pop("period")
    at = args.pop("at")
    with pytest.raises(ValidationError) as info:
        prorate_change(action, period, at, **args)
    assert info.value.field == field


def test_item_rejects() -> None:
    with pytest.raises(ValidationError) as info:
        ProratedItem(flat("1"), D(-1))
    assert info.value.field == "quantity"
    with pytest.raises(ValidationError) as info:
        ProratedItem(flat("1"), D(1), "LATER")  # type: ignore[arg-type]
    assert info.value.field == "invoice_cadence"


@settings(max_examples=80, deadline=None)
@given(
    bks.price_specs(with_conversion_rate=False),
    bks.quantities(max_value=1000),
    st.lists(st.integers(min_value=1, max_value=2592000 - 1), max_size=6, unique=True),
)
def test_prorations_of_a_split_period_sum_to_the_full_charge(
    spec: PriceSpec, quantity: Decimal, cuts: list[int]
) -> None:
    # The item lives in April piece by piece: added at each cut, removed at the next one. Each
    # piece nets charge(at its start) - credit(at its end); the pieces add up to the full charge.
    points = [APRIL.start + timedelta(seconds=s) for s in [0, *sorted(cuts), 2592000]]
    the_item = ProratedItem(spec, quantity)
    full = price_quantity(spec, quantity).amount
    total = D(0)
    for begin, finish in pairwise(points):
        charge = prorate_change(ProrationAction.ADD_ITEM, APRIL, begin, new=the_item).net
        credit = prorate_change(
            ProrationAction.REMOVE_ITEM, APRIL, finish, old=the_item, amount_billed=charge
        ).net
        assert charge >= 0 >= credit
        total += charge + credit
    assert total == full


@settings(max_examples=60, deadline=None)
@given(
    bks.money_amounts(max_value=5000),
    st.integers(min_value=1, max_value=50),
    st.integers(min_value=0, max_value=2592000),
)
def test_credit_plus_used_part_is_the_full_charge(amount: Decimal, quantity: int, seconds: int) -> None:
    # credit for the rest + charge for the used part (1 - coefficient) == the full amount
    spec = flat(str(amount))
    at = APRIL.start + timedelta(seconds=seconds)
    credit = prorate_credit(ProratedItem(spec, D(quantity)), APRIL, at)
    assert credit is not None
    used = Period(APRIL.start, at) if seconds else None
    used_amount = D(0) if used is None else (amount * quantity * seconds / D(2592000))
    assert abs(credit.amount + used_amount - amount * quantity) <= D("0.005") + D("1e-20")
    assert credit.amount <= amount * quantity


junk = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=8),
    st.datetimes(),
    st.datetimes(timezones=st.just(UTC)),
    st.decimals(),
    st.floats(),
    st.sampled_from(list(ProrationAction)),
)


@settings(max_examples=150, deadline=None)
@given(junk, junk, junk, junk)
def test_proration_is_total(action: Any, at: Any, billed: Any, credited: Any) -> None:
    try:
        result = prorate_change(
            action,
            APRIL,
            at,
            old=item("10", 1),
            new=item("20", 1) if action in ("upgrade", "downgrade", "quantity_change") else None,
            amount_billed=billed,
            already_credited=credited if credited is not None else D(0),
        )
    except ValidationError:
        return
    assert result.credit is not None and result.credit.amount >= 0


# -- first stubs on regular invoices ------------------------------------------------------------


def test_calendar_stub_is_measured_against_its_whole_month() -> None:
    march_15, april_1 = datetime(2025, 3, 15, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC)
    schedule = BillingSchedule.for_start(march_15, period=BillingPeriod.MONTHLY, cycle=BillingCycle.CALENDAR)
    stub = Period(march_15, april_1)
    reference = stub_reference_period(schedule, stub)
    assert reference == Period(datetime(2025, 3, 1, tzinfo=UTC), april_1)
    assert (Decimal(31) * stub_coefficient(stub, reference)).quantize(Decimal("0.01")) == Decimal("17.00")
    # a full period, and a last period cut short by end_date, are no stubs
    assert stub_reference_period(schedule, Period(april_1, datetime(2025, 5, 1, tzinfo=UTC))) is None
    assert stub_reference_period(schedule, Period(april_1, datetime(2025, 4, 20, tzinfo=UTC))) is None


def test_anniversary_start_before_a_later_anchor_is_a_stub_of_the_period_before_the_anchor() -> None:
    jan_10, jan_25 = datetime(2025, 1, 10, tzinfo=UTC), datetime(2025, 1, 25, tzinfo=UTC)
    schedule = BillingSchedule.for_start(jan_10, period=BillingPeriod.MONTHLY, billing_anchor=jan_25)
    reference = stub_reference_period(schedule, Period(jan_10, jan_25))
    assert reference == Period(datetime(2024, 12, 25, tzinfo=UTC), jan_25)  # 31 days
    assert stub_coefficient(Period(jan_10, jan_25), reference) * 31 == Decimal(15)  # 15/31 x 31
