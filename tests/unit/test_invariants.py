"""Invariants: duplicate charges and totals."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D
from typing import Any

import pytest

from billingkit.domain.invariants import (
    check_no_duplicate_charges,
    check_totals,
    require_decimal,
    require_utc,
)
from billingkit.errors import InvalidOperation, ValidationError

JAN = datetime(2025, 1, 1, tzinfo=UTC)
JAN15 = datetime(2025, 1, 15, tzinfo=UTC)
FEB = datetime(2025, 2, 1, tzinfo=UTC)
FEB15 = datetime(2025, 2, 15, tzinfo=UTC)
MAR = datetime(2025, 3, 1, tzinfo=UTC)


def test_duplicate_within_invoice_refused() -> None:
    with pytest.raises(InvalidOperation):
        check_no_duplicate_charges([("li", "charge", JAN, FEB), ("li", "charge", JAN, FEB)])


def test_overlap_with_previous_refused_adjacent_allowed() -> None:
    previous = [("li", "charge", JAN, FEB)]
    with pytest.raises(InvalidOperation):
        check_no_duplicate_charges([("li", "charge", JAN15, FEB15)], previous)
    check_no_duplicate_charges([("li", "charge", FEB, MAR)], previous)  # [Feb, Mar) is next
    check_no_duplicate_charges([("other", "charge", JAN, FEB)], previous)
    check_no_duplicate_charges([("li", "true_up", JAN, FEB)], previous)


def totals(**over: Any) -> dict[str, Any]:
    # lines 100 + 50; discounts 10 + 5; tax 13.50; credits 20: 150 - 15 + 13.50 - 20 = 128.50
    base: dict[str, Any] = {
        "line_amounts": [D(100), D(50)],
        "line_discounts": [D(10), D(5)],
        "line_credits": [D(20), D(0)],
        "subtotal": D(150),
        "total_discount": D(15),
        "total_tax": D("13.50"),
        "tax_amounts": [D("13.50")],
        "total_prepaid_credits_applied": D(20),
        "total": D("128.50"),
        "amount_due": D("128.50"),
    }
    base.update(over)
    return base


def test_totals_that_add_up_pass() -> None:
    check_totals(**totals())


@pytest.mark.parametrize(
    "over",
    [
        {"subtotal": D(151)},
        {"total_discount": D(14)},
        {"total_tax": D(13)},
        {"total_prepaid_credits_applied": D(21)},
        {"total": D("128.49")},
        {"amount_due": D(0)},
        {
            "line_credits": [D(95), D(0)],
            "total_prepaid_credits_applied": D(95),
            "total": D("53.50"),
            "amount_due": D("53.50"),
        },  # 10 + 95 > 100 on line 1
    ],
)
def test_totals_that_do_not_add_up_fail(over: dict[str, Any]) -> None:
    with pytest.raises(InvalidOperation):
        check_totals(**totals(**over))


def test_total_floored_at_zero() -> None:
    # 0 subtotal with nothing else: total 0
    check_totals(
        **totals(
            line_amounts=[D(0)],
            line_discounts=[D(0)],
            line_credits=[D(0)],
            subtotal=D(0),
            total_discount=D(0),
            total_tax=D(0),
            tax_amounts=[],
            total_prepaid_credits_applied=D(0),
            total=D(0),
            amount_due=D(0),
        )
    )


def test_input_checks() -> None:
    assert require_decimal("1.5", field="x", minimum=D(1)) == D("1.5")
    with pytest.raises(ValidationError) as err:
        require_decimal(0.5, field="overage_factor")
    assert err.value.field == "overage_factor"
    with pytest.raises(ValidationError):
        require_decimal("0.5", field="x", minimum=D(1))
    with pytest.raises(ValidationError) as err:
        require_utc(datetime(2025, 1, 1), field="period_start")
    assert err.value.field == "period_start"
