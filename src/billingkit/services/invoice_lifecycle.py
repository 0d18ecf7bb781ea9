"""Moving a stored invoice through its lifecycle: finalize, void, record a payment by hand, and
the worker's finalization of renewal drafts whose delay has passed.

The rules are pure (:mod:`billingkit.domain.invoice_lifecycle`); here they are applied to the
stored invoice inside the caller's unit of work. Every write checks the version the invoice was
read at, so two concurrent changes of one invoice cannot both succeed (the second is a
``VersionConflict``, 409). Each change records its notification in the same unit of work:
``invoice.update.finalized``, ``invoice.update.voided``, ``invoice.update.payment``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from decimal import Decimal
from typing import cast

from billingkit.domain.access import Action
from billingkit.domain.invoice_lifecycle import check_finalizable, payment_changes, void_changes, void_refund
from billingkit.domain.invoices import Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.money import ZERO
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.resources import Record
from billingkit.domain.validation import DecimalText, InputModel
from billingkit.domain.wallets import TransactionReason, TransactionReferenceType, credits_for, movement_key
from billingkit.ports import UnitOfWork
from billingkit.services import invoice_settlement, notifications, wallet_ledger
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import Context, DueRun
from billingkit.services.invoicing import invoice_event, number_invoices
from billingkit.services.records import get_live

__all__ = [
    "PaymentUpdate",
    "finalize_due_invoices",
    "finalize_invoice",
    "update_payment_status",
    "void_invoice",
]

ENTITY = "invoice"
LABEL = "invoice"


class PaymentUpdate(InputModel):
    """The reference's UpdatePaymentStatusRequest: ``payment_status`` and, optionally, ``amount``
    (money: the total paid so far; default the amount due for SUCCEEDED, what was already paid
    for PENDING and FAILED)."""

    payment_status: PaymentStatus
    amount: DecimalText | None = None


def _save(uow: UnitOfWork, ctx: Context, invoice: Invoice, changes: dict[str, object]) -> Invoice:
    updated = invoice.model_copy(update={**changes, **ctx.touch()})
    return uow.invoices.update(updated, expected_version=invoice.version)


def finalize_invoice(uow: UnitOfWork, ctx: Context, *, invoice_id: str) -> Invoice:
    """Finalize a DRAFT: the next number of the environment's gap-free sequence, ``finalized_at``
    and ``issue_date`` now; ``invoice.update.finalized``.

    Raises ``NotFound``; ``InvalidOperation`` for an invoice that is not a DRAFT.
    """
    ctx.require(ENTITY, Action.WRITE)
    invoice = get_live(uow.invoices, LABEL, invoice_id)
    check_finalizable(invoice)
    (numbered,) = number_invoices(uow, ctx, [invoice])
    saved = _save(uow, ctx, invoice, numbered.model_dump(include=_NUMBERED))
    notifications.notify(uow, ctx, "invoice.update.finalized", saved)
    return saved


_NUMBERED = {"invoice_number", "invoice_status", "finalized_at", "issue_date", "finalize_at"}


def void_invoice(uow: UnitOfWork, ctx: Context, *, invoice_id: str) -> Invoice:
    """Void a DRAFT, FINALIZED or SKIPPED invoice: ``VOIDED``, ``voided_at`` now; its number (if
    any) stays used; ``invoice.update.voided``.

    Money paid for it (``amount_paid`` plus prepaid credits applied, less what was refunded
    already) is credited to the customer's PRE_PAID wallet in the invoice currency (made if
    missing) with reason ``INVOICE_VOID_REFUND``, reference INVOICE/<id>, under the key
    ``invoice_void_refund|<id>`` (so it is credited once whatever happens); the invoice's
    ``refunded_amount`` grows by it and its ``payment_status`` becomes REFUNDED.

    Raises ``NotFound``; ``InvalidOperation`` for a voided invoice (a retried void is refused, and
    the key guards the money), a payment status that cannot be voided, or an invoice whose sold
    wallet credits have landed (:func:`~billingkit.services.invoice_settlement.check_not_sold_credits`).
    """
    ctx.require(ENTITY, Action.WRITE)
    invoice = get_live(uow.invoices, LABEL, invoice_id)
    invoice_settlement.check_not_sold_credits(uow, invoice, "voided")
    refund = void_refund(invoice)
    saved = _save(uow, ctx, invoice, void_changes(invoice, ctx.now))
    invoice_settlement.invoice_voided(uow, ctx, saved)
    if refund > ZERO:
        wallet = wallet_ledger.prepaid_wallet(
            uow, ctx, customer_id=saved.customer_id, currency=saved.currency
        )
        wallet_ledger.credit(
            uow,
            ctx,
            wallet,
            credits=credits_for(refund, wallet.conversion_rate),
            amount=refund,
            reason=TransactionReason.INVOICE_VOID_REFUND,
            key=movement_key("invoice_void_refund", saved.id),
            reference_type=TransactionReferenceType.INVOICE,
            reference_id=saved.id,
            description=f"refund of voided invoice {saved.invoice_number or saved.id}",
        )
    notifications.notify(uow, ctx, "invoice.update.voided", saved)
    return saved


def update_payment_status(
    uow: UnitOfWork, ctx: Context, *, invoice_id: str, request: PaymentUpdate
) -> Invoice:
    """Record a payment status by hand on a FINALIZED invoice (reference notes §4.11):
    ``amount_paid``, ``amount_remaining``, ``overpaid_amount``, ``paid_at``;
    ``invoice.update.payment``.

    Raises ``NotFound``; ``InvalidOperation`` for a DRAFT, SKIPPED or VOIDED invoice or a
    transition the table refuses; ``ValidationError`` (field ``amount``) for figures that
    contradict the status.
    """
    ctx.require(ENTITY, Action.WRITE)
    invoice = get_live(uow.invoices, LABEL, invoice_id)
    amount = Decimal(request.amount) if request.amount is not None else None
    changes = payment_changes(invoice, request.payment_status, amount, ctx.now)
    saved = _save(uow, ctx, invoice, changes)
    invoice_settlement.invoice_paid(uow, ctx, saved)
    notifications.notify(uow, ctx, "invoice.update.payment", saved)
    return saved


def finalize_due_invoices(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of invoices: finalize the claimed renewal drafts whose
    ``finalize_at`` has passed (numbers taken in one block per scope), clear ``finalize_at`` and
    record ``invoice.update.finalized`` for each (the run's report counts the notifications; the
    invoices were counted when the billing run issued them). An invoice no longer a due DRAFT (finalized or
    voided by hand since) only has its ``finalize_at`` cleared."""
    result = BatchResult()
    by_scope: dict[tuple[str, str], list[Invoice]] = defaultdict(list)
    for invoice in cast("Sequence[Invoice]", items):
        if invoice.finalize_at is not None and invoice.finalize_at <= run.now:
            by_scope[(invoice.tenant_id, invoice.environment_id)].append(invoice)
    for (tenant_id, environment_id), group in by_scope.items():
        ctx = run.context(tenant_id, environment_id)
        scoped = uow.for_scope(tenant_id, environment_id)
        drafts = [invoice for invoice in group if invoice.invoice_status is InvoiceStatus.DRAFT]
        numbered = {invoice.id: invoice for invoice in number_invoices(scoped, ctx, drafts)}
        changes: list[tuple[Invoice, Invoice]] = []
        events: list[NotificationEvent] = []
        for invoice in group:
            done = numbered.get(invoice.id)
            if done is None:
                changes.append((invoice, invoice.model_copy(update={"finalize_at": None})))
                continue
            updated = done.model_copy(update=ctx.touch())
            changes.append((invoice, updated))
            events.append(invoice_event(ctx, updated.model_copy(update={"version": invoice.version + 1})))
        scoped.invoices.update_many(changes)
        notifications.record_many(scoped, ctx, events)
        # The run already counted these invoices when it issued them as drafts.
        result.report.notification_count += len(events)
        result.recorded += ctx.recorded
    return result
