"""Settling a mid-period change of a subscription's lines: one net figure, never a negative invoice.

A change (a plan change, a quantity change) ends some lines and starts others at one instant.
Each ended recurring ADVANCE fee gives back its unused time (a **credit**); each started one
bills the rest of the period (a **charge**); both are computed by
:mod:`billingkit.domain.proration` and arrive here as :class:`ChangeLine` values, rounded.
:func:`settle` nets them (reference notes §3.4):

* ``net = Σ charges - Σ credits``;
* ``net > 0``: one invoice with the charge lines and the credit lines as negative lines; taxes on
  the net (the credits lower the taxable base); prepaid credits pay what the charge lines still
  owe after the credits are netted against them, in order; ``total = net + tax - prepaid``;
* ``net < 0``: no invoice; ``wallet_credit = -net`` goes to the customer's wallet;
* ``net = 0``: nothing moves.

Example: 30.00 -> 90.00 a month, changed half-way: credit 15.00, charge 45.00, net 30.00; with
a 10% tax the invoice's total is 33.00. The other way round: credit 45.00, charge 15.00,
wallet credit 30.00, no invoice.

Coupons are not applied here: the credit is already net of the discounts the period's invoice
gave (its cap is what was paid), and the period invoices count a coupon's uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.credits import CreditAllocation, CreditSource, apply_credits
from billingkit.domain.invariants import require_optional_utc, require_utc
from billingkit.domain.invoice_lines import FIXED
from billingkit.domain.money import ZERO, normalize_currency, round_money
from billingkit.domain.proration import ProrationKind
from billingkit.domain.taxes import TaxApplication, TaxRate, apply_taxes
from billingkit.errors import ValidationError

__all__ = ["ChangeLine", "Settlement", "settle"]


@dataclass(frozen=True, slots=True)
class ChangeLine:
    """One prorated line of a change: ``kind`` charge or credit, ``amount`` > 0 and rounded (a
    credit is shown negative on an invoice: :attr:`signed_amount`), for subscription line item
    ``line_item_id`` (the started line for a charge, the ended one for a credit) over
    ``[period_start, period_end)``. ``full_amount`` is the whole period's amount, ``trace`` how
    the amount was computed."""

    kind: ProrationKind
    line_item_id: str
    price_id: str
    display_name: str
    quantity: Decimal
    amount: Decimal
    full_amount: Decimal
    period_start: datetime
    period_end: datetime
    trace: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, ProrationKind):
            raise ValidationError("kind must be a ProrationKind", field="kind")
        if not isinstance(self.amount, Decimal) or not self.amount.is_finite() or self.amount <= ZERO:
            raise ValidationError("amount must be a decimal above zero", field="amount")
        object.__setattr__(self, "period_start", require_utc(self.period_start, field="period_start"))
        object.__setattr__(self, "period_end", require_utc(self.period_end, field="period_end"))
        if not self.period_start < self.period_end:
            raise ValidationError("period_end must be after period_start", field="period_end")

    @property
    def signed_amount(self) -> Decimal:
        """``-amount`` for a credit, ``amount`` for a charge."""
        return -self.amount if self.kind is ProrationKind.CREDIT else self.amount


@dataclass(frozen=True, slots=True)
class Settlement:
    """What a change moves (money in ``currency``, rounded; totals are sums of rounded parts).

    ``net = charge_total - credit_total``. When ``net > 0``: ``invoiced`` is true and the invoice
    is ``lines`` (charges, then credits), ``subtotal = net``, ``taxes``, ``total_tax``,
    ``total_prepaid_credits_applied`` (``line_credits`` per line, ``credit_debits`` per source),
    ``total``. When ``net < 0``: ``wallet_credit = -net`` and no invoice. ``net = 0``: nothing.
    """

    currency: str
    charges: tuple[ChangeLine, ...]
    credits: tuple[ChangeLine, ...]
    charge_total: Decimal
    credit_total: Decimal
    net: Decimal
    taxes: tuple[TaxApplication, ...] = ()
    total_tax: Decimal = ZERO
    line_credits: tuple[Decimal, ...] = ()
    credit_allocations: tuple[CreditAllocation, ...] = ()
    credit_debits: tuple[tuple[str, Decimal], ...] = ()
    total_prepaid_credits_applied: Decimal = ZERO
    total: Decimal = ZERO

    @property
    def lines(self) -> tuple[ChangeLine, ...]:
        """The invoice's lines: charges, then credits."""
        return self.charges + self.credits

    @property
    def invoiced(self) -> bool:
        """True when the change is settled by an invoice (``net > 0``)."""
        return self.net > ZERO

    @property
    def wallet_credit(self) -> Decimal:
        """What goes to the customer's wallet: ``-net`` when the credits exceed the charges, else 0."""
        return -self.net if self.net < ZERO else ZERO


def _netted(charges: Sequence[ChangeLine], credit_total: Decimal) -> list[Decimal]:
    """What each charge line still owes once ``credit_total`` is taken from the lines in order."""
    left = credit_total
    owed = []
    for line in charges:
        taken = min(line.amount, left)
        left -= taken
        owed.append(line.amount - taken)
    return owed


def settle(
    charges: Sequence[ChangeLine],
    credits: Sequence[ChangeLine],
    *,
    currency: str,
    tax_rates: Sequence[TaxRate] = (),
    credit_sources: Sequence[CreditSource] = (),
    as_of: datetime | None = None,
) -> Settlement:
    """Net ``charges`` against ``credits`` (see the module doc). ``tax_rates`` tax a positive
    net; ``credit_sources`` (prepaid wallets, usable from ``as_of``) pay what is left of the
    charge lines. Raises ``ValidationError`` for lines of the wrong kind (field ``charges`` or
    ``credits``) or a bad currency."""
    currency = normalize_currency(currency)
    as_of = require_optional_utc(as_of, field="as_of")
    expected = (("charges", charges, ProrationKind.CHARGE), ("credits", credits, ProrationKind.CREDIT))
    for name, lines, kind in expected:
        for line in lines:
            if not isinstance(line, ChangeLine) or line.kind is not kind:
                raise ValidationError(f"{name} holds {kind.value} ChangeLines only", field=name)
    charge_total = sum((line.amount for line in charges), ZERO)
    credit_total = sum((line.amount for line in credits), ZERO)
    net = charge_total - credit_total
    base = Settlement(currency, tuple(charges), tuple(credits), charge_total, credit_total, net)
    if net <= ZERO:
        return base
    taxes = apply_taxes(tax_rates, net, currency)
    total_tax = sum((tax.tax_amount for tax in taxes), ZERO)
    owed = _netted(charges, credit_total)
    prepaid = ZERO
    line_credits: tuple[Decimal, ...] = (ZERO,) * len(charges)
    allocations: tuple[CreditAllocation, ...] = ()
    debits: tuple[tuple[str, Decimal], ...] = ()
    if credit_sources:
        paid = apply_credits(
            credit_sources,
            [line.line_item_id for line in charges],
            [FIXED] * len(charges),
            owed,
            currency=currency,
            as_of=as_of,
        )
        line_credits, allocations, debits, prepaid = (
            paid.line_credits,
            paid.allocations,
            paid.source_debits,
            paid.total,
        )
    total = round_money(max(ZERO, net + total_tax - prepaid), currency)
    return Settlement(
        currency,
        tuple(charges),
        tuple(credits),
        charge_total,
        credit_total,
        net,
        taxes,
        total_tax,
        line_credits + (ZERO,) * len(credits),
        allocations,
        debits,
        prepaid,
        total,
    )
