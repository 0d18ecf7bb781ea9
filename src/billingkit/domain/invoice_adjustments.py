"""The money of an invoice whose lines are already priced: a direct (one-off) invoice, or a draft
whose coupons and taxes are recomputed (``apply_discount``).

Order (reference notes §4.6), each figure rounded where it is produced:

1. ``subtotal`` = Σ line amounts;
2. line coupons on their lines, then invoice-level coupons one after another on what remains
   (ordered by association start, then id), each spread over the lines in proportion
   (:func:`billingkit.domain.coupons.apply_coupons`); ``total_discount`` = Σ both;
3. taxes, every rate on the same base ``subtotal - total_discount``
   (:func:`billingkit.domain.taxes.apply_taxes`);
4. ``total = subtotal - total_discount + total_tax - prepaid credits``, never below 0;
   ``amount_due = total``.

Worked example: lines 120.00 and 80.00; 10 % coupon on the first line -> 12.00; then 20.00 off
the invoice, spread over what remains (108.00 and 80.00) -> 11.49 and 8.51; ``total_discount`` =
12.00 + 20.00 = 32.00; VAT 20 % on 200.00 - 32.00 = 168.00 -> 33.60; ``total`` = 200.00 - 32.00 +
33.60 = 201.60.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from billingkit.domain.coupons import Coupon, CouponApplication, CouponAssociation, apply_coupons
from billingkit.domain.money import ZERO, round_money
from billingkit.domain.taxes import TaxApplication, TaxRate, apply_taxes
from billingkit.errors import ValidationError

__all__ = [
    "InvoiceAdjustments",
    "InvoiceCoupon",
    "adjust_invoice",
    "invoice_coupon_associations",
    "invoice_period",
]


@dataclass(frozen=True, slots=True)
class InvoiceCoupon:
    """A coupon named on a direct invoice: on the whole invoice (``line_id`` None) or on one of its
    lines (``line_id`` = that line's key). ``association_id`` is the caller's coupon association
    id, if any (kept on the application record)."""

    coupon: Coupon
    line_id: str | None = None
    association_id: str | None = None


@dataclass(frozen=True, slots=True)
class InvoiceAdjustments:
    """What :func:`adjust_invoice` computed; per-line tuples follow the input lines' order."""

    subtotal: Decimal
    line_item_discounts: tuple[Decimal, ...]
    invoice_level_discounts: tuple[Decimal, ...]
    coupon_applications: tuple[CouponApplication, ...]
    tax_applications: tuple[TaxApplication, ...]
    total_discount: Decimal
    total_tax: Decimal
    total: Decimal

    @property
    def amount_due(self) -> Decimal:
        return self.total


def invoice_period(start: datetime, end: datetime | None) -> tuple[datetime, datetime]:
    """The window coupons are checked against: ``[start, end)``, or the instant ``start`` alone
    (a one-microsecond window) for an invoice without a period."""
    return start, end if end is not None and end > start else start + timedelta.resolution


def invoice_coupon_associations(
    coupons: Sequence[InvoiceCoupon], start: datetime
) -> tuple[CouponAssociation, ...]:
    """The core associations of a direct invoice's coupons, all starting at ``start`` (so they
    apply in coupon id order, as associations starting together do). The association id is the
    caller's, else the coupon id; :func:`adjust_invoice` callers map the coupon id back to none."""
    return tuple(
        CouponAssociation(
            id=item.association_id or item.coupon.id,
            coupon=item.coupon,
            start_date=start,
            line_item_id=item.line_id,
        )
        for item in coupons
    )


def adjust_invoice(
    line_ids: Sequence[str],
    amounts: Sequence[Decimal],
    associations: Sequence[CouponAssociation],
    rates: Sequence[TaxRate],
    *,
    currency: str,
    period_start: datetime,
    period_end: datetime,
    as_of: datetime | None = None,
    prepaid_credits: Decimal = ZERO,
) -> InvoiceAdjustments:
    """Discounts, taxes and totals of lines priced at ``amounts`` (money, at the currency's
    precision, >= 0). ``line_ids[i]`` is the key line coupons name (a subscription line item id,
    or the invoice line's id). Associations that do not apply to ``[period_start, period_end)``
    (or at ``as_of``) are left out, as on subscription invoices.

    Example (module docstring): lines [120.00, 80.00], 10 % on line 1 and 20.00 off the invoice,
    VAT 20 % -> discount 32.00, tax 33.60, total 201.60. Raises ``ValidationError`` (field
    ``line_items``) for a negative amount or one with more decimals than ``currency`` has.
    """
    for index, amount in enumerate(amounts):
        if amount < ZERO or round_money(amount, currency) != amount:
            raise ValidationError(
                f"line amount {amount} must be at least 0 with at most {currency}'s decimals",
                field=f"line_items[{index}].amount",
            )
    subtotal = round_money(sum(amounts, ZERO), currency)
    count = len(amounts)
    line_disc: tuple[Decimal, ...] = (ZERO,) * count
    inv_disc: tuple[Decimal, ...] = (ZERO,) * count
    applications: tuple[CouponApplication, ...] = ()
    if associations:
        result = apply_coupons(
            line_ids,
            amounts,
            associations,
            currency=currency,
            period_start=period_start,
            period_end=period_end,
            as_of=as_of,
        )
        line_disc, inv_disc, applications = (
            result.line_item_discounts,
            result.invoice_level_discounts,
            result.applications,
        )
    total_discount = sum(line_disc, ZERO) + sum(inv_disc, ZERO)
    taxes = apply_taxes(rates, subtotal - total_discount, currency)
    total_tax = sum((tax.tax_amount for tax in taxes), ZERO)
    total = subtotal - total_discount + total_tax - prepaid_credits
    return InvoiceAdjustments(
        subtotal=subtotal,
        line_item_discounts=line_disc,
        invoice_level_discounts=inv_disc,
        coupon_applications=applications,
        tax_applications=taxes,
        total_discount=round_money(total_discount, currency),
        total_tax=round_money(total_tax, currency),
        total=round_money(total if total > ZERO else ZERO, currency),
    )
