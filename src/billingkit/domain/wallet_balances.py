"""A wallet's real-time balance (reference notes §6.2): what its credits are worth once the
customer's unpaid invoices and the usage charges of the current periods are paid from them.

``real_time_balance = balance - unpaid_invoices_amount - current_period_usage`` (it may be
negative: the customer owes more than the wallet holds), where both deductions count only what
the wallet may pay, its ``allowed_price_types``:

* a line's **payable** part is its amount less its discounts and the prepaid credits already
  applied to it (what credits could still pay; taxes are never paid by credits);
* an **unpaid invoice** (FINALIZED, ``amount_remaining`` above 0, the wallet's customer and
  currency) counts its whole ``amount_remaining`` for a wallet allowed ``ALL`` price types, else
  the payable part of its lines of the allowed types, at most ``amount_remaining``;
* **current-period usage** is the payable part of the allowed lines of the invoice each active
  subscription's current period would produce now (ARREAR charges with the usage so far, after
  entitlements; the next period's ADVANCE charges are not yet owed).

Example: balance 100.00, USAGE only; an unpaid invoice with a FIXED line 20.00 and a USAGE line
30.00 (10.00 of it paid by credits) and 22.00 remaining -> unpaid 20.00 (the usage line's
payable 20.00, within 22.00); current usage 15.00 -> real-time balance 65.00.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import NamedTuple

from billingkit.domain.money import ZERO

__all__ = ["ALL_PRICE_TYPES", "PayableLine", "payable_usage", "real_time_balance", "unpaid_share"]

ALL_PRICE_TYPES = frozenset({"USAGE", "FIXED"})


class PayableLine(NamedTuple):
    """An invoice line as a wallet sees it: its price type (None on a direct invoice line that
    names none) and what credits could still pay of it."""

    price_type: str | None
    payable: Decimal

    @classmethod
    def of(
        cls,
        price_type: str | None,
        amount: Decimal,
        *,
        line_item_discount: Decimal = ZERO,
        invoice_level_discount: Decimal = ZERO,
        prepaid_credits_applied: Decimal = ZERO,
    ) -> PayableLine:
        """The line's amount less its discounts and applied credits (never below 0):
        ``PayableLine.of("USAGE", Decimal("30"), prepaid_credits_applied=Decimal("10")).payable``
        is ``Decimal("20")``."""
        left = amount - line_item_discount - invoice_level_discount - prepaid_credits_applied
        return cls(price_type, left if left > ZERO else ZERO)


def payable_usage(lines: Iterable[PayableLine], allowed: frozenset[str]) -> Decimal:
    """The payable part of ``lines`` whose price type the wallet may pay: with ``allowed`` =
    {USAGE}, lines USAGE 15.00 and FIXED 20.00 -> 15.00. Lines without a price type count only for
    a wallet allowed every type."""
    every = allowed >= ALL_PRICE_TYPES
    return sum(
        (
            line.payable
            for line in lines
            if every or (line.price_type is not None and line.price_type in allowed)
        ),
        ZERO,
    )


def unpaid_share(amount_remaining: Decimal, lines: Iterable[PayableLine], allowed: frozenset[str]) -> Decimal:
    """What of an unpaid invoice the wallet would pay: all of ``amount_remaining`` for a wallet
    allowed every price type, else the payable part of its allowed lines, at most
    ``amount_remaining`` (the module example: 20.00)."""
    if amount_remaining <= ZERO:
        return ZERO
    if allowed >= ALL_PRICE_TYPES:
        return amount_remaining
    share = payable_usage(lines, allowed)
    return share if share < amount_remaining else amount_remaining


def real_time_balance(
    balance: Decimal, unpaid_invoices_amount: Decimal, current_period_usage: Decimal
) -> Decimal:
    """``balance - unpaid_invoices_amount - current_period_usage`` (may be negative):
    100.00 - 20.00 - 15.00 = 65.00."""
    return balance - unpaid_invoices_amount - current_period_usage
