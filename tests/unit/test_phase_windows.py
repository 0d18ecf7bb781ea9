"""Phase windows and how the plan lines make room for phases (pure)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import BillingPeriod, InvoiceCadence
from billingkit.domain.phase_windows import (
    PhaseLines,
    Window,
    check_fits,
    check_settled,
    check_windows,
    overlap,
    subtract,
)
from billingkit.domain.subscriptions import SubscriptionLineItem
from billingkit.errors import InternalError, ValidationError


def day(month: int, d: int = 1) -> datetime:
    return datetime(2024, month, d, tzinfo=UTC)


def plan_line(line_id: str = "L", price_id: str = "P", start: datetime | None = None) -> SubscriptionLineItem:
    return SubscriptionLineItem(
        id=line_id,
        subscription_id="subs_1",
        customer_id="cust_1",
        entity_id="plan_1",
        price_id=price_id,
        price_type=PriceType.FIXED,
        quantity=Decimal(1),
        currency="usd",
        billing_period=BillingPeriod.MONTHLY,
        invoice_cadence=InvoiceCadence.ADVANCE,
        start_date=start or day(1),
    )


def tiles(*lines: SubscriptionLineItem, keys: dict[str, str] | None = None) -> PhaseLines:
    counter = itertools.count(1)
    return PhaseLines(lines, keys or {}, lambda: f"N{next(counter)}", sub_start=day(1))


def windows(t: PhaseLines) -> list[tuple[str, str | None, datetime | None, datetime | None]]:
    return [(li.id, li.subscription_phase_id, li.start_date, li.end_date) for li in t.lines]


# -- window arithmetic ---------------------------------------------------------------------------


def test_subtract_cuts_a_window_into_its_parts_before_and_after() -> None:
    assert subtract((day(1), None), (day(2), day(3))) == ((day(1), day(2)), (day(3), None))
    assert subtract((day(1), day(4)), (day(1), None)) == (None, None)
    assert subtract((day(1), day(4)), (day(5), day(6))) == ((day(1), day(4)), None)
    assert subtract((day(5), day(6)), (day(1), day(4))) == (None, (day(5), day(6)))
    assert overlap((day(1), day(2)), (day(2), None)) is None
    assert overlap((day(1), None), (day(3), day(5))) == (day(3), day(5))


instants = st.integers(min_value=0, max_value=20).map(lambda d: datetime(2024, 1, 1 + d, tzinfo=UTC))


@st.composite
def spans(draw: st.DrawFn) -> Window:
    start = draw(instants)
    end = draw(st.none() | instants.filter(lambda e: e > start))
    return (start, end)


@given(spans(), spans(), instants)
def test_subtract_and_overlap_partition_every_instant(a: Window, cut: Window, t: datetime) -> None:
    """An instant of ``a`` is in exactly one of: the part before ``cut``, ``a`` ∩ ``cut``, the
    part after ``cut``."""

    def holds(w: Window | None) -> bool:
        return w is not None and w[0] <= t and (w[1] is None or t < w[1])

    left, right = subtract(a, cut)
    parts = [holds(left), holds(overlap(a, cut)), holds(right)]
    assert sum(parts) == (1 if holds(a) else 0)


def test_phases_given_together_must_be_ordered_and_apart() -> None:
    prefixes = ["phases[0].", "phases[1]."]
    check_windows([(day(1), day(4)), (day(4), None)], sub_start=day(1), sub_end=None, prefixes=prefixes)
    check_windows([(day(2), day(3)), (day(6), None)], sub_start=day(1), sub_end=None, prefixes=prefixes)
    cases = [
        ([(day(1), day(4)), (day(3), None)], "phases[1].start_date", "overlaps phases[0]"),
        ([(day(1), None), (day(5), None)], "phases[1].start_date", "no end_date"),
        ([(day(5), day(6)), (day(2), day(3))], "phases[1].start_date", "in order"),
        ([(day(1), day(1)), (day(2), None)], "phases[0].end_date", "after start_date"),
        ([(datetime(2023, 12, 31, tzinfo=UTC), None)], "phases[0].start_date", "before the subscription"),
    ]
    for given_windows, field, text in cases:
        with pytest.raises(ValidationError) as caught:
            check_windows(
                given_windows, sub_start=day(1), sub_end=None, prefixes=prefixes[: len(given_windows)]
            )
        assert caught.value.field == field and text in caught.value.message


def test_a_phase_fits_inside_the_subscription_and_beside_the_others() -> None:
    others = [(day(3), day(5))]
    check_fits((day(5), None), others, sub_start=day(1), sub_end=None)
    with pytest.raises(ValidationError) as caught:
        check_fits((day(4), None), others, sub_start=day(1), sub_end=None)
    assert caught.value.field == "start_date"
    with pytest.raises(ValidationError) as caught:
        check_fits((day(2), day(4)), others, sub_start=day(1), sub_end=None)
    assert caught.value.field == "end_date"
    with pytest.raises(ValidationError) as caught:
        check_fits((day(2), day(8)), [], sub_start=day(1), sub_end=day(7))
    assert caught.value.field == "end_date"
    with pytest.raises(ValidationError) as caught:
        check_fits((day(7), None), [], sub_start=day(1), sub_end=day(7))
    assert caught.value.field == "start_date"


# -- the lines ------------------------------------------------------------------------------------


def test_two_phases_from_the_start_leave_the_plan_line_ended_at_its_start() -> None:
    t = tiles(plan_line())
    first = t.claim("ph1", (day(1), day(4)))
    second = t.claim("ph2", (day(4), None))
    t.end_at_start({"L": day(1)})
    assert [c.id for c in first + second] == ["N1", "N2"]
    assert windows(t) == [
        ("L", None, day(1), day(1)),
        ("N1", "ph1", day(1), day(4)),
        ("N2", "ph2", day(4), None),
    ]
    assert t.key_of("N2") == "P"


def test_a_phase_in_the_middle_splits_the_plan_line_and_its_deletion_mends_it() -> None:
    t = tiles(plan_line())
    t.claim("ph", (day(3), day(5)))
    assert windows(t) == [
        ("L", None, day(1), day(3)),
        ("N1", None, day(5), None),
        ("N2", "ph", day(3), day(5)),
    ]
    t.drop("ph", (day(3), day(5)))
    assert windows(t) == [("L", None, day(1), None)]


def test_a_phase_grows_and_shrinks_at_its_edges() -> None:
    t = tiles(plan_line())
    t.claim("ph", (day(3), day(5)))
    t.claim("ph", (day(5), day(7)))  # the end moves from 1 May to 1 July
    assert windows(t) == [
        ("L", None, day(1), day(3)),
        ("N1", None, day(7), None),
        ("N2", "ph", day(3), day(7)),
    ]
    t.release("ph", (day(6), day(7)))  # back to 1 June
    assert windows(t) == [
        ("L", None, day(1), day(3)),
        ("N1", None, day(6), None),
        ("N2", "ph", day(3), day(6)),
    ]


def test_a_moved_phase_keeps_its_copys_fields_and_extra_lines_follow_its_bounds() -> None:
    t = tiles(plan_line())
    (copy,) = t.claim("ph", (day(3), day(4)))
    t.replace([copy.model_copy(update={"price_id": "P_override", "quantity": Decimal(2)})])
    t.add(
        [
            plan_line("X", "PX", day(3)).model_copy(
                update={"entity_type": "subscription", "subscription_phase_id": "ph", "end_date": day(4)}
            )
        ]
    )
    old, new = (day(3), day(4)), (day(6), day(8))
    t.claim("ph", new)
    t.release("ph", old)
    t.follow("ph", old, new)
    lines = {li.id: li for li in t.lines}
    moved = [li for li in t.lines if li.subscription_phase_id == "ph" and li.entity_type == "plan"]
    assert [(li.price_id, li.quantity, li.start_date, li.end_date) for li in moved] == [
        ("P_override", Decimal(2), day(6), day(8))
    ]
    assert (lines["X"].start_date, lines["X"].end_date) == (day(6), day(8))
    base = sorted((li.start_date, li.end_date) for li in t.lines if li.subscription_phase_id is None)
    assert base == [(day(1), day(6)), (day(8), None)]


def test_an_extra_line_with_its_own_dates_is_clipped_and_removed_when_nothing_is_left() -> None:
    t = tiles(plan_line())
    t.claim("ph", (day(3), day(9)))
    own = plan_line("X", "PX", day(4)).model_copy(
        update={"entity_type": "subscription", "subscription_phase_id": "ph", "end_date": day(5)}
    )
    t.add([own])
    t.follow("ph", (day(3), day(9)), (day(3), day(7)))
    assert [li.id for li in t.lines if li.id == "X"] == ["X"]
    t.follow("ph", (day(3), day(7)), (day(6), day(7)))
    assert "X" not in {li.id for li in t.lines}


def test_time_given_back_with_no_plan_piece_beside_it_reuses_the_ended_plan_line() -> None:
    t = tiles(plan_line())
    t.claim("ph1", (day(1), day(4)))
    t.claim("ph2", (day(4), None))
    t.end_at_start({"L": day(1)})
    t.drop("ph2", (day(4), None))
    assert windows(t) == [("L", None, day(4), None), ("N1", "ph1", day(1), day(4))]


def test_check_settled_refuses_a_change_before_the_settled_instant() -> None:
    before = [plan_line()]
    check_settled(before, [before[0].model_copy(update={"end_date": day(5)})], day(5))
    with pytest.raises(InternalError):
        check_settled(before, [before[0].model_copy(update={"end_date": day(4)})], day(5))
    with pytest.raises(InternalError):
        check_settled(before, [], day(5))
    late = plan_line("M", start=day(6))
    check_settled([late], [], day(5))  # never billed: may go
