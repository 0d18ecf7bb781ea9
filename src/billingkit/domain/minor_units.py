"""Amounts in a currency's smallest unit, as payment providers count them.

Rule: a provider is asked for whole minor units (cents, paise, fils), never a fraction of one, and
never a rounded amount: ``12.50`` usd is ``1250``, ``1234`` jpy is ``1234``, ``1.234`` kwd is
``1234``; ``12.505`` usd cannot be sent at all (:class:`ValidationError`), because rounding it
would charge or refund a different amount than the one billingkit recorded. The precision is the
currency's (``domain.money.currency_precision``: USD/INR 2, JPY 0, KWD 3, unknown codes 2).
"""

from __future__ import annotations

from decimal import Decimal

from billingkit.domain.money import currency_precision
from billingkit.errors import ValidationError

__all__ = ["from_minor_units", "to_minor_units"]


def to_minor_units(amount: Decimal, currency: str, *, field: str = "amount") -> int:
    """``amount`` (currency units) as a whole number of the currency's minor units, exactly.

    >>> to_minor_units(Decimal("12.50"), "usd"), to_minor_units(Decimal("12.5"), "INR")
    (1250, 1250)
    >>> to_minor_units(Decimal("1234"), "jpy"), to_minor_units(Decimal("1.234"), "kwd")
    (1234, 1234)

    Raises :class:`ValidationError` naming ``field`` for an amount with more decimal places than
    the currency has (``Decimal("12.505")`` usd, ``Decimal("0.5")`` jpy), a non-finite amount,
    or an unknown-format currency code.
    """
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise ValidationError(f"{field} must be a finite Decimal, not {amount!r}", field=field)
    places = currency_precision(currency)
    scaled = amount.scaleb(places)
    if scaled != scaled.to_integral_value():
        raise ValidationError(
            f"{field} {amount} has more decimal places than {currency.upper()} has ({places}): "
            "a payment provider takes whole minor units",
            field=field,
        )
    return int(scaled)


def from_minor_units(units: int, currency: str) -> Decimal:
    """A count of the currency's minor units as an amount in currency units, at the currency's
    precision (the inverse of :func:`to_minor_units`).

    >>> from_minor_units(1250, "usd"), from_minor_units(1234, "jpy"), from_minor_units(1234, "kwd")
    (Decimal('12.50'), Decimal('1234'), Decimal('1.234'))
    """
    if isinstance(units, bool) or not isinstance(units, int):
        raise ValidationError(f"an amount in minor units is an integer, not {units!r}", field="amount")
    return Decimal(units).scaleb(-currency_precision(currency))
