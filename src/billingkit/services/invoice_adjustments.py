"""The records an invoice keeps of its adjustments: one coupon application per coupon that
discounted it, one tax application per rate that taxed it (the spec's "Invoice coupon application"
and tax application shapes).

The billing core (:func:`billingkit.domain.invoicing.assemble_invoice`) computes the money; this
module only turns its results into the stored records, so every kind of invoice (subscription,
direct, recomputed draft) records its adjustments the same way, as typed records
(:class:`~billingkit.domain.invoices.InvoiceCouponApplication` and
:class:`~billingkit.domain.invoices.InvoiceTax`) that every store gives back the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from billingkit.domain.catalog import Coupon, TaxRate
from billingkit.domain.coupons import CouponApplication
from billingkit.domain.invoices import InvoiceCouponApplication, InvoiceLineItem, InvoiceTax
from billingkit.domain.taxes import TaxApplication
from billingkit.services.context import Context

__all__ = ["AppliedTaxRate", "coupon_application_records", "tax_application_records"]


@dataclass(frozen=True, slots=True)
class AppliedTaxRate:
    """A tax rate an invoice is taxed with, and the tax association that brought it (None when the
    rate was named on the invoice itself)."""

    rate: TaxRate
    association_id: str | None = None


def _common(ctx: Context, prefix: str) -> dict[str, Any]:
    return {"id": ctx.ids.new(prefix), **ctx.stamp(), "applied_at": ctx.now}


def coupon_application_records(
    ctx: Context,
    *,
    invoice_id: str,
    subscription_id: str | None,
    applications: Sequence[CouponApplication],
    lines: Sequence[InvoiceLineItem],
    coupons: Mapping[str, Coupon],
) -> tuple[InvoiceCouponApplication, ...]:
    """One record per coupon application of an invoice. A line coupon's record names the invoice
    line it discounted (the first line of its subscription line item, or, for invoices without
    subscription line items, the line whose id it carries); an invoice-level one names none.
    ``coupon_snapshot`` is the coupon as it was when applied (from ``coupons``, by id)."""
    line_of: dict[str, str] = {}
    for line in lines:
        key = line.subscription_line_item_id or line.id
        line_of.setdefault(key, line.id)
    records = []
    for app in applications:
        coupon = coupons.get(app.coupon_id)
        records.append(
            InvoiceCouponApplication(
                **_common(ctx, "coupon_app"),
                invoice_id=invoice_id,
                invoice_line_item_id=line_of.get(app.line_item_id) if app.line_item_id else None,
                subscription_id=subscription_id,
                coupon_id=app.coupon_id,
                coupon_association_id=app.coupon_association_id or None,
                coupon_snapshot=coupon.to_dict() if coupon is not None else {},
                discount_type=app.discount_type,
                discount_percentage=app.discount_percentage,
                discounted_amount=app.discounted_amount,
                original_price=app.original_price,
                final_price=app.final_price,
                currency=app.currency,
            )
        )
    return tuple(records)


def tax_application_records(
    ctx: Context,
    *,
    invoice_id: str,
    applications: Sequence[TaxApplication],
    rates: Mapping[str, AppliedTaxRate],
) -> tuple[InvoiceTax, ...]:
    """One record per tax line of an invoice: the rate (embedded as it was), the association that
    brought it, the taxable amount and the tax. ``rates`` maps each applied rate id to its rate."""
    records = []
    for app in applications:
        applied = rates.get(app.tax_rate_id)
        records.append(
            InvoiceTax(
                **_common(ctx, "taxapp"),
                tax_rate_id=app.tax_rate_id,
                tax_association_id=applied.association_id if applied is not None else None,
                entity_id=invoice_id,
                taxable_amount=app.taxable_amount,
                tax_amount=app.tax_amount,
                currency=app.currency,
                idempotency_key=f"{invoice_id}:{app.tax_rate_id}",
                tax_rate=applied.rate if applied is not None else None,
            )
        )
    return tuple(records)
