"""The ``create_subscription`` checkout action: what is made before the payment, what the payment
applies, and what a session that ends unpaid leaves behind (reference notes §8).

Before: a ``draft`` subscription, its first-period invoice computed as activating it now would
issue it (ADVANCE charges, coupons and taxes; prepaid credits are not drawn, so the customer pays
the whole amount at the provider), stored as a ``DRAFT``, and a payment of it ``INITIATED``. An
invoice of nothing due is refused ("checkout requires a non-zero invoice"): there would be nothing
to pay. Nothing is active.

Apply (the payment confirmed): the draft is activated at its start, its stored invoice is
finalized as the opening invoice (so the customer pays exactly what they were shown), the payment
succeeds with one attempt naming the provider's payment, and the invoice is paid.

Cleanup (failed or expired): the payment ``FAILED``, then the draft subscription, the invoice and
the payment archived.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import BillingReason, Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.payments import Payment, PaymentAttempt, PaymentMethodType
from billingkit.domain.periods import BillingPeriod, Period
from billingkit.domain.resources import Status
from billingkit.domain.subscription_lifecycle import activate_draft
from billingkit.domain.subscriptions import CollectionMethod, Subscription, SubscriptionStatus
from billingkit.domain.validation import CurrencyCode, Identifier, InputModel, Key, Metadata, UtcDatetime
from billingkit.errors import InternalError, InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.invoicing import (
    Charge,
    build_invoice,
    compute_invoices,
    invoice_event,
    load_snapshot,
    number_invoices,
)
from billingkit.services.payment_collection import Outcome, settle_outcome
from billingkit.services.records import archive
from billingkit.services.subscriptions import (
    SubscriptionActivate,
    SubscriptionCreate,
    activate_subscription,
    create_subscription,
)

__all__ = [
    "CreateSubscriptionParams",
    "Prepared",
    "apply_created_subscription",
    "checkout_invoice",
    "checkout_payment",
    "cleanup_locked",
    "cleanup_payment",
    "cleanup_subscription",
    "lock_invoice",
    "pay_checkout_invoice",
    "prepare_subscription",
    "subscription_configuration",
]

NON_ZERO = "checkout requires a non-zero invoice"


class CreateSubscriptionParams(InputModel):
    """The reference's ``CreateSubscriptionParams``: the subscription a ``create_subscription``
    session makes once paid (``subscription_id`` is the draft's, set by billingkit)."""

    ignored = frozenset({"subscription_id"})

    plan_id: Identifier
    currency: CurrencyCode
    billing_period: BillingPeriod
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    lookup_key: Key | None = None
    metadata: Metadata = {}
    subscription_id: str | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a session is paid for: the draft subscription (when it makes one), the invoice and
    the payment of it."""

    invoice: Invoice
    payment: Payment
    subscription: Subscription | None = None


def checkout_invoice(uow: UnitOfWork, ctx: Context, sub: Subscription) -> Invoice:
    """The first-period invoice of draft ``sub`` as activating it at its start would issue it,
    stored as a ``DRAFT``. ``InvalidOperation`` when nothing would be due (a trial, or only
    usage and arrears charges)."""
    activated = activate_draft(sub, start=None, renewal_notice=ctx.settings.renewal_notice)
    if activated.subscription_status is not SubscriptionStatus.ACTIVE:
        raise InvalidOperation(f"{NON_ZERO}: the subscription starts with a trial, so nothing is due yet")
    period = Period(activated.current_period_start, activated.current_period_end)
    charge = Charge(activated, BillingReason.SUBSCRIPTION_CREATE, "period_start", period)
    snapshot = load_snapshot(uow, [activated], at=ctx.now, credits=False)
    (computed,) = compute_invoices(uow, [charge], snapshot, as_of=ctx.now)
    if not computed.draft.lines:
        raise InvalidOperation(f"{NON_ZERO}: the plan charges nothing in advance")
    invoice = build_invoice(ctx, computed, snapshot, billing_sequence=sub.billing_sequence + 1)
    return lock_invoice(
        uow, ctx, invoice, f"the first invoice comes to {invoice.amount_due} {invoice.currency}"
    )


def lock_invoice(uow: UnitOfWork, ctx: Context, invoice: Invoice | None, nothing_due: str) -> Invoice:
    """Store ``invoice``, the ``DRAFT`` a checkout session is paid with, and record its creation.
    ``InvalidOperation`` ("checkout requires a non-zero invoice: ``nothing_due``") when there is
    none or nothing is due on it (nothing stored)."""
    if invoice is None or invoice.amount_due <= 0:
        raise InvalidOperation(f"{NON_ZERO}: {nothing_due}")
    uow.invoices.add(invoice)
    notifications.record_many(uow, ctx, [invoice_event(ctx, invoice)])
    return invoice


def checkout_payment(
    uow: UnitOfWork, ctx: Context, invoice: Invoice, session_id: str, provider: str
) -> Payment:
    """The ``INITIATED`` payment of ``invoice`` that session ``session_id`` collects through
    ``provider`` (its key names the session: one payment per session)."""
    payment = Payment(
        id=ctx.ids.new("pay"),
        **ctx.stamp(),
        idempotency_key=f"checkout:{session_id}",
        destination_id=invoice.id,
        invoice_number=invoice.invoice_number,
        customer_id=invoice.customer_id,
        payment_method_type=PaymentMethodType.PAYMENT_LINK,
        payment_gateway=provider,
        amount=invoice.amount_due,
        currency=invoice.currency,
        payment_status=PaymentStatus.INITIATED,
        track_attempts=True,
        metadata={"checkout_session_id": session_id},
    )
    uow.payments.add(payment)
    notifications.notify(uow, ctx, "payment.created", payment)
    return payment


def prepare_subscription(
    uow: UnitOfWork,
    ctx: Context,
    *,
    customer: Customer,
    params: CreateSubscriptionParams,
    collection_method: CollectionMethod,
    session_id: str,
    provider: str,
) -> Prepared:
    """The draft subscription of ``params`` for ``customer``, its invoice and payment."""
    data = SubscriptionCreate(
        customer_id=customer.id,
        plan_id=params.plan_id,
        currency=params.currency,
        billing_period=params.billing_period,
        start_date=params.start_date,
        end_date=params.end_date,
        lookup_key=params.lookup_key,
        metadata=params.metadata,
        collection_method=collection_method,
        subscription_status=SubscriptionStatus.DRAFT,
    )
    sub = create_subscription(uow, ctx, data=data, renewal_notice=ctx.settings.renewal_notice)
    invoice = checkout_invoice(uow, ctx, sub)
    return Prepared(invoice, checkout_payment(uow, ctx, invoice, session_id, provider), sub)


def subscription_configuration(params: CreateSubscriptionParams, prepared: Prepared) -> dict[str, Any]:
    """The ``configuration`` of a ``create_subscription`` session: its parameters and the draft's id."""
    made = prepared.subscription.id if prepared.subscription else None
    return {
        "create_subscription_params": {
            **params.model_dump(mode="json", exclude_none=True),
            "subscription_id": made,
        }
    }


def _finalize(uow: UnitOfWork, ctx: Context, invoice: Invoice) -> Invoice:
    """Draft ``invoice`` numbered and finalized now, saved at the version it was read at."""
    (numbered,) = number_invoices(uow, ctx, [invoice])
    saved = uow.invoices.update(numbered.model_copy(update=ctx.touch()), expected_version=invoice.version)
    notifications.notify(uow, ctx, "invoice.update.finalized", saved)
    return saved


def _finalize_stored(invoice_id: str) -> Any:
    """An ``open_with`` for :func:`activate_subscription` that finalizes the stored draft invoice
    ``invoice_id`` instead of computing a new one."""

    def opening(uow: UnitOfWork, ctx: Context, sub: Subscription) -> Subscription:
        invoice = uow.invoices.get(invoice_id)
        if (invoice.period_start, invoice.period_end) != (sub.current_period_start, sub.current_period_end):
            raise InternalError(f"invoice {invoice.id} does not cover the first period of {sub.id}")
        _finalize(uow, ctx, invoice)
        return sub.model_copy(update={"billing_sequence": invoice.billing_sequence})

    return opening


def pay_checkout_invoice(
    uow: UnitOfWork, ctx: Context, session: CheckoutSession, provider_payment_id: str | None
) -> tuple[Invoice, Payment]:
    """Finalize ``session``'s invoice if it is still a draft, and record its payment as succeeded
    (one attempt naming ``provider_payment_id``), which pays the invoice."""
    invoice = uow.invoices.get(session.invoice_id or "")
    if invoice.invoice_status is InvoiceStatus.DRAFT:
        invoice = _finalize(uow, ctx, invoice)
    payment = uow.payments.get(session.payment_id or "")
    if payment.payment_status is PaymentStatus.SUCCEEDED:
        return invoice, payment
    attempt = PaymentAttempt(
        id=ctx.ids.new("attempt"),
        attempt_number=len(payment.attempts) + 1,
        payment_status=PaymentStatus.SUCCEEDED,
        gateway_attempt_id=provider_payment_id,
        created_at=ctx.now,
    )
    outcome = Outcome(
        PaymentStatus.SUCCEEDED, gateway=session.payment_provider, gateway_payment_id=provider_payment_id
    )
    paid = settle_outcome(uow, ctx, payment, invoice, outcome, attempts=(*payment.attempts, attempt))
    return uow.invoices.get(invoice.id), paid


def apply_created_subscription(
    uow: UnitOfWork, ctx: Context, session: CheckoutSession, provider_payment_id: str | None
) -> dict[str, Any]:
    """Activate the session's draft subscription with the invoice its customer paid, and record
    the payment; the session's ``result``."""
    sub = uow.subscriptions.get(session.subscription_id or "")
    if sub.subscription_status is SubscriptionStatus.DRAFT:
        activate_subscription(
            uow,
            ctx,
            subscription_id=sub.id,
            data=SubscriptionActivate(),
            renewal_notice=ctx.settings.renewal_notice,
            open_with=_finalize_stored(session.invoice_id or ""),
        )
    invoice, payment = pay_checkout_invoice(uow, ctx, session, provider_payment_id)
    return {
        "create_subscription_result": {
            "invoice_id": invoice.id,
            "payment_id": payment.id,
            "subscription_id": sub.id,
        }
    }


def cleanup_payment(uow: UnitOfWork, ctx: Context, session: CheckoutSession, reason: str) -> None:
    """The session's invoice and payment, if any, archived (the payment ``FAILED`` with
    ``reason`` first)."""
    if session.payment_id:
        payment = uow.payments.find(session.payment_id)
        if payment is not None and payment.status is Status.PUBLISHED:
            failed = payment.model_copy(
                update={
                    "payment_status": PaymentStatus.FAILED,
                    "error_message": reason,
                    "failed_at": ctx.now,
                    **ctx.touch(),
                }
            )
            failed = uow.payments.update(failed, expected_version=payment.version)
            notifications.notify(uow, ctx, "payment.failed", failed)
            archive(uow.payments, failed, ctx)
    if session.invoice_id:
        invoice = uow.invoices.find(session.invoice_id)
        if invoice is not None and invoice.status is Status.PUBLISHED:
            archive(uow.invoices, invoice, ctx)


def cleanup_locked(uow: UnitOfWork, ctx: Context, session: CheckoutSession, reason: str) -> None:
    """The session's draft invoice, locked under a change's settlement key, gives the key back
    (so a later change settles afresh), then :func:`cleanup_payment`."""
    invoice = uow.invoices.find(session.invoice_id or "")
    if (
        invoice is not None
        and invoice.status is Status.PUBLISHED
        and invoice.invoice_status is InvoiceStatus.DRAFT
        and invoice.idempotency_key is not None
    ):
        released = invoice.model_copy(update={"idempotency_key": None, **ctx.touch()})
        uow.invoices.update(released, expected_version=invoice.version)
    cleanup_payment(uow, ctx, session, reason)


def cleanup_subscription(uow: UnitOfWork, ctx: Context, session: CheckoutSession, reason: str) -> None:
    """The draft subscription, its invoice and payment archived (see :func:`cleanup_payment`)."""
    cleanup_payment(uow, ctx, session, reason)
    if session.subscription_id:
        sub = uow.subscriptions.find(session.subscription_id)
        if (
            sub is not None
            and sub.status is Status.PUBLISHED
            and sub.subscription_status is SubscriptionStatus.DRAFT
        ):
            archive(uow.subscriptions, sub, ctx)
