"""Issuing subscription invoices: numbering a batch of them in one block of the gap-free
counter (:func:`number_invoices`), holding renewal drafts for the finalization delay
(:func:`finalize_or_hold`), their notification (:func:`invoice_event`), and storing one with its
prepaid credit debits (:func:`issue_invoice`).

Step 3 of :mod:`billingkit.services.invoicing` (which re-exports these names): previews stop
before it, so they write nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from billingkit.domain.invoices import (
    BillingReason,
    Invoice,
    InvoiceStatus,
    invoice_number,
    invoice_number_key,
)
from billingkit.domain.notifications import NotificationEvent
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.invoice_credits import record_debits

if TYPE_CHECKING:  # the invoicing module imports this one
    from billingkit.services.invoicing import ComputedInvoice, Snapshot

__all__ = ["finalize_or_hold", "invoice_event", "issue_invoice", "number_invoices"]


def number_invoices(uow: UnitOfWork, ctx: Context, invoices: Sequence[Invoice]) -> list[Invoice]:
    """Finalize ``invoices`` in order: each one not SKIPPED gets the next number (one block is
    taken from the environment's monthly counter for all of them), ``finalized_at`` and
    ``issue_date``, and nothing is left due for the worker. The counter moves in this same
    transaction, so a rollback gives the numbers back. Nothing is stored."""
    wanted = sum(1 for invoice in invoices if invoice.invoice_status is not InvoiceStatus.SKIPPED)
    if not wanted:
        return list(invoices)
    key = invoice_number_key(ctx.now)
    sequence = uow.counters.next(f"invoice_number:{key}", count=wanted)
    finalized: list[Invoice] = []
    for invoice in invoices:
        if invoice.invoice_status is not InvoiceStatus.SKIPPED:
            invoice = invoice.model_copy(
                update={
                    "invoice_number": invoice_number(key, sequence),
                    "invoice_status": InvoiceStatus.FINALIZED,
                    "finalized_at": ctx.now,
                    "issue_date": ctx.now,
                    "finalize_at": None,
                }
            )
            sequence += 1
        finalized.append(invoice)
    return finalized


def finalize_or_hold(
    uow: UnitOfWork, ctx: Context, drafts: Sequence[Invoice], delay: timedelta
) -> list[Invoice]:
    """The billing run's invoices, in order: renewal drafts (``SUBSCRIPTION_CYCLE``) stay DRAFT
    until ``last_computed_at + delay`` when ``delay`` is above zero (the worker finalizes them
    then: ``finalize_at``); the others are numbered now (:func:`number_invoices`)."""
    if delay <= timedelta(0):
        return number_invoices(uow, ctx, drafts)

    def held(invoice: Invoice) -> bool:
        return (
            invoice.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
            and invoice.invoice_status is InvoiceStatus.DRAFT
        )

    numbered = iter(number_invoices(uow, ctx, [invoice for invoice in drafts if not held(invoice)]))
    return [
        invoice.model_copy(update={"finalize_at": (invoice.last_computed_at or ctx.now) + delay})
        if held(invoice)
        else next(numbered)
        for invoice in drafts
    ]


def invoice_event(ctx: Context, invoice: Invoice) -> NotificationEvent:
    """``invoice.update.finalized`` for a finalized invoice, ``invoice.update`` for a skipped one
    or a draft (not stored yet)."""
    finalized = invoice.invoice_status is InvoiceStatus.FINALIZED
    return notifications.notification(
        ctx, "invoice.update.finalized" if finalized else "invoice.update", invoice
    )


def issue_invoice(
    uow: UnitOfWork,
    ctx: Context,
    invoice: Invoice,
    *,
    computed: ComputedInvoice | None = None,
    snapshot: Snapshot | None = None,
) -> Invoice:
    """Finalize (:func:`number_invoices`), store, and record its notification
    (:func:`invoice_event`). With the ``computed`` draft ``invoice`` was built from and its
    ``snapshot``, the prepaid credits the draft applied are debited in the same unit of work
    (:func:`~billingkit.services.invoice_credits.record_debits`). ``AlreadyExists`` if the
    subscription already has an invoice for this period and billing reason (nothing is written
    then: the caller's unit of work rolls back)."""
    (issued,) = number_invoices(uow, ctx, [invoice])
    uow.invoices.add(issued)
    if computed is not None and snapshot is not None and computed.draft.credit_debits:
        taken = snapshot.credits.take(computed.draft.credit_debits, issued.id)
        record_debits(uow, ctx, snapshot.credits, [taken])
    notifications.record_many(uow, ctx, [invoice_event(ctx, issued)])
    return issued
