"""Where an invoice's coupons and tax rates come from, read from the store.

A direct invoice names its own (coupon ids, tax rate ids or codes); it keeps them as ids in
``adjustment_sources`` so a later ``apply_discount`` recomputes with what it was created with,
minus what was archived since. A subscription invoice takes its subscription's coupon
associations and tax rates from :func:`billingkit.services.invoicing.load_snapshot`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from billingkit.domain.catalog import Coupon, TaxRate
from billingkit.domain.catalog.tax_rates import TaxRateStatus
from billingkit.domain.coupons import CouponAssociation
from billingkit.domain.invoice_adjustments import InvoiceCoupon, invoice_coupon_associations
from billingkit.domain.invoices import Invoice
from billingkit.domain.resources import Status
from billingkit.ports import UnitOfWork
from billingkit.services.invoice_adjustments import AppliedTaxRate
from billingkit.services.invoicing import load_snapshot

__all__ = ["Adjustments", "invoice_adjustment_sources"]


@dataclass(frozen=True, slots=True)
class Adjustments:
    """What an invoice's discounts and taxes are computed with: core coupon associations, the
    stored coupons by id (their snapshots go on the application records), the tax rates in
    order, and the association id each direct coupon was given (None when none was)."""

    associations: Sequence[CouponAssociation]
    coupons: Mapping[str, Coupon]
    rates: Sequence[AppliedTaxRate]
    given_association_ids: Mapping[tuple[str, str | None], str | None] | None = None


def direct_sources(coupons: Sequence[InvoiceCoupon], rates: Sequence[TaxRate]) -> dict[str, Any]:
    """The ``adjustment_sources`` a direct invoice keeps: coupon ids (with the line each discounts
    and the caller's association id) and tax rate ids, in order."""
    return {
        "coupons": [
            {"coupon_id": c.coupon.id, "line_id": c.line_id, "coupon_association_id": c.association_id}
            for c in coupons
        ],
        "tax_rate_ids": [rate.id for rate in rates],
    }


def invoice_adjustment_sources(uow: UnitOfWork, invoice: Invoice, *, at: datetime) -> Adjustments:
    """What ``apply_discount`` recomputes ``invoice`` with at ``at`` (the recompute instant).

    A subscription invoice: its subscription's coupon associations and tax rates as the snapshot
    loads them (removed associations are not loaded). A direct invoice: the coupons and tax rates
    it was created with that are still live (an archived coupon or rate is dropped).
    """
    if invoice.adjustment_sources is None:
        if invoice.subscription_id is None:
            return Adjustments((), {}, ())
        sub = uow.subscriptions.find(invoice.subscription_id)
        if sub is None:
            return Adjustments((), {}, ())
        snapshot = load_snapshot(uow, [sub], at=at, credits=False)
        return Adjustments(
            snapshot.coupon_associations.get(sub.id, ()),
            snapshot.coupons,
            snapshot.tax_rates.get(sub.id, ()),
        )
    sources = invoice.adjustment_sources
    named = sources.get("coupons", [])
    stored = {
        coupon.id: coupon
        for coupon in uow.coupons.find_many({item["coupon_id"] for item in named})
        if coupon.status is Status.PUBLISHED
    }
    kept = [
        InvoiceCoupon(stored[item["coupon_id"]].to_core(), item["line_id"], item["coupon_association_id"])
        for item in named
        if item["coupon_id"] in stored
    ]
    start = invoice.period_start or invoice.created_at
    by_id = {
        rate.id: rate
        for rate in uow.tax_rates.find_many(sources.get("tax_rate_ids", []))
        if rate.status is Status.PUBLISHED and rate.tax_rate_status is TaxRateStatus.ACTIVE
    }
    rates = [AppliedTaxRate(by_id[i]) for i in sources.get("tax_rate_ids", []) if i in by_id]
    return Adjustments(
        invoice_coupon_associations(kept, start),
        stored,
        rates,
        {(c.coupon.id, c.line_id): c.association_id for c in kept},
    )
