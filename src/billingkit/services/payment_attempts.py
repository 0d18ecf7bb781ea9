"""Collecting what remains on an invoice with the customer's own payment methods (reference
``POST /invoices/{id}/payment/attempt``, notes §4.11).

In order, while anything remains: the card of the invoice's subscription
(``gateway_payment_method_id``) through the payment provider; then the customer's active POST_PAID
wallets in the invoice currency, oldest first, each paying what its credits are worth within what
its ``allowed_price_types`` cover (:func:`~billingkit.domain.payment_rules.wallet_payable`). Each
is one payment (``payment.created`` and its outcome), with a key derived from the invoice, the
method and the number of payments the invoice had, so a repeated attempt after a success finds
nothing left, and two concurrent attempts record one payment per method.

Not done: customers carry no saved payment method of their own here (only a subscription's), and
a pending provider answer (the customer must act) stops the attempt.
"""

from __future__ import annotations

from decimal import Decimal

from billingkit.domain.access import Action
from billingkit.domain.invoices import Invoice, PaymentStatus
from billingkit.domain.money import ZERO
from billingkit.domain.payment_rules import check_payable, wallet_payable
from billingkit.domain.payments import PaymentDestinationType, PaymentMethodType
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op
from billingkit.domain.wallets import WalletStatus, WalletType
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.payment_collection import wallet_worth
from billingkit.services.payments import PaymentCreate, record_payment
from billingkit.services.records import get_live, list_where_in
from billingkit.services.subscription_payment_methods import subscription_method

__all__ = ["attempt_payment", "collect_remaining"]


def _payments_made(uow: UnitOfWork, invoice_id: str) -> int:
    query = ListQuery(filters=(Filter("destination_id", Op.EQ, invoice_id),), limit=1, status=None)
    return uow.payments.list(query).total


def _paid_by(uow: UnitOfWork, invoice_id: str, wallet_id: str) -> Decimal:
    """What wallet ``wallet_id`` paid on invoice ``invoice_id`` so far (succeeded payments)."""
    query = ListQuery(
        filters=(
            Filter("destination_id", Op.EQ, invoice_id),
            Filter("payment_status", Op.IN, [PaymentStatus.SUCCEEDED.value]),
            Filter("payment_method_type", Op.EQ, PaymentMethodType.CREDITS.value),
        ),
        limit=MAX_LIMIT,
    )
    return sum((p.amount for p in uow.payments.list(query).items if p.payment_method_id == wallet_id), ZERO)


def _pay(
    uow: UnitOfWork,
    ctx: Context,
    invoice: Invoice,
    method: PaymentMethodType,
    method_id: str,
    amount: Decimal,
) -> PaymentStatus:
    request = PaymentCreate(
        amount=amount,
        currency=invoice.currency,
        destination_id=invoice.id,
        destination_type=PaymentDestinationType.INVOICE,
        payment_method_type=method,
        payment_method_id=method_id,
        metadata={"source": "payment_attempt"},
    )
    intent = {"intent": "payment_attempt", "sequence": _payments_made(uow, invoice.id)}
    return record_payment(uow, ctx, request, intent=intent).payment_status


def attempt_payment(uow: UnitOfWork, ctx: Context, *, invoice_id: str) -> Invoice:
    """Collect the FINALIZED invoice's ``amount_remaining`` with the customer's methods (see the
    module docstring); the invoice as it stands afterwards (paid, partly paid, or unchanged when
    no method paid).

    Raises ``NotFound``; ``InvalidOperation`` for an invoice that is not FINALIZED, takes no more
    payments, has nothing left to pay, or whose customer has no method to pay it with (nothing
    is written then).
    """
    ctx.require("payment", Action.WRITE)
    invoice = get_live(uow.invoices, "invoice", invoice_id)
    check_payable(invoice)
    if invoice.amount_remaining <= ZERO:
        raise InvalidOperation(f"invoice {invoice.invoice_number or invoice.id} has nothing left to pay")
    invoice, tried = collect_remaining(uow, ctx, invoice, card=subscription_method(uow, invoice.id))
    if not tried:
        raise InvalidOperation(
            f"customer {invoice.customer_id} has no payment method to collect invoice "
            f"{invoice.invoice_number or invoice.id} with: no card on its subscription and no "
            f"POST_PAID wallet in {invoice.currency} with credits for it"
        )
    return invoice


def collect_remaining(
    uow: UnitOfWork, ctx: Context, invoice: Invoice, *, card: str | None
) -> tuple[Invoice, bool]:
    """Collect what remains on the FINALIZED ``invoice``: with ``card`` through the payment
    provider, then with the customer's POST_PAID wallets (see the module docstring). Returns the
    invoice as it stands afterwards and whether any method was tried (none: unchanged). Also
    what a new subscription's opening invoice is collected with
    (:mod:`billingkit.services.opening_payment`)."""
    tried = False
    if card:
        tried = True
        status = _pay(uow, ctx, invoice, PaymentMethodType.CARD, card, invoice.amount_remaining)
        invoice = uow.invoices.get(invoice.id)
        if status is PaymentStatus.PENDING or invoice.amount_remaining <= ZERO:
            return invoice, tried
    wallets = list_where_in(
        uow.wallets,
        "customer_id",
        [invoice.customer_id],
        Filter("currency", Op.EQ, invoice.currency),
        Filter("wallet_type", Op.EQ, WalletType.POST_PAID),
    )
    for wallet in sorted(wallets, key=lambda w: (w.created_at, w.id)):
        if wallet.wallet_status is not WalletStatus.ACTIVE:
            continue
        payable = wallet_payable(invoice, wallet.config.price_types(), _paid_by(uow, invoice.id, wallet.id))
        amount = min(payable, wallet_worth(uow, ctx, wallet))
        if amount <= ZERO:
            continue
        tried = True
        _pay(uow, ctx, invoice, PaymentMethodType.CREDITS, wallet.id, amount)
        invoice = uow.invoices.get(invoice.id)
        if invoice.amount_remaining <= ZERO:
            break
    return invoice, tried
