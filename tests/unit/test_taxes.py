"""Taxes: worked examples and properties."""

from __future__ import annotations

from decimal import Decimal as D

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.taxes import TaxRate, apply_taxes
from billingkit.errors import ValidationError

VAT18 = TaxRate("tx_vat", "percentage", percentage_value=D(18))
FEE = TaxRate("tx_fee", "fixed", fixed_value=D("0.50"))


@pytest.mark.parametrize(
    ("rates", "base", "currency", "expected"),
    [
        ([VAT18], "90.00", "usd", ["16.20"]),  # 90 * 18% = 16.20
        ([VAT18, FEE], "90.00", "usd", ["16.20", "0.50"]),  # same base, no compounding
        ([TaxRate("t", "percentage", percentage_value=D("7.5"))], "45.55", "usd", ["3.42"]),
        # 45.55 * 7.5% = 3.41625 -> 3.42
        ([TaxRate("t", "percentage", percentage_value=D("8.25"))], "1000", "jpy", ["83"]),
        # 82.5 yen -> half away from zero -> 83
        ([TaxRate("t", "percentage", percentage_value=D(5))], "1.005", "kwd", ["0.050"]),
        # 0.05025 -> 3 decimals -> 0.050
        ([FEE], "0", "usd", ["0.00"]),  # nothing to tax: no fixed fee
        ([VAT18], "0", "usd", ["0.00"]),
    ],
)
def test_tax_table(rates: list[TaxRate], base: str, currency: str, expected: list[str]) -> None:
    lines = apply_taxes(rates, D(base), currency)
    assert [t.tax_amount for t in lines] == [D(e) for e in expected]
    assert all(t.taxable_amount == D(base) for t in lines)
    assert [t.tax_rate_id for t in lines] == [r.id for r in rates]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tax_rate_type": "percentage"}, "percentage_value"),
        ({"tax_rate_type": "percentage", "percentage_value": D(101)}, "percentage_value"),
        ({"tax_rate_type": "fixed", "fixed_value": D(-1)}, "fixed_value"),
        ({"tax_rate_type": "percentage", "percentage_value": 0.18}, "percentage_value"),
        ({"tax_rate_type": "vat"}, "tax_rate_type"),
    ],
)
def test_tax_rate_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        TaxRate("tx", **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


def test_negative_base_rejected() -> None:
    with pytest.raises(ValidationError) as err:
        apply_taxes([VAT18], D(-1), "usd")
    assert err.value.field == "taxable_amount"


@given(
    st.decimals(min_value=0, max_value=10**9, places=2),
    st.lists(st.decimals(min_value=0, max_value=100, places=3), max_size=4),
)
def test_total_tax_is_sum_of_rounded_lines(base: D, pcts: list[D]) -> None:
    rates = [TaxRate(f"t{i}", "percentage", percentage_value=p) for i, p in enumerate(pcts)]
    lines = apply_taxes(rates, base, "usd")
    for line, p in zip(lines, pcts, strict=True):
        assert line.tax_amount == line.tax_amount.quantize(D("0.01"))
        assert abs(line.tax_amount - base * p / 100) <= D("0.005")
        assert 0 <= line.tax_amount <= base


@given(
    st.dictionaries(
        st.sampled_from(["tax_rate_type", "percentage_value", "fixed_value", "code"]),
        st.one_of(
            st.none(),
            st.integers(-5, 500),
            st.floats(),
            st.text(max_size=3),
            st.sampled_from(["percentage", "fixed"]),
            st.decimals(),
        ),
    )
)
def test_tax_rate_is_total(kwargs: dict[str, object]) -> None:
    kwargs.setdefault("tax_rate_type", "percentage")
    try:
        rate = TaxRate("tx", **kwargs)  # type: ignore[arg-type]
    except ValidationError:
        return
    (line,) = apply_taxes([rate], D("10.00"), "usd")
    assert line.tax_amount >= 0
