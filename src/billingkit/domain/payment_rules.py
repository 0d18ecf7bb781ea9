"""The rules of paying an invoice, as pure functions: the payment's idempotency key, what a payment
does to the invoice it pays, and how much of an invoice a wallet may pay.

Idempotency (spec rule 4): a payment's key is deterministic and scoped to the tenant and
environment: ``payment-<first 16 hex of sha256("payment:k=v;...")>`` over the tenant, the
environment, the destination, the amount (``100`` and ``100.00`` are one amount), the currency,
the payment method (type, id, gateway) and the intent (``process_payment``,
``save_card_and_make_default``, and for collection attempts their sequence number). Retrying a
request therefore finds the payment it made; two payments of the same amount by the same method
on one invoice need keys of their own (the caller names ``idempotency_key``).

Effects on the invoice (reference notes §4.11), applied only by a *succeeded* payment::

    paid      = amount_paid + amount
    remaining = max(0, amount_due - paid)
    paid < due  -> PENDING (a partial payment: the reference has no PARTIALLY_PAID status)
    paid = due  -> SUCCEEDED, paid_at
    paid > due  -> OVERPAID, paid_at, overpaid_amount = paid - due

Example: due 100.00; 60.00 -> PENDING, paid 60.00, remaining 40.00; 40.00 more -> SUCCEEDED,
remaining 0.00; 25.00 more -> OVERPAID, paid 125.00, overpaid 25.00. A *failed* payment moves no
money: it marks the invoice FAILED when nothing was paid on it yet (PENDING or FAILED before) and
leaves it as it is otherwise (a partly paid invoice stays PENDING).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.invoice_lifecycle import PAYMENT_TRANSITIONS, payment_changes
from billingkit.domain.invoices import Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.money import ZERO, round_money
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "KEY_PREFIX",
    "check_payable",
    "check_payment_amount",
    "failed_payment_changes",
    "payment_fingerprint",
    "payment_key",
    "succeeded_payment_changes",
    "wallet_payable",
]

#: Derived payment keys start with this (the reference's ``<scope>-<hash>`` form).
KEY_PREFIX = "payment-"


def _canonical(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return str(getattr(value, "value", value))


def payment_fingerprint(fields: Mapping[str, Any]) -> str:
    """The sha256 hex digest of ``fields`` in a canonical text (``k=v`` sorted by key; amounts
    normalised, so ``Decimal("100.00")`` and ``Decimal("100")`` agree; ``None`` is empty)."""
    text = "payment:" + ";".join(f"{key}={_canonical(fields[key])}" for key in sorted(fields))
    return hashlib.sha256(text.encode()).hexdigest()


def payment_key(tenant_id: str, environment_id: str, fields: Mapping[str, Any]) -> str:
    """The derived idempotency key of a payment request ``fields`` in a tenant's environment:
    ``payment-`` and the first 16 hex digits of the fingerprint of the fields with the scope.
    Example: ``payment_key("t1", "e1", {"amount": Decimal("60.00"), ...})`` equals the key of the
    same fields with ``Decimal("60")``, and differs in another environment."""
    scoped = {**fields, "tenant_id": tenant_id, "environment_id": environment_id}
    return KEY_PREFIX + payment_fingerprint(scoped)[:16]


def _name(invoice: Invoice) -> str:
    return f"invoice {invoice.invoice_number or invoice.id}"


def check_payable(invoice: Invoice) -> None:
    """A payment needs a FINALIZED invoice whose payment status can still take one (PENDING,
    FAILED, SUCCEEDED, OVERPAID; not REFUNDED or VOIDED). Raises ``InvalidOperation``."""
    if invoice.invoice_status is not InvoiceStatus.FINALIZED:
        raise InvalidOperation(
            f"{_name(invoice)} is {invoice.invoice_status.value}: only a FINALIZED invoice takes payments"
        )
    if invoice.payment_status not in PAYMENT_TRANSITIONS:
        raise InvalidOperation(
            f"{_name(invoice)} has payment status {invoice.payment_status.value}: it takes no more payments"
        )


def check_payment_amount(amount: Decimal, currency: str) -> None:
    """``amount`` is above zero and has no more decimals than ``currency`` (``12.345`` usd is
    refused). Raises ``ValidationError`` naming ``amount``."""
    if not amount.is_finite() or amount <= ZERO:
        raise ValidationError(f"amount must be greater than 0, not {amount}", field="amount")
    if round_money(amount, currency) != amount:
        raise ValidationError(f"amount {amount} has more decimals than {currency} allows", field="amount")


def succeeded_payment_changes(invoice: Invoice, amount: Decimal, now: datetime) -> dict[str, Any]:
    """The invoice fields after a payment of ``amount`` succeeded on it (see the module
    docstring): ``amount_paid``, ``amount_remaining``, ``overpaid_amount``, ``payment_status``,
    ``paid_at`` (kept from the first time it was paid in full). Raises ``InvalidOperation`` for an
    invoice that takes no payment (:func:`check_payable`)."""
    check_payable(invoice)
    paid = invoice.amount_paid + amount
    due = invoice.amount_due
    if paid < due:
        status = PaymentStatus.PENDING
    elif paid == due:
        status = PaymentStatus.SUCCEEDED
    else:
        status = PaymentStatus.OVERPAID
    return payment_changes(invoice, status, paid, now)


def failed_payment_changes(invoice: Invoice) -> dict[str, Any]:
    """The invoice fields after a payment failed on it: ``payment_status`` FAILED when it was
    PENDING with nothing paid on it; no change otherwise (an empty dict: already FAILED, or partly
    paid and so still PENDING, or paid)."""
    if (
        invoice.invoice_status is InvoiceStatus.FINALIZED
        and invoice.amount_paid == ZERO
        and invoice.payment_status is PaymentStatus.PENDING
    ):
        return {"payment_status": PaymentStatus.FAILED}
    return {}


def wallet_payable(invoice: Invoice, price_types: frozenset[str], paid_by_wallet: Decimal = ZERO) -> Decimal:
    """How much of ``invoice``'s ``amount_remaining`` a wallet whose credits pay ``price_types``
    (``{"USAGE", "FIXED"}`` for ``ALL``) may pay, as a payment method (reference notes §4.11).

    A wallet for every price type pays what remains. A wallet limited to some pays at most its
    lines' net amounts (amount less line and invoice-level discounts and prepaid credits; taxes
    are the invoice's, not a line's, and stay with the other methods) less ``paid_by_wallet``
    (what it paid on this invoice before), and never more than what remains. Example: remaining
    120.00 of a USAGE line of 70.00 (10.00 discount) and a FIXED line of 50.00, plus 10.00 tax; a
    USAGE-only wallet pays 60.00 (and nothing more once it paid them), an ALL wallet 120.00.
    """
    remaining = max(invoice.amount_remaining, ZERO)
    if {"USAGE", "FIXED"} <= price_types:
        return remaining
    covered = sum(
        (
            line.amount - line.line_item_discount - line.invoice_level_discount - line.prepaid_credits_applied
            for line in invoice.line_items
            if line.price_type is not None and line.price_type.value in price_types
        ),
        ZERO,
    )
    return min(remaining, max(covered - paid_by_wallet, ZERO))
