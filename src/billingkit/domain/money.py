"""Money: exact decimals, currency precision from babel, one rounding rule.

Rule: amounts are ``Decimal``; they are rounded with :func:`round_money` (half away from zero) at the
currency's precision (USD 2, JPY 0, KWD 3; unknown codes 2). Example: ``round_money(Decimal("2.345"),
"usd") == Decimal("2.35")`` and ``round_money(Decimal("-2.345"), "usd") == Decimal("-2.35")``.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Context, Decimal, DivisionByZero, InvalidOperation, Overflow
from functools import lru_cache
from typing import Any

from babel.numbers import get_currency_precision

from billingkit.errors import ValidationError

__all__ = [
    "ZERO",
    "currency_precision",
    "normalize_currency",
    "parse_decimal",
    "quantize_exponent",
    "round_money",
]

ZERO = Decimal(0)

_CURRENCY_RE = re.compile(r"^[A-Za-z]{3}$")
# A plain decimal literal: optional sign, digits with optional fraction, optional exponent.
_DECIMAL_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_MAX_DIGITS = 38
# The context round_money quantizes in, so rounding never depends on the caller's thread context (a
# host that lowers ``getcontext().prec`` would otherwise make quantize fail or differ). 100 digits
# hold any validated amount (at most 38 digits, exponent within ±38) at any currency precision.
_ROUNDING_CTX = Context(prec=100, rounding=ROUND_HALF_UP, traps=[InvalidOperation, DivisionByZero, Overflow])
# Quantize exponents by currency code as given, filled on first use (a plain dict is the cheapest
# lookup on the hot path; round_money runs several times per invoice line).
_EXPONENTS: dict[str, Decimal] = {}


def normalize_currency(code: Any, *, field: str = "currency") -> str:
    """Return a 3-letter currency code in lowercase; raise ``ValidationError`` otherwise."""
    if not isinstance(code, str) or not _CURRENCY_RE.match(code):
        raise ValidationError(f"{field} must be a 3-letter ISO 4217 currency code", field=field)
    return code.lower()


@lru_cache(maxsize=512)
def _precision(upper_code: str) -> int:
    # babel answers 2 for codes it does not know, which is the rule we want for unknown codes.
    return int(get_currency_precision(upper_code))


def currency_precision(currency: str) -> int:
    """Number of minor-unit digits of ``currency`` (USD/INR 2, JPY 0, KWD 3, unknown 2)."""
    return _precision(normalize_currency(currency).upper())


@lru_cache(maxsize=512)
def quantize_exponent(currency: str) -> Decimal:
    """The ``Decimal`` exponent to quantize amounts of ``currency`` to (``Decimal('0.01')`` for usd)."""
    return Decimal(1).scaleb(-currency_precision(currency))


def round_money(amount: Decimal, currency: str) -> Decimal:
    """Round ``amount`` to the currency's precision, half away from zero.

    ``Decimal.quantize`` with ``ROUND_HALF_UP`` rounds ties away from zero for both signs. The
    result does not depend on the caller's decimal context (a private, fixed context is used).
    """
    exponent = _EXPONENTS.get(currency)
    if exponent is None:
        exponent = quantize_exponent(currency)  # validates the code; raises ValidationError
        if len(_EXPONENTS) < 512:
            _EXPONENTS[currency] = exponent
    return amount.quantize(exponent, ROUND_HALF_UP, _ROUNDING_CTX)


def parse_decimal(value: Any, *, field: str, allow_negative: bool = True) -> Decimal:
    """Parse a decimal string (or int / Decimal) exactly.

    Rejects floats (they are not exact), booleans, NaN, infinities, empty strings and garbage with a
    ``ValidationError`` naming ``field``. ``"1e3"`` and ``" 2.50 "`` are accepted.
    """
    if isinstance(value, (bool, float)):
        raise ValidationError(f"{field} must be a decimal string, not a {type(value).__name__}", field=field)
    if isinstance(value, int):
        result = Decimal(value)
    elif isinstance(value, Decimal):
        result = value
    elif isinstance(value, str):
        text = value.strip()
        if not _DECIMAL_RE.match(text):
            raise ValidationError(f"{field} must be a decimal string, got {value!r}", field=field)
        try:
            result = Decimal(text)
        except InvalidOperation:  # pragma: no cover - the regex admits only valid literals
            raise ValidationError(f"{field} is not a valid decimal", field=field) from None
    else:
        raise ValidationError(f"{field} must be a decimal string, not {type(value).__name__}", field=field)
    if not result.is_finite():
        raise ValidationError(f"{field} must be a finite number", field=field)
    if len(result.as_tuple().digits) > _MAX_DIGITS or abs(result.adjusted()) > _MAX_DIGITS:
        raise ValidationError(f"{field} has too many digits", field=field)
    if not allow_negative and result < 0:
        raise ValidationError(f"{field} must not be negative", field=field)
    return result
