"""Money: currency precision, the rounding rule and exact parsing."""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.money import (
    currency_precision,
    normalize_currency,
    parse_decimal,
    quantize_exponent,
    round_money,
)
from billingkit.errors import ValidationError

D = Decimal


@pytest.mark.parametrize(
    ("currency", "places"),
    [
        ("usd", 2),
        ("USD", 2),
        ("inr", 2),
        ("eur", 2),
        ("jpy", 0),
        ("krw", 0),
        ("kwd", 3),
        ("xyz", 2),
    ],
)
def test_precision(currency: str, places: int) -> None:
    assert currency_precision(currency) == places
    assert quantize_exponent(currency.lower()) == D(1).scaleb(-places)


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [
        ("2.345", "usd", "2.35"),  # tie -> away from zero
        ("-2.345", "usd", "-2.35"),  # tie -> away from zero, negative too
        ("2.344999", "usd", "2.34"),  # below the tie
        ("2.3450001", "usd", "2.35"),  # above the tie
        ("0.005", "usd", "0.01"),  # smallest tie
        ("-0.005", "usd", "-0.01"),
        ("0.004", "usd", "0.00"),
        ("2.5", "jpy", "3"),  # no minor unit: 2.5 -> 3
        ("3.5", "jpy", "4"),  # not banker's rounding (would give 4 either way) ...
        ("4.5", "jpy", "5"),  # ... but banker's would give 4 here
        ("1.2345", "kwd", "1.235"),  # 3 places
        ("10", "usd", "10.00"),  # quantized to the precision
    ],
)
def test_rounding_table(amount: str, currency: str, expected: str) -> None:
    result = round_money(D(amount), currency)
    assert result == D(expected)
    assert str(result) == expected


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [
        ("1234567.125", "usd", "1234567.13"),  # 9 digits: more than the host's precision of 5
        ("-1234567.125", "usd", "-1234567.13"),
        ("98765.4325", "kwd", "98765.433"),
        ("123456.5", "jpy", "123457"),
        ("2.345", "usd", "2.35"),
    ],
)
def test_rounding_ignores_the_callers_decimal_context(amount: str, currency: str, expected: str) -> None:
    # A host application may lower the thread's decimal precision; money rounding must not care.
    with localcontext() as ctx:
        ctx.prec = 5
        result = round_money(D(amount), currency)
    assert str(result) == expected


@settings(max_examples=100)
@given(st.decimals(min_value=-(10**9), max_value=10**9, allow_nan=False, places=6))
def test_rounding_is_symmetric_and_close(amount: Decimal) -> None:
    rounded = round_money(amount, "usd")
    assert round_money(-amount, "usd") == -rounded
    assert abs(rounded - amount) <= D("0.005")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1.50", "1.50"),
        (" 2.5 ", "2.5"),
        ("1e3", "1E+3"),
        (7, "7"),
        (D("0.1"), "0.1"),
        ("-3", "-3"),
    ],
)
def test_parse_accepts(value: Any, expected: str) -> None:
    assert str(parse_decimal(value, field="amount")) == expected


@pytest.mark.parametrize(
    "value",
    [1.5, True, None, "", "abc", "1,5", "NaN", "Infinity", D("NaN"), D("-Infinity"), "1" * 40, [1]],
)
def test_parse_rejects(value: Any) -> None:
    with pytest.raises(ValidationError) as info:
        parse_decimal(value, field="amount")
    assert info.value.field == "amount"
    assert info.value.code == "validation_error"


def test_parse_rejects_negative_when_asked() -> None:
    with pytest.raises(ValidationError) as info:
        parse_decimal("-1", field="quantity", allow_negative=False)
    assert info.value.field == "quantity"


@pytest.mark.parametrize("code", ["us", "usdd", "12a", 840, None, ""])
def test_currency_rejects(code: Any) -> None:
    with pytest.raises(ValidationError) as info:
        normalize_currency(code)
    assert info.value.field == "currency"


def test_currency_is_lowercased() -> None:
    assert normalize_currency("EuR") == "eur"
