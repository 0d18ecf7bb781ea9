"""What may happen to a stored invoice, as pure functions: finalize, void, edit, record a payment.

Statuses (``invoice_status``)::

    DRAFT ──finalize──> FINALIZED ──void──> VOIDED
      └──────────────void───────────────────^
    SKIPPED (zero subtotal) ──void──> VOIDED

* Finalize: DRAFT only. The caller numbers it from the gap-free sequence.
* Void: DRAFT, FINALIZED or SKIPPED whose ``payment_status`` is PENDING, FAILED, SUCCEEDED,
  PARTIALLY_REFUNDED or OVERPAID (reference notes §4.11). What the customer gave for it
  (``amount_paid`` plus ``total_prepaid_credits_applied``, less ``refunded_amount`` already given
  back) is refunded (:func:`void_refund`; the service credits it to the customer's PRE_PAID
  wallet): ``refunded_amount`` grows by it and ``payment_status`` becomes REFUNDED. Nothing paid:
  ``payment_status`` is kept. Example: due 100.00, paid 60.00 and 40.00 in prepaid credits,
  nothing refunded -> 100.00 refunded, REFUNDED.
* Edit (``due_date``, ``invoice_pdf_url``, ``metadata``): DRAFT, FINALIZED or SKIPPED;
  ``apply_discount`` (recompute the adjustments): DRAFT only.
* Payment by hand: FINALIZED only. Transitions of ``payment_status``: PENDING -> PENDING,
  SUCCEEDED, OVERPAID, FAILED; FAILED -> PENDING, FAILED, SUCCEEDED, OVERPAID; SUCCEEDED ->
  SUCCEEDED, OVERPAID; OVERPAID -> OVERPAID. ``amount`` is the total paid so far (never less than
  what was already recorded). Example: due 100.00; PENDING with 40.00 -> paid 40.00, remaining
  60.00; SUCCEEDED (no amount) -> paid 100.00, remaining 0; OVERPAID with 120.00 -> paid 120.00,
  remaining 0, overpaid 20.00.

Every refusal is :class:`~billingkit.errors.InvalidOperation` naming the reason.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.invoices import Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.money import ZERO, quantize_exponent, round_money
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "PAYMENT_TRANSITIONS",
    "check_editable",
    "check_finalizable",
    "check_voidable",
    "payment_changes",
    "void_changes",
    "void_refund",
]

#: payment_status -> the statuses a hand-recorded payment may move it to (reference notes §4.11).
PAYMENT_TRANSITIONS: dict[PaymentStatus, frozenset[PaymentStatus]] = {
    PaymentStatus.PENDING: frozenset(
        {PaymentStatus.PENDING, PaymentStatus.SUCCEEDED, PaymentStatus.OVERPAID, PaymentStatus.FAILED}
    ),
    PaymentStatus.FAILED: frozenset(
        {PaymentStatus.PENDING, PaymentStatus.FAILED, PaymentStatus.SUCCEEDED, PaymentStatus.OVERPAID}
    ),
    PaymentStatus.SUCCEEDED: frozenset({PaymentStatus.SUCCEEDED, PaymentStatus.OVERPAID}),
    PaymentStatus.OVERPAID: frozenset({PaymentStatus.OVERPAID}),
}

_VOIDABLE_PAYMENTS = frozenset(
    {
        PaymentStatus.PENDING,
        PaymentStatus.FAILED,
        PaymentStatus.SUCCEEDED,
        PaymentStatus.PARTIALLY_REFUNDED,
        PaymentStatus.OVERPAID,
    }
)


def _name(invoice: Invoice) -> str:
    return f"invoice {invoice.invoice_number or invoice.id}"


def _refuse_voided(invoice: Invoice, what: str) -> None:
    if invoice.invoice_status is InvoiceStatus.VOIDED:
        raise InvalidOperation(f"{_name(invoice)} is voided: a voided invoice cannot be {what}")


def check_finalizable(invoice: Invoice) -> None:
    """Only a DRAFT is finalized. Raises ``InvalidOperation`` otherwise."""
    _refuse_voided(invoice, "finalized")
    if invoice.invoice_status is InvoiceStatus.FINALIZED:
        raise InvalidOperation(f"{_name(invoice)} is already finalized")
    if invoice.invoice_status is InvoiceStatus.SKIPPED:
        raise InvalidOperation(f"{_name(invoice)} is skipped (zero subtotal): there is nothing to finalize")


def check_voidable(invoice: Invoice) -> None:
    """DRAFT, FINALIZED or SKIPPED, with a voidable payment status (money paid is refunded, see
    :func:`void_refund`). Raises ``InvalidOperation`` naming the reason."""
    _refuse_voided(invoice, "voided again")
    if invoice.payment_status not in _VOIDABLE_PAYMENTS:
        raise InvalidOperation(
            f"{_name(invoice)} has payment status {invoice.payment_status.value}, which cannot be voided"
        )


def void_refund(invoice: Invoice) -> Decimal:
    """What voiding ``invoice`` gives back to its customer: ``amount_paid`` plus
    ``total_prepaid_credits_applied`` less ``refunded_amount`` (never below zero). Example: paid
    100.00, 30.00 in credits, 50.00 refunded by a credit note before -> 80.00."""
    owed = invoice.amount_paid + invoice.total_prepaid_credits_applied - invoice.refunded_amount
    return max(owed, ZERO)


def void_changes(invoice: Invoice, now: datetime) -> dict[str, Any]:
    """The fields a void changes (after :func:`check_voidable`): status VOIDED, ``voided_at``,
    nothing due any more for the worker and, when money was paid, the refund of
    :func:`void_refund`: ``refunded_amount`` grown by it and ``payment_status`` REFUNDED."""
    check_voidable(invoice)
    changes: dict[str, Any] = {"invoice_status": InvoiceStatus.VOIDED, "voided_at": now, "finalize_at": None}
    refund = void_refund(invoice)
    if refund > ZERO:
        changes["refunded_amount"] = invoice.refunded_amount + refund
        changes["payment_status"] = PaymentStatus.REFUNDED
    return changes


def check_editable(invoice: Invoice, *, apply_discount: bool) -> None:
    """Editing is refused on a voided invoice; recomputing the discounts needs a DRAFT."""
    _refuse_voided(invoice, "edited")
    if apply_discount and invoice.invoice_status is not InvoiceStatus.DRAFT:
        raise InvalidOperation(
            f"{_name(invoice)} is {invoice.invoice_status.value}: only a DRAFT invoice's discounts "
            "are recomputed (apply_discount)"
        )


def payment_changes(
    invoice: Invoice, status: PaymentStatus, amount: Decimal | None, now: datetime
) -> dict[str, Any]:
    """The fields recording ``status`` (and ``amount`` paid in total so far) on ``invoice``.

    Raises ``InvalidOperation`` for an invoice that is not FINALIZED or a transition the table
    does not allow, and ``ValidationError`` (field ``amount``) for figures that contradict the
    status (a partial amount marked SUCCEEDED, an amount below what was already paid...).
    """
    if invoice.invoice_status is not InvoiceStatus.FINALIZED:
        if invoice.invoice_status is InvoiceStatus.VOIDED:
            _refuse_voided(invoice, "paid")
        raise InvalidOperation(
            f"{_name(invoice)} is {invoice.invoice_status.value}: only a FINALIZED invoice records payments"
        )
    allowed = PAYMENT_TRANSITIONS.get(invoice.payment_status, frozenset())
    if status not in allowed:
        raise InvalidOperation(
            f"{_name(invoice)}: payment status cannot move from {invoice.payment_status.value} "
            f"to {status.value}"
        )
    due = invoice.amount_due
    if amount is not None:
        if round_money(amount, invoice.currency) != amount:
            raise ValidationError(
                f"amount {amount} has more decimals than {invoice.currency}", field="amount"
            )
        if amount < invoice.amount_paid:
            raise ValidationError(
                f"amount is the total paid so far and cannot go below the {invoice.amount_paid} "
                "already recorded (a refund is not a payment)",
                field="amount",
            )
    paid = amount
    if status in (PaymentStatus.PENDING, PaymentStatus.FAILED):
        paid = invoice.amount_paid if paid is None else paid
        if due > ZERO and paid >= due:
            raise ValidationError(
                f"{paid} pays the whole {due}: mark the invoice SUCCEEDED or OVERPAID", field="amount"
            )
    elif status is PaymentStatus.SUCCEEDED:
        paid = due if paid is None else paid
        if paid < due:
            raise ValidationError(
                f"{paid} does not pay the {due} due: a partial payment stays PENDING", field="amount"
            )
        if paid > due:
            status = PaymentStatus.OVERPAID  # paying more than due is an overpayment (§4.11)
    elif status is PaymentStatus.OVERPAID and (paid is None or paid <= due):
        raise ValidationError(f"OVERPAID needs an amount above the {due} due", field="amount")
    assert paid is not None
    settled = status in (PaymentStatus.SUCCEEDED, PaymentStatus.OVERPAID)
    cents = quantize_exponent(invoice.currency)  # figures at the currency's precision: "0.00"
    return {
        "payment_status": status,
        "amount_paid": paid.quantize(cents),
        "amount_remaining": (ZERO if settled else due - paid).quantize(cents),
        "overpaid_amount": (paid - due if paid > due else ZERO).quantize(cents),
        "paid_at": (invoice.paid_at or now) if settled else None,
    }
