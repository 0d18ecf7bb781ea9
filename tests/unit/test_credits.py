"""Prepaid credits: worked examples and properties."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.credits import CreditSource, apply_credits, credit_order
from billingkit.errors import ValidationError

JAN = datetime(2025, 1, 1, tzinfo=UTC)
FEB = datetime(2025, 2, 1, tzinfo=UTC)
ALL = frozenset({"USAGE", "FIXED"})


def test_priority_then_expiry_then_id() -> None:
    a = CreditSource("b_wallet", D(1), priority=1, expires_at=FEB)
    b = CreditSource("a_wallet", D(1), priority=1, expires_at=FEB)
    c = CreditSource("c_grant", D(1), kind="credit_grant", priority=1, expires_at=JAN)
    d = CreditSource("d", D(1), priority=None)
    e = CreditSource("e", D(1), priority=0)
    f = CreditSource("f", D(1), priority=1)  # no expiry: after those expiring
    assert [s.id for s in credit_order([a, b, c, d, e, f])] == [
        "e",
        "c_grant",
        "a_wallet",
        "b_wallet",
        "f",
        "d",
    ]


def test_worked_example() -> None:
    # grant A (priority 1) 30.00 and wallet B (priority 2) 100.00; usage line 45.00:
    # A pays 30.00, B pays 15.00, line owes 0
    result = apply_credits(
        [CreditSource("B", D(100), priority=2), CreditSource("A", D(30), "credit_grant", 1)],
        ["li"],
        ["USAGE"],
        [D("45.00")],
        currency="usd",
    )
    assert result.line_credits == (D("45.00"),)
    assert result.source_debits == (("A", D(30)), ("B", D("15.00")))
    assert [(x.source_id, x.amount) for x in result.allocations] == [
        ("A", D(30)),
        ("B", D("15.00")),
    ]


def test_price_types_and_expiry_and_minor_units() -> None:
    # FIXED line not payable by a USAGE-only wallet; expired grant skipped; balance 10.019 -> 10.01
    result = apply_credits(
        [
            CreditSource("w", D("10.019")),
            CreditSource("old", D(100), priority=0, expires_at=JAN),
        ],
        ["fixed", "usage"],
        ["FIXED", "USAGE"],
        [D("20.00"), D("50.00")],
        currency="usd",
        as_of=JAN,
    )
    assert result.line_credits == (D(0), D("10.01"))
    assert result.total == D("10.01")
    both = apply_credits(
        [CreditSource("w", D(25), allowed_price_types=ALL)],
        ["fixed", "usage"],
        ["FIXED", "USAGE"],
        [D("20.00"), D("50.00")],
        currency="usd",
    )
    assert both.line_credits == (D("20.00"), D("5"))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"balance": D(-1)}, "balance"),
        ({"balance": D(1), "priority": -1}, "priority"),
        ({"balance": D(1), "kind": "coupon"}, "kind"),
        ({"balance": D(1), "expires_at": datetime(2025, 1, 1)}, "expires_at"),
        ({"balance": D(1), "allowed_price_types": frozenset({"ALL"})}, "allowed_price_types"),
    ],
)
def test_source_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        CreditSource("s", **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


cents = st.integers(0, 10**7).map(lambda c: D(c).scaleb(-2))


@given(
    st.lists(st.tuples(cents, st.sampled_from(["USAGE", "FIXED"])), max_size=6),
    st.lists(
        st.tuples(st.decimals(0, 10**6, places=4), st.none() | st.integers(0, 3), st.booleans()), max_size=4
    ),
)
def test_credits_never_drive_a_line_below_zero(
    lines: list[tuple[D, str]], sources: list[tuple[D, int | None, bool]]
) -> None:
    srcs = [
        CreditSource(f"s{i}", bal, priority=p, allowed_price_types=ALL if all_types else frozenset({"USAGE"}))
        for i, (bal, p, all_types) in enumerate(sources)
    ]
    amounts = [a for a, _ in lines]
    result = apply_credits(
        srcs, [f"l{i}" for i in range(len(lines))], [t for _, t in lines], amounts, currency="usd"
    )
    for amount, credit in zip(amounts, result.line_credits, strict=True):
        assert 0 <= credit <= amount
    used = dict(result.source_debits)
    for src in srcs:
        assert used.get(src.id, D(0)) <= src.balance
    assert result.total == sum(result.line_credits, D(0)) == sum(used.values(), D(0))
    assert result.total == sum((a.amount for a in result.allocations), D(0))
