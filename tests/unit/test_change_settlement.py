"""Netting a change's prorated charges and credits (billingkit.domain.change_settlement)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.change_settlement import ChangeLine, settle
from billingkit.domain.credits import CreditSource
from billingkit.domain.proration import ProrationKind
from billingkit.domain.taxes import TaxRate
from billingkit.errors import ValidationError

START, END = datetime(2026, 6, 16, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC)


def line(kind: ProrationKind, amount: str, item: str = "li_1") -> ChangeLine:
    return ChangeLine(
        kind=kind,
        line_item_id=item,
        price_id="price_1",
        display_name="Pro",
        quantity=Decimal(1),
        amount=Decimal(amount),
        full_amount=Decimal(amount) * 2,
        period_start=START,
        period_end=END,
    )


def charge(amount: str, item: str = "li_new") -> ChangeLine:
    return line(ProrationKind.CHARGE, amount, item)


def credit(amount: str, item: str = "li_old") -> ChangeLine:
    return line(ProrationKind.CREDIT, amount, item)


def test_upgrade_nets_to_one_invoice() -> None:
    result = settle([charge("45.00")], [credit("15.00")], currency="usd")
    assert result.net == Decimal("30.00")
    assert result.invoiced and result.wallet_credit == 0
    assert result.total == Decimal("30.00")
    assert [ln.signed_amount for ln in result.lines] == [Decimal("45.00"), Decimal("-15.00")]


def test_downgrade_goes_to_the_wallet_never_a_negative_invoice() -> None:
    result = settle([charge("15.00")], [credit("45.00")], currency="usd")
    assert result.net == Decimal("-30.00")
    assert not result.invoiced
    assert result.wallet_credit == Decimal("30.00")
    assert result.total == 0 and result.taxes == ()


def test_equal_amounts_move_nothing() -> None:
    result = settle([charge("20.00")], [credit("20.00")], currency="usd")
    assert result.net == 0 and not result.invoiced and result.wallet_credit == 0


def test_tax_is_on_the_net() -> None:
    rate = TaxRate(id="tax_1", tax_rate_type="percentage", percentage_value=Decimal("10"))
    result = settle([charge("45.00")], [credit("15.00")], currency="usd", tax_rates=[rate])
    assert result.total_tax == Decimal("3.00")
    assert result.total == Decimal("33.00")


def test_prepaid_credits_pay_what_the_charges_owe_after_netting() -> None:
    wallet = CreditSource(
        id="w1", kind="wallet", balance=Decimal("100"), allowed_price_types=frozenset({"FIXED"})
    )
    result = settle(
        [charge("20.00", "a"), charge("25.00", "b")],
        [credit("30.00")],
        currency="usd",
        credit_sources=[wallet],
    )
    # 30.00 of credit is netted against the first charge (20.00) and then the second (10.00 of 25.00)
    assert result.line_credits == (Decimal("0"), Decimal("15.00"), Decimal("0"))
    assert result.total_prepaid_credits_applied == Decimal("15.00")
    assert result.total == 0
    assert result.credit_debits == (("w1", Decimal("15.00")),)


def test_lines_of_the_wrong_kind_are_refused() -> None:
    with pytest.raises(ValidationError) as refused:
        settle([credit("1.00")], [], currency="usd")
    assert refused.value.field == "charges"
    with pytest.raises(ValidationError):
        line(ProrationKind.CHARGE, "0")


amounts = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("10000"), places=2)


@given(st.lists(amounts, max_size=4), st.lists(amounts, max_size=4))
def test_net_is_charges_less_credits_and_nothing_is_negative(
    charges: list[Decimal], credits: list[Decimal]
) -> None:
    result = settle(
        [charge(str(a), f"c{i}") for i, a in enumerate(charges)],
        [credit(str(a), f"r{i}") for i, a in enumerate(credits)],
        currency="usd",
    )
    assert result.net == sum(charges, Decimal(0)) - sum(credits, Decimal(0))
    assert result.total >= 0 and result.wallet_credit >= 0
    assert result.invoiced == (result.net > 0)
    assert result.total == (result.net if result.invoiced else 0)
    assert result.wallet_credit == (-result.net if result.net < 0 else 0)
