"""Editing a stored invoice (``PUT /invoices/{id}``) and recomputing a draft's discounts and
taxes against its current lines (``apply_discount``).

What may change in which status (:func:`billingkit.domain.invoice_lifecycle.check_editable`):
``due_date``, ``invoice_pdf_url`` and ``metadata`` on a DRAFT, FINALIZED or SKIPPED invoice (as
the reference allows on drafts and finalized ones); ``apply_discount`` on a DRAFT only; nothing
on a VOIDED one. ``version`` (a billingkit extension) is the version the caller read: a stale one
is a ``VersionConflict`` (409). Without it the update still checks the version it read itself, so
the read, the recompute and the write act as one locked step: a concurrent change of the same
invoice makes one of them fail instead of one overwriting the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from billingkit.domain.access import Action
from billingkit.domain.catalog import Coupon
from billingkit.domain.coupons import CouponAssociation
from billingkit.domain.invoice_adjustments import adjust_invoice, invoice_period
from billingkit.domain.invoice_lifecycle import check_editable
from billingkit.domain.invoices import Invoice, PaymentStatus
from billingkit.domain.money import ZERO
from billingkit.domain.validation import InputModel, Metadata, UtcDatetime
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.invoice_adjustments import (
    AppliedTaxRate,
    coupon_application_records,
    tax_application_records,
)
from billingkit.services.invoice_sources import invoice_adjustment_sources
from billingkit.services.records import get_live

__all__ = ["InvoiceUpdate", "own_applications", "recompute_adjustments", "update_invoice"]

ENTITY = "invoice"
LABEL = "invoice"


class InvoiceUpdate(InputModel):
    """The reference's UpdateInvoiceRequest (``due_date``, ``invoice_pdf_url``, ``metadata``,
    ``apply_discount``) plus ``version``, the version the caller read (optional)."""

    due_date: UtcDatetime | None = None
    invoice_pdf_url: str | None = None
    metadata: Metadata | None = None
    apply_discount: bool = False
    version: int | None = None


def own_applications(invoice: Invoice) -> dict[str, int]:
    """Coupon association id -> how many of ``invoice``'s coupon applications came from it."""
    counts: dict[str, int] = {}
    for record in invoice.coupon_applications:
        key = record.coupon_association_id
        if key:
            counts[key] = counts.get(key, 0) + 1
    return counts


def recompute_adjustments(
    ctx: Context,
    invoice: Invoice,
    associations: Sequence[CouponAssociation],
    rates: Sequence[AppliedTaxRate],
    *,
    coupons: Mapping[str, Coupon],
    given_association_ids: Mapping[tuple[str, str | None], str | None] | None = None,
) -> Invoice:
    """``invoice`` with its discounts, coupon applications, tax lines and totals recomputed from
    its stored lines with ``associations`` and ``rates`` (reference notes §4.6). Spec rule 5: a
    coupon no longer among ``associations`` (its association was removed) is dropped with the tax
    it lowered, and ``amount_remaining`` is never below 0.

    An association's earlier application to this same invoice does not count against its cadence
    (recomputing a ``once`` coupon's invoice keeps the coupon). ``given_association_ids`` maps a
    direct invoice's (coupon id, line) to the association id its caller gave (None: none).
    Nothing is stored.
    """
    own = own_applications(invoice)
    usable = [
        a if a.id not in own else replace(a, applications=max(a.applications - own[a.id], 0))
        for a in associations
    ]
    lines = invoice.line_items
    start, end = invoice_period(invoice.period_start or invoice.created_at, invoice.period_end)
    result = adjust_invoice(
        [line.subscription_line_item_id or line.id for line in lines],
        [line.amount for line in lines],
        usable,
        [applied.rate.to_core() for applied in rates],
        currency=invoice.currency,
        period_start=start,
        period_end=end,
        as_of=ctx.now,
        prepaid_credits=invoice.total_prepaid_credits_applied,
    )
    new_lines = tuple(
        line.model_copy(update={"line_item_discount": own_disc, "invoice_level_discount": inv_disc})
        for line, own_disc, inv_disc in zip(
            lines, result.line_item_discounts, result.invoice_level_discounts, strict=True
        )
    )
    applications = result.coupon_applications
    if given_association_ids is not None:
        applications = tuple(
            app._replace(
                coupon_association_id=given_association_ids.get((app.coupon_id, app.line_item_id)) or ""
            )
            for app in applications
        )
    remaining = result.amount_due - invoice.amount_paid
    changes: dict[str, object] = {
        "line_items": new_lines,
        "subtotal": result.subtotal,
        "total_discount": result.total_discount,
        "total_tax": result.total_tax,
        "total": result.total,
        "amount_due": result.amount_due,
        "amount_remaining": remaining if remaining > ZERO else ZERO,
        "last_computed_at": ctx.now,
        "coupon_applications": coupon_application_records(
            ctx,
            invoice_id=invoice.id,
            subscription_id=invoice.subscription_id,
            applications=applications,
            lines=new_lines,
            coupons=coupons,
        ),
        "taxes": tax_application_records(
            ctx,
            invoice_id=invoice.id,
            applications=result.tax_applications,
            rates={applied.rate.id: applied for applied in rates},
        ),
    }
    if invoice.amount_paid == ZERO and invoice.payment_status in (
        PaymentStatus.PENDING,
        PaymentStatus.SUCCEEDED,
    ):
        changes["payment_status"] = (
            PaymentStatus.SUCCEEDED if result.amount_due == ZERO else PaymentStatus.PENDING
        )
    if invoice.finalize_at is not None:
        # Reference notes §4.10: a draft finalizes the delay after it was last computed.
        changes["finalize_at"] = ctx.now + ctx.settings.invoice_finalization_delay
    return invoice.model_copy(update=changes)


def update_invoice(uow: UnitOfWork, ctx: Context, *, invoice_id: str, request: InvoiceUpdate) -> Invoice:
    """Change ``due_date``, ``invoice_pdf_url``, ``metadata`` (replaced as a whole) and, with
    ``apply_discount``, recompute a draft's coupons and taxes (:func:`recompute_adjustments`)
    with the sources it has now; ``invoice.update``.

    Raises ``NotFound``; ``InvalidOperation`` for a voided invoice, or ``apply_discount`` on an
    invoice that is not a DRAFT; ``VersionConflict`` for a stale ``version``.
    """
    ctx.require(ENTITY, Action.WRITE)
    invoice = get_live(uow.invoices, LABEL, invoice_id)
    check_editable(invoice, apply_discount=request.apply_discount)
    expected = invoice.version if request.version is None else request.version
    changed = invoice
    if request.apply_discount:
        sources = invoice_adjustment_sources(uow, invoice, at=ctx.now)
        changed = recompute_adjustments(
            ctx,
            invoice,
            sources.associations,
            sources.rates,
            coupons=sources.coupons,
            given_association_ids=sources.given_association_ids,
        )
    fields = request.model_dump(include={"due_date", "invoice_pdf_url", "metadata"}, exclude_none=True)
    updated = changed.model_copy(update={**fields, **ctx.touch()})
    saved = uow.invoices.update(updated, expected_version=expected)
    notifications.notify(uow, ctx, "invoice.update", saved)
    return saved
