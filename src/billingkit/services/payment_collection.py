"""Collecting a recorded payment and applying what came of it, once.

A payment is collected by its method: ``OFFLINE`` money was received by hand (it succeeds at once),
``CREDITS`` are debited from the wallet ``payment_method_id`` (reason ``INVOICE_PAYMENT``, one
debit row per lot, reference PAYMENT/<payment id>; not enough credits is ``InvalidOperation`` and
the unit of work writes nothing), every other method goes through the payment provider port
(``ctx.providers.payment_provider``; a method id is charged at once, none answers a pending payment
with a ``payment_url``). Each try is one numbered :class:`~billingkit.domain.payments.PaymentAttempt`.

What came of it (:func:`settle_outcome`) is applied in the same unit of work: the payment's status
and times, the invoice's money (:mod:`billingkit.domain.payment_rules`) saved at the version it was
read at, the credits an invoice sold landed (``invoice_settlement.invoice_paid``), and the
notifications ``payment.success``/``payment.failed``/``payment.pending`` and
``invoice.update.payment``. The payment's own ``version`` makes the outcome apply once: two
concurrent collections of one payment cannot both save it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from billingkit.domain.gateways import PaymentRequest, ProviderPayment, ProviderPaymentStatus
from billingkit.domain.invoices import Invoice, PaymentStatus
from billingkit.domain.payment_rules import failed_payment_changes, succeeded_payment_changes
from billingkit.domain.payments import Payment, PaymentAttempt, PaymentMethodType
from billingkit.domain.resources import Status
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    Wallet,
    WalletStatus,
    consumption_order,
    credits_value,
    draws_for_amount,
)
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import invoice_settlement, notifications, wallet_ledger
from billingkit.services.context import Context

__all__ = [
    "OFFLINE_METHODS",
    "Outcome",
    "collect",
    "payment_wallet",
    "provider_outcome",
    "settle_outcome",
    "wallet_worth",
]

#: Methods recorded without asking anyone: money received by hand, or a wallet's credits.
OFFLINE_METHODS = frozenset({PaymentMethodType.OFFLINE, PaymentMethodType.CREDITS})


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one try at collecting a payment came to: SUCCEEDED, FAILED (with ``error``) or
    PENDING (the customer still has to pay at ``payment_url``), and the provider's ids."""

    status: PaymentStatus
    error: str | None = None
    payment_url: str | None = None
    gateway: str | None = None
    gateway_payment_id: str | None = None


def payment_wallet(uow: UnitOfWork, wallet_id: str | None, invoice: Invoice) -> Wallet:
    """The wallet a ``CREDITS`` payment of ``invoice`` draws on: live, ``active``, the invoice
    customer's, in the invoice currency (PRE_PAID or POST_PAID alike). Raises ``ValidationError``
    naming ``payment_method_id`` otherwise."""
    if not wallet_id:
        raise ValidationError(
            "a CREDITS payment names its wallet in payment_method_id", field="payment_method_id"
        )
    wallet = uow.wallets.find(wallet_id)
    if wallet is None or wallet.status is not Status.PUBLISHED or wallet.customer_id != invoice.customer_id:
        raise ValidationError(f"the invoice's customer has no wallet {wallet_id}", field="payment_method_id")
    if wallet.currency != invoice.currency:
        raise ValidationError(
            f"wallet {wallet.id} holds {wallet.currency}, the invoice is in {invoice.currency}",
            field="payment_method_id",
        )
    if wallet.wallet_status is not WalletStatus.ACTIVE:
        raise ValidationError(
            f"wallet {wallet.id} is {wallet.wallet_status.value}: only an active wallet pays",
            field="payment_method_id",
        )
    return wallet


def wallet_worth(uow: UnitOfWork, ctx: Context, wallet: Wallet) -> Decimal:
    """What ``wallet``'s unexpired credits are worth now, in its currency (rounded down per lot,
    as :func:`~billingkit.domain.wallets.draws_for_amount` takes them)."""
    ordered = consumption_order(wallet_ledger.lots(uow, [wallet.id])[wallet.id], at=ctx.now)
    return sum(
        (credits_value(lot.credits_left, wallet.conversion_rate, wallet.currency) for lot in ordered),
        Decimal(0),
    )


def _debit_wallet(uow: UnitOfWork, ctx: Context, payment: Payment, invoice: Invoice) -> None:
    wallet = payment_wallet(uow, payment.payment_method_id, invoice)
    ordered = consumption_order(wallet_ledger.lots(uow, [wallet.id])[wallet.id], at=ctx.now)
    try:
        draws = draws_for_amount(ordered, payment.amount, wallet.conversion_rate, wallet.currency)
    except InvalidOperation as exc:
        raise InvalidOperation(
            f"wallet {wallet.id} cannot pay {payment.amount} {payment.currency}: {exc.message}",
            details={"field": "amount"},
        ) from None
    wallet_ledger.debit(
        uow,
        ctx,
        wallet,
        draws,
        reason=TransactionReason.INVOICE_PAYMENT,
        cause="invoice_payment",
        parts=(payment.id,),
        reference_type=TransactionReferenceType.PAYMENT,
        reference_id=payment.id,
        description=f"payment of invoice {invoice.invoice_number or invoice.id}",
    )


def _provider_key(ctx: Context, payment: Payment, attempt: int) -> str:
    """The provider's idempotency key for try ``attempt`` of ``payment``: derived from the
    payment's own key (itself derived from the request), so a retried request whose first unit of
    work rolled back after the charge asks the provider with the same key and is not charged
    twice; the scope is in it because one provider serves every tenant."""
    text = f"{ctx.tenant_id}|{ctx.env}|{payment.idempotency_key}|{attempt}"
    return "bk_" + hashlib.sha256(text.encode()).hexdigest()[:40]


def provider_outcome(answer: ProviderPayment) -> Outcome:
    """The :class:`Outcome` of a provider's answer."""
    status = {
        ProviderPaymentStatus.SUCCEEDED: PaymentStatus.SUCCEEDED,
        ProviderPaymentStatus.FAILED: PaymentStatus.FAILED,
        ProviderPaymentStatus.PENDING: PaymentStatus.PENDING,
    }[answer.status]
    return Outcome(
        status=status,
        error=answer.failure_reason if status is PaymentStatus.FAILED else None,
        payment_url=answer.checkout_url,
        gateway=answer.provider,
        gateway_payment_id=answer.provider_payment_id,
    )


def collect(uow: UnitOfWork, ctx: Context, payment: Payment, invoice: Invoice) -> Payment:
    """Try to collect ``payment`` (INITIATED or FAILED) of ``invoice`` by its method, as a new
    numbered attempt, and apply the outcome (:func:`settle_outcome`). Raises
    ``InvalidOperation`` when a wallet holds too little (nothing is then written by the unit of
    work), ``ValidationError`` for a wallet that cannot pay this invoice."""
    number = len(payment.attempts) + 1
    if payment.payment_method_type is PaymentMethodType.OFFLINE:
        outcome = Outcome(PaymentStatus.SUCCEEDED)
    elif payment.payment_method_type is PaymentMethodType.CREDITS:
        _debit_wallet(uow, ctx, payment, invoice)
        outcome = Outcome(PaymentStatus.SUCCEEDED)
    else:
        provider = ctx.providers.payment_provider
        answer = provider.create_payment(
            PaymentRequest(
                idempotency_key=_provider_key(ctx, payment, number),
                amount=payment.amount,
                currency=payment.currency,
                customer_id=invoice.customer_id,
                payment_method_id=payment.payment_method_id,
                description=f"invoice {invoice.invoice_number or invoice.id}",
                metadata={"payment_id": payment.id, "invoice_id": invoice.id},
            )
        )
        outcome = provider_outcome(answer)
    attempt = PaymentAttempt(
        id=ctx.ids.new("attempt"),
        attempt_number=number,
        payment_status=outcome.status,
        error_message=outcome.error,
        gateway_attempt_id=outcome.gateway_payment_id,
        created_at=ctx.now,
    )
    return settle_outcome(uow, ctx, payment, invoice, outcome, attempts=(*payment.attempts, attempt))


def settle_outcome(
    uow: UnitOfWork,
    ctx: Context,
    payment: Payment,
    invoice: Invoice,
    outcome: Outcome,
    *,
    attempts: tuple[PaymentAttempt, ...],
    succeeded_at: Any = None,
    failed_at: Any = None,
    extra: dict[str, Any] | None = None,
) -> Payment:
    """Save ``payment`` as ``outcome`` left it (with ``attempts``), move ``invoice``'s money for a
    success (or mark it FAILED for a failure with nothing paid), and record the notifications.
    ``succeeded_at``/``failed_at`` default to now. ``extra``: further payment fields to save."""
    changes: dict[str, Any] = {
        "payment_status": outcome.status,
        "attempts": attempts,
        **(extra or {}),
        **ctx.touch(),
    }
    if outcome.gateway is not None:
        changes["payment_gateway"] = outcome.gateway
        changes["gateway_payment_id"] = outcome.gateway_payment_id
    if outcome.payment_url is not None:
        changes["payment_url"] = outcome.payment_url
    if outcome.status is PaymentStatus.SUCCEEDED:
        changes["succeeded_at"] = succeeded_at or ctx.now
        changes["error_message"] = None
    elif outcome.status is PaymentStatus.FAILED:
        changes["failed_at"] = failed_at or ctx.now
        changes["error_message"] = outcome.error or changes.get("error_message") or payment.error_message
    saved = uow.payments.update(payment.model_copy(update=changes), expected_version=payment.version)
    invoice_changes: dict[str, Any] = {}
    if outcome.status is PaymentStatus.SUCCEEDED:
        invoice_changes = succeeded_payment_changes(invoice, saved.amount, ctx.now)
    elif outcome.status is PaymentStatus.FAILED:
        invoice_changes = failed_payment_changes(invoice)
    event = {
        PaymentStatus.SUCCEEDED: "payment.success",
        PaymentStatus.FAILED: "payment.failed",
        PaymentStatus.PENDING: "payment.pending",
    }.get(outcome.status)
    if event is not None:
        notifications.notify(uow, ctx, event, saved)
    if invoice_changes:
        paid = uow.invoices.update(
            invoice.model_copy(update={**invoice_changes, **ctx.touch()}), expected_version=invoice.version
        )
        invoice_settlement.invoice_paid(uow, ctx, paid)
        notifications.notify(uow, ctx, "invoice.update.payment", paid)
    return saved
