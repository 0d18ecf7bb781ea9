"""Credit notes against finalized invoices: create (and by default finalize), read, list,
finalize, void.

The money rules are pure (:mod:`billingkit.domain.credit_note_rules`): a note on an invoice whose
money was collected is a ``REFUND`` (the money goes to the customer's PRE_PAID wallet in the
invoice's currency), one on an invoice still being collected an ``ADJUSTMENT`` (it lowers what is
due). Here they are applied inside the caller's unit of work:

* **Idempotent creation** (spec rule 2). The ``idempotency_key`` is the caller's, or derives from
  the request's content (invoice, reason, lines and amounts); it is unique in storage over every
  note. A repeated request answers the FIRST note as it is now: no second ``credit_note.created``,
  no second finalization. The caller's key with another content is ``IdempotencyConflict`` (409).
* **Finalization locks the invoice** (spec rule 3). It re-reads the invoice, rechecks the capacity
  against it and the other FINALIZED notes, and saves the invoice at the version it read before
  anything else moves, so of two concurrent finalizes the second is a ``VersionConflict`` and
  rolls back whole; the library retries it in a new unit of work (see ``scoped.credit_notes``),
  where the recheck refuses it ("exceeds the refundable amount"). Never an over-refund.
* **Void**: a DRAFT only (nothing moved yet); a finalized note's credit was applied and stays.

Notifications: ``credit_note.created`` on create, ``credit_note.updated`` on finalize and void;
the invoice a finalized note changed records ``invoice.update.payment`` (its payment status
moved) or ``invoice.update``. Errors from the invoice's recomputation propagate: nothing is
swallowed, and the unit of work then writes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Annotated, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.credit_note_rules import (
    check_credit,
    check_creditable,
    content_fingerprint,
    credit_note_number,
    credit_note_number_key,
    credit_note_type,
    default_idempotency_key,
    finalized_changes,
    looks_assigned,
)
from billingkit.domain.credit_notes import (
    CreditNote,
    CreditNoteLineItem,
    CreditNoteReason,
    CreditNoteStatus,
    CreditNoteType,
    RefundTarget,
)
from billingkit.domain.invoices import Invoice, PaymentStatus
from billingkit.domain.queries import Filter, Op, Page
from billingkit.domain.validation import (
    DecimalText,
    Description,
    Identifier,
    InputModel,
    Key,
    Metadata,
    Name,
)
from billingkit.domain.wallets import TransactionReason, TransactionReferenceType, credits_for, movement_key
from billingkit.errors import AlreadyExists, IdempotencyConflict, InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import invoice_settlement, notifications, wallet_ledger
from billingkit.services.context import Context
from billingkit.services.records import get_live, list_where_in
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "CreditNoteCreate",
    "CreditNoteFinalize",
    "CreditNoteLineCreate",
    "CreditNoteSearch",
    "create_credit_note",
    "finalize_credit_note",
    "get_credit_note",
    "list_credit_notes",
    "void_credit_note",
]

ENTITY = "creditnote"
LABEL = "credit note"
#: The movement cause of the wallet credit a REFUND note makes: ``credit_note|<note id>``.
REFUND_CAUSE = "credit_note"


class CreditNoteLineCreate(InputModel):
    """The reference's ``CreateCreditNoteLineItemRequest``: ``amount`` (money, above zero, in the
    invoice currency's precision) credited on invoice line ``invoice_line_item_id``."""

    invoice_line_item_id: Identifier
    amount: DecimalText
    display_name: Name | None = None
    metadata: Metadata = {}


class CreditNoteCreate(InputModel):
    """The reference's ``CreateCreditNoteRequest``. ``credit_note_number`` is assigned at
    finalization when not given (``CN-YYYYMM-00001``); ``process_credit_note`` (default true)
    finalizes the note in the same call."""

    invoice_id: Identifier
    reason: CreditNoteReason
    memo: Description | None = None
    metadata: Metadata = {}
    line_items: list[CreditNoteLineCreate] = Field(default_factory=list)
    credit_note_number: Key | None = None
    idempotency_key: Key | None = None
    process_credit_note: bool = True
    refund_target: RefundTarget | None = None

    def lines(self) -> list[tuple[str, Decimal]]:
        return [(line.invoice_line_item_id, line.amount) for line in self.line_items]


class CreditNoteFinalize(InputModel):
    """The SDK's ``FinalizeCreditNoteRequest``: where a REFUND's money goes (default and only
    supported target: ``PREPAID_WALLET``)."""

    refund_target: RefundTarget | None = None


def _check_target(target: RefundTarget | None) -> None:
    """Refunds go to the PRE_PAID wallet: a refund to the payment method needs per-payment refund
    accounting, which this version does not keep yet (decision in docs/decisions.md)."""
    if target is RefundTarget.BACK_TO_SOURCE:
        raise ValidationError(
            "refund_target BACK_TO_SOURCE is not supported yet: refunds go to the customer's "
            "PRE_PAID wallet (PREPAID_WALLET)",
            field="refund_target",
        )


class CreditNoteSearch(SearchRequest):
    """``GET /creditnotes``: by invoice(s), customer, subscription, type, status(es), reason."""

    kind: ClassVar[str] = "credit_notes"

    invoice_id: Annotated[str | None, Searches("invoice_id", Op.EQ)] = None
    invoice_ids: Annotated[list[str] | None, Searches("invoice_id", Op.IN)] = None
    customer_id: Annotated[str | None, Searches("customer_id", Op.EQ)] = None
    subscription_id: Annotated[str | None, Searches("subscription_id", Op.EQ)] = None
    credit_note_type: Annotated[CreditNoteType | None, Searches("credit_note_type", Op.EQ)] = None
    credit_note_status: Annotated[list[CreditNoteStatus] | None, Searches("credit_note_status", Op.IN)] = None
    reason: Annotated[CreditNoteReason | None, Searches("reason", Op.EQ)] = None


def _note_lines(note: CreditNote) -> list[tuple[str, Decimal]]:
    return [(line.invoice_line_item_id, line.amount) for line in note.line_items]


def _first(uow: UnitOfWork, key: str, fingerprint: str, explicit: bool) -> CreditNote | None:
    """The note stored under ``key``; the caller's own key with another content is a conflict."""
    found = uow.credit_notes.find_one(include_archived=True, idempotency_key=key)
    if found is None:
        return None
    if explicit and content_fingerprint(found.invoice_id, found.reason, _note_lines(found)) != fingerprint:
        raise IdempotencyConflict(
            f"idempotency_key {key!r} was used for another credit note request ({found.id})",
            details={"field": "idempotency_key", "credit_note_id": found.id},
        )
    return found


def _credited(uow: UnitOfWork, invoice_id: str, *, besides: str | None = None) -> dict[str, Decimal]:
    """What FINALIZED notes of ``invoice_id`` (other than ``besides``) credited per invoice line."""
    notes = list_where_in(
        uow.credit_notes,
        "invoice_id",
        [invoice_id],
        Filter("credit_note_status", Op.IN, [CreditNoteStatus.FINALIZED.value]),
    )
    credited: dict[str, Decimal] = defaultdict(Decimal)
    for note in notes:
        if note.id != besides:
            for line in note.line_items:
                credited[line.invoice_line_item_id] += line.amount
    return credited


def _number(data: CreditNoteCreate) -> str | None:
    number = data.credit_note_number
    if number is not None and looks_assigned(number):
        raise ValidationError(
            f"credit_note_number {number!r} has the form of the numbers billingkit assigns "
            "(CN-YYYYMM-NNNNN): choose another or leave it out",
            field="credit_note_number",
        )
    return number


def create_credit_note(uow: UnitOfWork, ctx: Context, *, data: CreditNoteCreate) -> CreditNote:
    """Create a credit note on a FINALIZED invoice (``credit_note.created``) and, unless
    ``process_credit_note`` is false, finalize it at once (see :func:`finalize_credit_note`).

    A request already made (same ``idempotency_key``, given or derived) answers the first note as
    it is now, writing nothing. Raises ``NotFound`` (invoice); ``ValidationError`` naming the field
    (no lines, a line not on the invoice, an amount not above zero or finer than the currency);
    ``InvalidOperation`` for an invoice that cannot be credited or an amount above what it can
    take; ``ValidationError`` for ``refund_target`` BACK_TO_SOURCE; ``IdempotencyConflict`` for
    the caller's key used with other content; ``AlreadyExists`` for a ``credit_note_number``
    already taken. Nothing is written on any of them.
    """
    ctx.require(ENTITY, Action.WRITE)
    lines = data.lines()
    fingerprint = content_fingerprint(data.invoice_id, data.reason, lines)
    explicit = data.idempotency_key is not None
    key = data.idempotency_key or default_idempotency_key(data.invoice_id, data.reason, lines)
    if (found := _first(uow, key, fingerprint, explicit)) is not None:
        return found
    _check_target(data.refund_target)
    number = _number(data)
    invoice = get_live(uow.invoices, "invoice", data.invoice_id)
    check_creditable(invoice)
    invoice_settlement.check_not_sold_credits(uow, invoice, "credited")
    note_type = credit_note_type(invoice)
    total = check_credit(invoice, note_type, lines, _credited(uow, invoice.id))
    by_id = {line.id: line for line in invoice.line_items}
    note = CreditNote(
        id=ctx.ids.new("cn"),
        **ctx.stamp(),
        credit_note_number=number,
        invoice_id=invoice.id,
        customer_id=invoice.customer_id,
        subscription_id=invoice.subscription_id,
        credit_note_type=note_type,
        reason=data.reason,
        memo=data.memo,
        currency=invoice.currency,
        total_amount=total,
        idempotency_key=key,
        refund_status=PaymentStatus.PENDING if note_type is CreditNoteType.REFUND else None,
        line_items=tuple(
            CreditNoteLineItem(
                id=ctx.ids.new("cnli"),
                invoice_line_item_id=line.invoice_line_item_id,
                display_name=line.display_name or by_id[line.invoice_line_item_id].display_name,
                amount=line.amount,
                currency=invoice.currency,
                metadata=line.metadata,
            )
            for line in data.line_items
        ),
        metadata=data.metadata,
    )
    try:
        uow.credit_notes.add(note)
    except AlreadyExists:
        # A concurrent request with the same key won: answer its note (or the conflict).
        if (found := _first(uow, key, fingerprint, explicit)) is not None:
            return found
        raise
    notifications.notify(uow, ctx, "credit_note.created", note)
    if data.process_credit_note:
        note = _finalize(uow, ctx, note)
    return note


def get_credit_note(uow: UnitOfWork, ctx: Context, *, credit_note_id: str) -> CreditNote:
    """The credit note. Raises ``NotFound``."""
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.credit_notes, LABEL, credit_note_id)


def list_credit_notes(uow: UnitOfWork, ctx: Context, *, search: CreditNoteSearch) -> Page[CreditNote]:
    """A page of credit notes (newest first by default)."""
    ctx.require(ENTITY, Action.READ)
    return uow.credit_notes.list(search.to_query())


def finalize_credit_note(
    uow: UnitOfWork, ctx: Context, *, credit_note_id: str, request: CreditNoteFinalize
) -> CreditNote:
    """Finalize a DRAFT note: recheck it against the invoice as it is now, lock the invoice (save it
    at the version read), apply the credit (see :func:`_finalize`), number the note;
    ``credit_note.updated``. ``request.refund_target``: see :class:`CreditNoteFinalize`.

    Raises ``NotFound``; ``ValidationError`` for ``refund_target`` BACK_TO_SOURCE;
    ``InvalidOperation`` for a note that is not a DRAFT, an invoice that can
    no longer be credited, or an amount above what it can take now ("exceeds the refundable
    amount"); ``VersionConflict`` when a concurrent change saved the invoice (or the wallet) first
    (``scoped.credit_notes.finalize`` retries then, and the recheck decides).
    """
    ctx.require(ENTITY, Action.WRITE)
    _check_target(request.refund_target)
    return _finalize(uow, ctx, get_live(uow.credit_notes, LABEL, credit_note_id))


def _finalize(uow: UnitOfWork, ctx: Context, note: CreditNote) -> CreditNote:
    if note.credit_note_status is not CreditNoteStatus.DRAFT:
        raise InvalidOperation(
            f"credit note {note.id} is {note.credit_note_status.value}: only a DRAFT is finalized"
        )
    invoice = get_live(uow.invoices, "invoice", note.invoice_id)
    lines = _note_lines(note)
    total = check_credit(invoice, note.credit_note_type, lines, _credited(uow, invoice.id, besides=note.id))
    # The lock: the invoice is saved at the version just read, before anything else moves.
    changes = finalized_changes(invoice, note.credit_note_type, total)
    saved = uow.invoices.update(
        invoice.model_copy(update={**changes, **ctx.touch()}), expected_version=invoice.version
    )
    refund_status = note.refund_status
    if note.credit_note_type is CreditNoteType.REFUND:
        _refund_to_wallet(uow, ctx, note, saved, total)
        refund_status = PaymentStatus.SUCCEEDED
    finalized = uow.credit_notes.update(
        note.model_copy(
            update={
                "credit_note_status": CreditNoteStatus.FINALIZED,
                "credit_note_number": note.credit_note_number or _next_number(uow, ctx),
                "finalized_at": ctx.now,
                "refund_status": refund_status,
                **ctx.touch(),
            }
        ),
        expected_version=note.version,
    )
    _invoice_changed(uow, ctx, invoice, saved)
    notifications.notify(uow, ctx, "credit_note.updated", finalized)
    return finalized


def _next_number(uow: UnitOfWork, ctx: Context) -> str:
    """The next number of the environment's gap-free monthly sequence (the counter moves in this
    transaction, so a rollback gives the number back)."""
    key = credit_note_number_key(ctx.now.year, ctx.now.month)
    return credit_note_number(key, uow.counters.next(f"credit_note_number:{key}"))


def _refund_to_wallet(
    uow: UnitOfWork, ctx: Context, note: CreditNote, invoice: Invoice, total: Decimal
) -> None:
    """``total`` (money) back to the customer's PRE_PAID wallet in the invoice's currency (made if
    missing), reason ``CREDIT_NOTE``, keyed by the note so it lands once."""
    wallet = wallet_ledger.prepaid_wallet(
        uow, ctx, customer_id=invoice.customer_id, currency=invoice.currency
    )
    wallet_ledger.credit(
        uow,
        ctx,
        wallet,
        credits=credits_for(total, wallet.conversion_rate),
        amount=total,
        reason=TransactionReason.CREDIT_NOTE,
        key=movement_key(REFUND_CAUSE, note.id),
        reference_type=TransactionReferenceType.INVOICE,
        reference_id=invoice.id,
        description=f"Refund of credit note {note.id} on invoice {invoice.invoice_number or invoice.id}",
        metadata={"credit_note_id": note.id},
    )


def _invoice_changed(uow: UnitOfWork, ctx: Context, before: Invoice, saved: Invoice) -> None:
    if saved.payment_status is not before.payment_status:
        invoice_settlement.invoice_paid(uow, ctx, saved)
        notifications.notify(uow, ctx, "invoice.update.payment", saved)
    else:
        notifications.notify(uow, ctx, "invoice.update", saved)


def void_credit_note(uow: UnitOfWork, ctx: Context, *, credit_note_id: str) -> CreditNote:
    """Void a DRAFT note (nothing had moved; its amounts no longer count anywhere): ``VOIDED``,
    ``voided_at`` now; ``credit_note.updated``.

    Raises ``NotFound``; ``InvalidOperation`` for a note already voided or FINALIZED (its credit
    was applied: an adjustment lowered what the invoice asks, a refund paid the wallet).
    """
    ctx.require(ENTITY, Action.WRITE)
    note = get_live(uow.credit_notes, LABEL, credit_note_id)
    if note.credit_note_status is CreditNoteStatus.VOIDED:
        raise InvalidOperation(f"credit note {note.id} is already voided")
    if note.credit_note_status is CreditNoteStatus.FINALIZED:
        raise InvalidOperation(
            f"credit note {note.id} is FINALIZED: only a DRAFT credit note can be voided (its "
            f"{note.credit_note_type.value.lower()} of {note.total_amount} {note.currency} was applied)"
        )
    voided = uow.credit_notes.update(
        note.model_copy(
            update={
                "credit_note_status": CreditNoteStatus.VOIDED,
                "voided_at": ctx.now,
                "refund_status": PaymentStatus.VOIDED if note.refund_status is not None else None,
                **ctx.touch(),
            }
        ),
        expected_version=note.version,
    )
    notifications.notify(uow, ctx, "credit_note.updated", voided)
    return voided
