"""The money rules of credit notes, as pure functions: which type a note on an invoice is, how much
it may credit (the invoice's capacity and each line's), what a finalized note changes on its
invoice, and the idempotency key a request's content derives.

Worked example (an invoice of one 100.00 line, paid in full)::

    credit_note_type(invoice)                          -> REFUND (payment_status SUCCEEDED)
    invoice_capacity(invoice, REFUND)                  -> 100.00 (paid 100.00, refunded 0)
    check_credit(invoice, REFUND, [("li_1", 70.00)], {})  -> 70.00 (the note's total)
    finalized_changes(invoice, REFUND, 70.00)          -> refunded_amount 70.00,
                                                          payment_status PARTIALLY_REFUNDED
    # a second note of 70.00, checked against the invoice as saved:
    check_credit(saved, REFUND, [("li_1", 70.00)], {"li_1": 70.00})
        -> InvalidOperation: 70.00 exceeds the refundable amount 30.00

Rules (decisions "Credit notes (issue 16)" in docs/decisions.md):

* Only a FINALIZED invoice is credited (not DRAFT, VOIDED or SKIPPED).
* Type: an invoice whose payment settled (``SUCCEEDED``, ``OVERPAID``, ``PARTIALLY_REFUNDED``)
  gets a ``REFUND``; one still collecting (``PENDING``, ``FAILED``, ``PROCESSING``,
  ``INITIATED``) an ``ADJUSTMENT`` (reducing what is due, even when part of it was paid); a
  ``REFUNDED`` invoice has nothing left to credit.
* Capacity: an ``ADJUSTMENT`` at most ``amount_remaining``; a ``REFUND`` at most what was paid
  (``amount_paid`` plus ``total_prepaid_credits_applied``) minus ``refunded_amount``.
* Per line: at most the line's charge after its discounts (``amount - line_item_discount -
  invoice_level_discount``) plus its share of the invoice's tax (``total_tax`` pro rata to that
  charge, rounded), minus what other FINALIZED notes credited on it. The invoice capacity, not the
  line bound, is what guarantees no over-refund: a rounding cent in the tax share cannot pass it.
* Amounts: above zero, in the currency's precision, one line per invoice line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from billingkit.domain.credit_notes import CreditNoteReason, CreditNoteType
from billingkit.domain.invoices import Invoice, InvoiceLineItem, InvoiceStatus, PaymentStatus
from billingkit.domain.money import ZERO, round_money
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "IDEMPOTENCY_PREFIX",
    "check_credit",
    "check_creditable",
    "content_fingerprint",
    "credit_note_number",
    "credit_note_number_key",
    "credit_note_type",
    "default_idempotency_key",
    "finalized_changes",
    "invoice_capacity",
    "line_capacity",
    "looks_assigned",
]

#: Payment statuses whose money was collected: a note gives money back (REFUND).
_SETTLED = frozenset({PaymentStatus.SUCCEEDED, PaymentStatus.OVERPAID, PaymentStatus.PARTIALLY_REFUNDED})
#: Payment statuses still collecting: a note lowers what is due (ADJUSTMENT).
_COLLECTING = frozenset(
    {PaymentStatus.PENDING, PaymentStatus.FAILED, PaymentStatus.PROCESSING, PaymentStatus.INITIATED}
)

#: Prefix of the idempotency key derived from a request's content.
IDEMPOTENCY_PREFIX = "cn-"
_NUMBER_PREFIX = "CN"


def _name(invoice: Invoice) -> str:
    return f"invoice {invoice.invoice_number or invoice.id}"


def check_creditable(invoice: Invoice) -> None:
    """A credit note needs a FINALIZED invoice. Raises ``InvalidOperation`` naming why not:
    a DRAFT can still be edited, a VOIDED one asks nothing, a SKIPPED one charged nothing."""
    status = invoice.invoice_status
    if status is InvoiceStatus.FINALIZED:
        return
    why = {
        InvoiceStatus.DRAFT: "a draft can still be edited; finalize it first",
        InvoiceStatus.VOIDED: "a voided invoice asks for nothing",
        InvoiceStatus.SKIPPED: "a skipped invoice charged nothing",
    }[status]
    raise InvalidOperation(
        f"{_name(invoice)} is {status.value}: only a FINALIZED invoice is credited ({why})"
    )


def credit_note_type(invoice: Invoice) -> CreditNoteType:
    """``REFUND`` when the invoice's money was collected, ``ADJUSTMENT`` while it is still being
    collected (see the module docstring). Raises ``InvalidOperation`` for a ``REFUNDED`` (or
    ``VOIDED``) payment status: nothing is left to credit.
    E.g. SUCCEEDED -> REFUND; PENDING with 40.00 of 100.00 paid -> ADJUSTMENT.
    """
    if invoice.payment_status in _SETTLED:
        return CreditNoteType.REFUND
    if invoice.payment_status in _COLLECTING:
        return CreditNoteType.ADJUSTMENT
    raise InvalidOperation(
        f"{_name(invoice)} has payment status {invoice.payment_status.value}: nothing is left to credit"
    )


def invoice_capacity(invoice: Invoice, note_type: CreditNoteType) -> Decimal:
    """What notes of ``note_type`` may still credit on ``invoice`` (money, never below 0).

    ``ADJUSTMENT``: ``amount_remaining`` (earlier finalized adjustments already lowered it), e.g.
    due 100.00, paid 40.00 -> 60.00. ``REFUND``: ``amount_paid + total_prepaid_credits_applied -
    refunded_amount``, e.g. paid 80.00 + 20.00 in credits, 30.00 refunded -> 70.00.
    """
    if note_type is CreditNoteType.ADJUSTMENT:
        left = invoice.amount_remaining
    else:
        left = invoice.amount_paid + invoice.total_prepaid_credits_applied - invoice.refunded_amount
    return max(left, ZERO)


def line_capacity(invoice: Invoice, line: InvoiceLineItem) -> Decimal:
    """The most all notes together may credit on ``line``: its charge after discounts plus its
    share of the invoice's tax, rounded to the currency.

    Example: subtotal 200.00 (lines 150.00 and 50.00), invoice-level discount 20.00 spread as
    15.00 and 5.00, tax 36.00 (20% of 180.00): the first line's charge is 135.00, its tax share
    36.00 x 135 / 180 = 27.00, so 162.00; the second 45.00 + 9.00 = 54.00.
    """
    charge = max(line.amount - line.line_item_discount - line.invoice_level_discount, ZERO)
    base = invoice.subtotal - invoice.total_discount
    share = ZERO
    if invoice.total_tax != ZERO and base > ZERO:
        share = round_money(invoice.total_tax * charge / base, invoice.currency)
    return charge + share


def check_credit(
    invoice: Invoice,
    note_type: CreditNoteType,
    lines: Sequence[tuple[str, Decimal]],
    credited: Mapping[str, Decimal],
) -> Decimal:
    """Check that a note of ``note_type`` crediting ``lines`` (invoice line id, amount) fits
    ``invoice`` now, given what other FINALIZED notes ``credited`` per invoice line; answer the
    note's total.

    Raises ``ValidationError`` (field ``line_items[i].<name>``) for no lines, an unknown or repeated
    line, or an amount not above zero or finer than the currency; ``InvalidOperation`` for an
    invoice that cannot be credited, or an amount above a line's or the invoice's capacity
    ("exceeds the refundable amount" / "exceeds the amount still due").

    Example: a line of 100.00 with 60.00 credited already takes at most 40.00 more.
    """
    check_creditable(invoice)
    if not lines:
        raise ValidationError("a credit note needs at least one line item", field="line_items")
    by_id = {line.id: line for line in invoice.line_items}
    seen: set[str] = set()
    total = ZERO
    for index, (line_id, amount) in enumerate(lines):
        where = f"line_items[{index}]"
        if line_id not in by_id:
            raise ValidationError(
                f"invoice line {line_id} is not a line of {_name(invoice)}",
                field=f"{where}.invoice_line_item_id",
            )
        if line_id in seen:
            raise ValidationError(
                f"invoice line {line_id} is credited twice in one note: give it one line",
                field=f"{where}.invoice_line_item_id",
            )
        seen.add(line_id)
        if amount <= ZERO:
            raise ValidationError(f"amount must be greater than 0, not {amount}", field=f"{where}.amount")
        if round_money(amount, invoice.currency) != amount:
            raise ValidationError(
                f"amount {amount} has more decimals than {invoice.currency} allows", field=f"{where}.amount"
            )
        total += amount
    capacity = invoice_capacity(invoice, note_type)
    if total > capacity:
        what = "refundable amount" if note_type is CreditNoteType.REFUND else "amount still due"
        raise InvalidOperation(
            f"credit note total {total} {invoice.currency} exceeds the {what} of {_name(invoice)}: "
            f"{capacity} {invoice.currency}"
        )
    for line_id, amount in lines:
        line = by_id[line_id]
        left = line_capacity(invoice, line) - credited.get(line_id, ZERO)
        if amount > left:
            raise InvalidOperation(
                f"{amount} {invoice.currency} on invoice line {line_id} ({line.display_name}) exceeds the "
                f"{max(left, ZERO)} {invoice.currency} still creditable on it"
            )
    return total


def finalized_changes(invoice: Invoice, note_type: CreditNoteType, total: Decimal) -> dict[str, Any]:
    """The invoice fields a finalized note of ``total`` changes (checked with
    :func:`check_credit` first).

    ``ADJUSTMENT``: ``adjustment_amount`` up, ``amount_due`` and ``amount_remaining`` down by
    ``total`` (never below 0); nothing left due -> ``payment_status`` SUCCEEDED. E.g. due 100.00,
    paid 40.00, adjusted 60.00 -> due 40.00, remaining 0, SUCCEEDED.
    ``REFUND``: ``refunded_amount`` up by ``total``; ``REFUNDED`` once everything paid (money and
    prepaid credits) is refunded, else ``PARTIALLY_REFUNDED``. E.g. paid 100.00, refunded 70.00 ->
    PARTIALLY_REFUNDED; then 30.00 more -> REFUNDED.
    """
    if note_type is CreditNoteType.ADJUSTMENT:
        remaining = max(invoice.amount_remaining - total, ZERO)
        changes: dict[str, Any] = {
            "adjustment_amount": invoice.adjustment_amount + total,
            "amount_due": max(invoice.amount_due - total, ZERO),
            "amount_remaining": remaining,
        }
        if remaining == ZERO:
            changes["payment_status"] = PaymentStatus.SUCCEEDED
        return changes
    refunded = invoice.refunded_amount + total
    paid = invoice.amount_paid + invoice.total_prepaid_credits_applied
    return {
        "refunded_amount": refunded,
        "payment_status": PaymentStatus.REFUNDED if refunded >= paid else PaymentStatus.PARTIALLY_REFUNDED,
    }


def _canonical(amount: Decimal) -> str:
    return format(amount.normalize(), "f")


def content_fingerprint(
    invoice_id: str, reason: CreditNoteReason, lines: Sequence[tuple[str, Decimal]]
) -> str:
    """The sha256 hex digest of what a credit note request asks for: the invoice, the reason and
    each (invoice line, amount), lines in request order, amounts in their shortest form (so
    ``"10"`` and ``"10.00"`` are the same request)."""
    body = {
        "invoice_id": invoice_id,
        "reason": reason.value,
        "lines": [[line_id, _canonical(amount)] for line_id, amount in lines],
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def default_idempotency_key(
    invoice_id: str, reason: CreditNoteReason, lines: Sequence[tuple[str, Decimal]]
) -> str:
    """The key of a request that names none: ``cn-`` and the :func:`content_fingerprint`, so the
    same request twice finds the first note (spec rule 2)."""
    return IDEMPOTENCY_PREFIX + content_fingerprint(invoice_id, reason, lines)


def credit_note_number_key(year: int, month: int) -> str:
    """The counter a note finalized in ``year``-``month`` draws from: ``202602``."""
    return f"{year:04d}{month:02d}"


def credit_note_number(key: str, sequence: int) -> str:
    """``CN-202602-00001`` for counter ``202602`` at ``1`` (the invoice numbers' format)."""
    return f"{_NUMBER_PREFIX}-{key}-{sequence:05d}"


def looks_assigned(number: str) -> bool:
    """Whether ``number`` has the form of an assigned number (``CN-<6 digits>-<digits>``): a
    caller's own number may not, so it can never take one the counter will hand out."""
    parts = number.split("-")
    return (
        len(parts) == 3
        and parts[0] == _NUMBER_PREFIX
        and len(parts[1]) == 6
        and parts[1].isdigit()
        and parts[2].isdigit()
    )
