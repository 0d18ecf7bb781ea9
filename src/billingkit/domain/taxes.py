"""Taxes on an invoice.

Rules: every rate is applied to the same base, ``subtotal - total_discount`` (no compounding;
prepaid credits do not reduce the base). A percentage rate charges ``base * percentage_value / 100``,
a fixed rate charges ``fixed_value``; each tax line is rounded on its own and ``total_tax`` is the sum
of the rounded lines. Example: base 90.00, VAT 18% -> 16.20, plus a fixed 0.50 fee -> total tax 16.70.
A fixed rate is not charged on a base of zero (an invoice with nothing to tax).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

from billingkit.domain.invariants import require_choice, require_decimal, require_str
from billingkit.domain.money import ZERO, round_money
from billingkit.errors import ValidationError

__all__ = ["TAX_RATE_TYPES", "TaxApplication", "TaxRate", "apply_taxes"]

TAX_RATE_TYPES = ("percentage", "fixed")
_HUNDRED = Decimal(100)


@dataclass(frozen=True, slots=True)
class TaxRate:
    """A tax rate: ``tax_rate_type`` ``percentage`` (``percentage_value`` in percent, 0-100) or
    ``fixed`` (``fixed_value`` money >= 0). Raises ``ValidationError`` naming the JSON field."""

    id: str
    tax_rate_type: str
    percentage_value: Decimal | None = None
    fixed_value: Decimal | None = None
    code: str = ""

    def __post_init__(self) -> None:
        require_str(self.id, field="tax_rate_id")
        require_choice(self.tax_rate_type, TAX_RATE_TYPES, field="tax_rate_type")
        if not isinstance(self.code, str):
            raise ValidationError("code must be a string", field="code")
        if self.tax_rate_type == "percentage":
            if self.percentage_value is None:
                raise ValidationError(
                    "percentage_value is required for a percentage tax rate",
                    field="percentage_value",
                )
            value = require_decimal(
                self.percentage_value,
                field="percentage_value",
                minimum=ZERO,
                maximum=_HUNDRED,
            )
            object.__setattr__(self, "percentage_value", value)
            object.__setattr__(self, "fixed_value", None)
        else:
            if self.fixed_value is None:
                raise ValidationError("fixed_value is required for a fixed tax rate", field="fixed_value")
            value = require_decimal(self.fixed_value, field="fixed_value", minimum=ZERO)
            object.__setattr__(self, "fixed_value", value)
            object.__setattr__(self, "percentage_value", None)


class TaxApplication(NamedTuple):
    """One tax line: ``tax_amount`` charged by ``tax_rate_id`` on ``taxable_amount`` (money)."""

    tax_rate_id: str
    tax_rate_type: str
    taxable_amount: Decimal
    tax_amount: Decimal
    percentage_value: Decimal | None
    currency: str


def apply_taxes(
    rates: Sequence[TaxRate], taxable_amount: Decimal, currency: str
) -> tuple[TaxApplication, ...]:
    """Tax lines for ``taxable_amount`` (= subtotal - discounts, money, >= 0), one per rate, in order.

    Example: 45.55 at 7.5% -> 3.42 (3.41625 rounded half away from zero). Raises ``ValidationError``
    (field ``taxable_amount``) for a negative or non-decimal base, or (``currency``) a bad code.
    """
    if not isinstance(taxable_amount, Decimal) or not taxable_amount.is_finite():
        raise ValidationError("taxable_amount must be a decimal", field="taxable_amount")
    if taxable_amount < ZERO:
        raise ValidationError("taxable_amount must not be negative", field="taxable_amount")
    out: list[TaxApplication] = []
    for rate in rates:
        pct = rate.percentage_value
        if pct is not None:
            tax = round_money(taxable_amount * pct / _HUNDRED, currency)
        elif taxable_amount > ZERO:
            tax = round_money(rate.fixed_value or ZERO, currency)
        else:
            tax = round_money(ZERO, currency)
        out.append(TaxApplication(rate.id, rate.tax_rate_type, taxable_amount, tax, pct, currency))
    return tuple(out)
