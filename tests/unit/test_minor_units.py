"""Amounts in minor units, as payment providers count them: exact both ways, never rounded."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.minor_units import from_minor_units, to_minor_units
from billingkit.errors import ValidationError

D = Decimal


@pytest.mark.parametrize(
    ("amount", "currency", "units"),
    [
        ("12.50", "usd", 1250),
        ("12.5", "USD", 1250),
        ("0.01", "inr", 1),
        ("100", "inr", 10000),
        ("1E+2", "usd", 10000),
        ("12.500000", "usd", 1250),  # trailing zeros are not extra precision
        ("1234", "jpy", 1234),
        ("1.234", "kwd", 1234),
        ("1.23", "xyz", 123),  # unknown codes have 2 places
        ("-4.20", "usd", -420),
    ],
)
def test_worked_examples(amount: str, currency: str, units: int) -> None:
    assert to_minor_units(D(amount), currency) == units
    assert from_minor_units(units, currency) == D(amount)


@pytest.mark.parametrize(
    ("units", "currency", "text"),
    [
        (1250, "usd", "12.50"),
        (0, "usd", "0.00"),
        (1234, "jpy", "1234"),
        (1234, "kwd", "1.234"),
        (5, "inr", "0.05"),
    ],
)
def test_from_minor_units_keeps_the_currency_precision(units: int, currency: str, text: str) -> None:
    assert str(from_minor_units(units, currency)) == text


@pytest.mark.parametrize(
    ("amount", "currency"), [("12.505", "usd"), ("0.001", "inr"), ("0.5", "jpy"), ("1.2345", "kwd")]
)
def test_a_fraction_of_a_minor_unit_is_refused_not_rounded(amount: str, currency: str) -> None:
    with pytest.raises(ValidationError, match="more decimal places") as refused:
        to_minor_units(D(amount), currency)
    assert refused.value.field == "amount"


def test_bad_inputs_name_the_field() -> None:
    for bad in (D("NaN"), D("Infinity"), 12.5):
        with pytest.raises(ValidationError) as refused:
            to_minor_units(bad, "usd", field="refund_amount")  # type: ignore[arg-type]
        assert refused.value.field == "refund_amount"
    with pytest.raises(ValidationError):
        to_minor_units(D("1"), "dollars")
    for bad_units in (True, 1.0, "12"):
        with pytest.raises(ValidationError):
            from_minor_units(bad_units, "usd")  # type: ignore[arg-type]


@given(
    units=st.integers(min_value=-(10**15), max_value=10**15), currency=st.sampled_from(["usd", "jpy", "kwd"])
)
def test_round_trip(units: int, currency: str) -> None:
    assert to_minor_units(from_minor_units(units, currency), currency) == units


@given(
    amount=st.decimals(
        min_value=D("-1e9"), max_value=D("1e9"), allow_nan=False, allow_infinity=False, places=4
    ),
)
def test_an_amount_is_sent_exactly_or_not_at_all(amount: Decimal) -> None:
    """Either the units are exactly the amount (no rounding), or the amount is refused."""
    try:
        units = to_minor_units(amount, "usd")
    except ValidationError:
        assert amount != amount.quantize(D("0.01"))
    else:
        assert D(units) / 100 == amount
