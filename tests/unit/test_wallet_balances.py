"""A wallet's real-time balance arithmetic (reference notes §6.2): worked examples."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billingkit.domain.wallet_balances import PayableLine, payable_usage, real_time_balance, unpaid_share

D = Decimal
USAGE = frozenset({"USAGE"})
FIXED = frozenset({"FIXED"})
ALL = frozenset({"USAGE", "FIXED"})


def test_the_module_example() -> None:
    lines = [
        PayableLine.of("FIXED", D("20.00")),
        PayableLine.of("USAGE", D("30.00"), prepaid_credits_applied=D("10.00")),
    ]
    unpaid = unpaid_share(D("22.00"), lines, USAGE)
    assert unpaid == D("20.00")
    usage = payable_usage([PayableLine.of("USAGE", D("15.00")), PayableLine.of("FIXED", D("5.00"))], USAGE)
    assert usage == D("15.00")
    assert real_time_balance(D("100.00"), unpaid, usage) == D("65.00")


def test_a_lines_payable_part_is_after_discounts_and_credits_and_never_negative() -> None:
    line = PayableLine.of(
        "USAGE",
        D("50.00"),
        line_item_discount=D("5.00"),
        invoice_level_discount=D("2.50"),
        prepaid_credits_applied=D("12.50"),
    )
    assert line.payable == D("30.00")
    assert PayableLine.of("USAGE", D("1.00"), line_item_discount=D("2.00")).payable == D(0)


@pytest.mark.parametrize(
    ("remaining", "allowed", "expected"),
    [
        (D("22.00"), ALL, D("22.00")),  # every type: the whole remaining amount, tax included
        (D("22.00"), USAGE, D("20.00")),  # the usage line's payable 20.00
        (D("22.00"), FIXED, D("20.00")),  # the fee's 20.00
        (D("15.00"), FIXED, D("15.00")),  # partly paid already: at most what remains
        (D("0.00"), ALL, D("0")),
    ],
)
def test_an_unpaid_invoice_counts_what_the_wallet_may_pay_within_what_remains(
    remaining: Decimal, allowed: frozenset[str], expected: Decimal
) -> None:
    lines = [
        PayableLine.of("FIXED", D("20.00")),
        PayableLine.of("USAGE", D("30.00"), prepaid_credits_applied=D("10.00")),
    ]
    assert unpaid_share(remaining, lines, allowed) == expected


def test_lines_without_a_price_type_count_only_for_every_type() -> None:
    lines = [PayableLine.of(None, D("8.00")), PayableLine.of("USAGE", D("2.00"))]
    assert payable_usage(lines, ALL) == D("10.00")
    assert payable_usage(lines, USAGE) == D("2.00")


def test_the_real_time_balance_may_go_negative() -> None:
    assert real_time_balance(D("10.00"), D("25.00"), D("3.00")) == D("-18.00")
