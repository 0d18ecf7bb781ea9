"""Which lines a plan change in place carries, closes and opens (billingkit.domain.plan_change_diff)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit.domain.catalog import Price
from billingkit.domain.plan_change_diff import billing_terms, closing_end, diff_plan_lines, opening_quantity
from billingkit.domain.subscriptions import SubscriptionLineItem

JUNE, MID = datetime(2026, 6, 1, tzinfo=UTC), datetime(2026, 6, 16, tzinfo=UTC)
STAMP = {
    "tenant_id": "t",
    "environment_id": "e",
    "created_at": JUNE,
    "updated_at": JUNE,
    "created_by": "u",
    "updated_by": "u",
}


def price(id: str, amount: str = "30", plan: str = "plan_a", **fields: Any) -> Price:
    base: dict[str, Any] = {
        "id": id,
        **STAMP,
        "entity_type": "PLAN",
        "entity_id": plan,
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "currency": "usd",
        "amount": Decimal(amount),
    }
    return Price.model_validate({**base, **fields})


def usage(id: str, amount: str = "0.10", plan: str = "plan_a", meter: str = "meter_1") -> Price:
    return price(id, amount, plan, type="USAGE", invoice_cadence="ARREAR", meter_id=meter)


def line(id: str, of: Price, quantity: str = "1", **fields: Any) -> SubscriptionLineItem:
    base: dict[str, Any] = {
        "id": id,
        "subscription_id": "subs_1",
        "customer_id": "cust_1",
        "entity_id": of.entity_id,
        "price_id": of.id,
        "price_type": of.type,
        "meter_id": of.meter_id,
        "quantity": Decimal(quantity),
        "currency": "usd",
        "billing_period": of.billing_period,
        "invoice_cadence": of.invoice_cadence,
        "start_date": JUNE,
    }
    return SubscriptionLineItem.model_validate({**base, **fields})


def test_billing_terms_ignore_names_and_owners_but_not_money() -> None:
    a = price("p1", "30.00", display_name="Base", lookup_key="a", trial_period_days=7)
    assert billing_terms(a) == billing_terms(price("p2", "30", plan="plan_b", display_name="Other"))
    for other in (
        price("p3", "30.01"),
        price("p4", "30", invoice_cadence="ARREAR"),
        price("p5", "30", billing_period="ANNUAL"),
        price("p6", "30", currency="eur"),
        price("p7", "30", min_quantity=Decimal(2)),
    ):
        assert billing_terms(other) != billing_terms(a), other
    assert billing_terms(usage("u1", meter="m1")) != billing_terms(usage("u2", meter="m2"))


def test_identical_prices_carry_others_close_and_open() -> None:
    base_a, calls_a = price("pa", "30"), usage("ua")
    base_b, calls_b, extra_b = (
        price("pb", "90", "plan_b"),
        usage("ub", plan="plan_b"),
        price("xb", "5", "plan_b"),
    )
    lines = [line("l_base", base_a), line("l_calls", calls_a)]
    diff = diff_plan_lines(lines, {"pa": base_a, "ua": calls_a}, [base_b, calls_b, extra_b], MID)
    assert [(li.id, p.id) for li, p in diff.carried] == [("l_calls", "ub")]
    assert [li.id for li in diff.closing] == ["l_base"]
    # two fixed prices open for one closing fixed line: no seat carry-over, quantity 1 each
    assert [(p.id, q) for p, q in diff.opening] == [("pb", Decimal(1)), ("xb", Decimal(1))]
    assert diff.warnings == ()


def test_other_lines_and_ended_lines_are_not_plan_lines() -> None:
    base_a = price("pa")
    lines = [
        line("l_addon", base_a, entity_type="addon", addon_association_id="assoc_1"),
        line("l_extra", base_a, entity_type="subscription"),
        line("l_ended", base_a, end_date=MID),
    ]
    diff = diff_plan_lines(lines, {"pa": base_a}, [price("pb", "90", "plan_b")], MID)
    assert (diff.carried, diff.closing) == ((), ())
    assert [p.id for p, _ in diff.opening] == ["pb"]


def test_one_to_one_fixed_replacement_keeps_the_seats() -> None:
    seat_a, seat_b = price("pa", "10"), price("pb", "20", "plan_b")
    diff = diff_plan_lines([line("l1", seat_a, "5")], {"pa": seat_a}, [seat_b], MID)
    assert [(p.id, q) for p, q in diff.opening] == [("pb", Decimal(5))]


def test_ambiguous_replacement_starts_at_one_and_warns() -> None:
    seat_a = price("pa", "10")
    targets = [price("pb", "20", "plan_b"), price("pc", "3", "plan_b")]
    diff = diff_plan_lines([line("l1", seat_a, "5")], {"pa": seat_a}, targets, MID)
    assert [q for _, q in diff.opening] == [Decimal(1), Decimal(1)]
    assert len(diff.warnings) == 1 and "not carried over" in diff.warnings[0]


def test_each_target_price_carries_one_line_only() -> None:
    a1, a2, b = price("pa1", "30"), price("pa2", "30"), price("pb", "30", "plan_b")
    lines = [line("l1", a1), line("l2", a2)]
    diff = diff_plan_lines(lines, {"pa1": a1, "pa2": a2}, [b], MID)
    assert [li.id for li, _ in diff.carried] == ["l1"] and [li.id for li in diff.closing] == ["l2"]


@pytest.mark.parametrize(
    ("fields", "carried", "expected"),
    [
        ({}, None, Decimal(1)),
        ({}, Decimal(5), Decimal(5)),
        ({"min_quantity": Decimal(3)}, None, Decimal(3)),
        ({"min_quantity": Decimal(3)}, Decimal(2), Decimal(3)),
        ({"min_quantity": Decimal(3)}, Decimal(8), Decimal(8)),
    ],
)
def test_opening_quantity(fields: dict[str, Any], carried: Decimal | None, expected: Decimal) -> None:
    assert opening_quantity(price("p", **fields), carried) == expected
    assert opening_quantity(usage("u"), carried) == Decimal(0)


def test_closing_end_is_never_before_the_line_starts() -> None:
    base = price("pa")
    assert closing_end(line("l1", base), MID) == MID
    later = datetime(2026, 6, 20, tzinfo=UTC)
    assert closing_end(line("l2", base, start_date=later), MID) == later
