"""Recalculating a DRAFT subscription invoice in place: ``POST /invoices/{id}/recalculate-v2``
and ``/recalculate`` (reference notes §4.12).

The draft is priced again with the billing run's own code
(:func:`billingkit.services.invoice_recompute.price_again`, the path of ``scoped.invoices.recompute``)
from its inputs as stored now (line items, prices, meters, allowances, coupons, tax associations,
the usage stored for its windows) at the current instant, and the result replaces its lines,
coupon and tax records and totals. Rules:

* Only a DRAFT is recalculated (``InvalidOperation``, 400, for any other status: a finalized
  invoice never changes, it is corrected with a credit note); one whose lines were edited by hand
  (``is_manually_edited``) is refused too, so an edit is never silently undone; so are the invoice
  kinds :func:`~billingkit.services.invoice_recompute.recompute_invoice` refuses (one-off, manual,
  change and threshold invoices: no inputs to price again).
* The draft keeps its id, status, number (none yet), billing sequence, due date and what was
  paid: ``amount_remaining`` is the new ``amount_due`` less ``amount_paid`` (never below 0), and
  an unpaid invoice's ``payment_status`` follows its new amount (SUCCEEDED at 0, else PENDING).
  A draft held by the finalization delay is held again from now.
* One write: the version is bumped (``version``, when given, must be the stored one, else
  ``VersionConflict``, 409) and ``invoice.update`` is recorded. With ``finalize`` the draft is
  then finalized in the same unit of work (``invoice.update.finalized``).
"""

from __future__ import annotations

from billingkit.domain.access import Action
from billingkit.domain.invoices import Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.money import ZERO
from billingkit.domain.validation import InputModel
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.invoice_lifecycle import finalize_invoice
from billingkit.services.invoice_recompute import price_again
from billingkit.services.records import get_live

__all__ = ["InvoiceRecalculation", "recalculate_invoice"]


class InvoiceRecalculation(InputModel):
    """``finalize``: finalize the draft after recalculating it (the v2 route's default); ``version``
    (a billingkit extension): the version the caller read."""

    finalize: bool = False
    version: int | None = None


def _check_draft(invoice: Invoice) -> None:
    if invoice.invoice_status is not InvoiceStatus.DRAFT:
        raise InvalidOperation(
            f"invoice {invoice.id} is {invoice.invoice_status.value}: only a DRAFT invoice is recalculated"
        )
    if invoice.is_manually_edited:
        raise InvalidOperation(
            f"invoice {invoice.id} was edited by hand (is_manually_edited): "
            "recalculating would undo the edits"
        )


def recalculate_invoice(
    uow: UnitOfWork, ctx: Context, *, invoice_id: str, request: InvoiceRecalculation
) -> Invoice:
    """Price DRAFT invoice ``invoice_id`` again from its inputs as stored now and store the result
    in place (see the module rules); with ``request.finalize``, finalize it. Answers the invoice as
    stored.

    Raises ``NotFound``, ``InvalidOperation`` (not a DRAFT, edited by hand, or a kind that is not
    recomputed) and ``VersionConflict`` (a stale ``version``).
    """
    ctx.require("invoice", Action.WRITE)
    invoice = get_live(uow.invoices, "invoice", invoice_id)
    _check_draft(invoice)
    expected = invoice.version if request.version is None else request.version
    fresh, _ = price_again(uow, ctx, invoice, at=ctx.now)
    remaining = fresh.amount_due - invoice.amount_paid
    changes: dict[str, object] = {
        "line_items": fresh.line_items,
        "coupon_applications": fresh.coupon_applications,
        "taxes": fresh.taxes,
        "subtotal": fresh.subtotal,
        "total_discount": fresh.total_discount,
        "total_tax": fresh.total_tax,
        "total": fresh.total,
        "amount_due": fresh.amount_due,
        "amount_remaining": remaining if remaining > ZERO else ZERO,
        "last_computed_at": ctx.now,
    }
    if invoice.amount_paid == ZERO and invoice.payment_status in (
        PaymentStatus.PENDING,
        PaymentStatus.SUCCEEDED,
    ):
        changes["payment_status"] = (
            PaymentStatus.SUCCEEDED if fresh.amount_due == ZERO else PaymentStatus.PENDING
        )
    if invoice.finalize_at is not None:
        changes["finalize_at"] = ctx.now + ctx.settings.invoice_finalization_delay
    updated = invoice.model_copy(update={**changes, **ctx.touch()})
    saved = uow.invoices.update(updated, expected_version=expected)
    notifications.notify(uow, ctx, "invoice.update", saved)
    if request.finalize:
        return finalize_invoice(uow, ctx, invoice_id=saved.id)
    return saved
