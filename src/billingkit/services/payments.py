"""Payments against invoices: record (and collect) one, read, list, update, archive, process.

Rules (reference notes §4.11, spec rule 4; the arithmetic is :mod:`billingkit.domain.payment_rules`):

* A payment pays a FINALIZED invoice (``destination_type`` INVOICE; CUSTOMER is refused: a payment
  to a customer's account is a wallet top-up) in the invoice's currency; ``amount`` > 0 with at
  most the currency's decimals. Paying more than remains is allowed: the invoice is OVERPAID.
* ``payment_method_type``: ``OFFLINE`` (bank transfer, cash, check: ``metadata`` may say which)
  succeeds at once; ``CREDITS`` debits the wallet ``payment_method_id``; any other method goes
  through the payment provider (see :mod:`billingkit.services.payment_collection`); a ``CARD``
  payment of a subscription's invoice naming no ``payment_method_id`` is charged to the
  subscription's ``gateway_payment_method_id``.
  ``payment_gateway``, when named, must be the provider this ``Billing`` was given.
* ``process_payment=False`` records the payment INITIATED without collecting it;
  :func:`process_payment` collects it later (and retries a FAILED one, as a new attempt, and asks
  the provider about a PENDING one).
* Idempotency: ``idempotency_key`` (unique in the environment, archived payments included)
  defaults to one derived from the request (:func:`~billingkit.domain.payment_rules.payment_key`).
  The same request again answers the first payment and moves nothing; a key named again with
  another request is ``IdempotencyConflict`` (409). Two concurrent identical requests store one
  payment: the loser's insert meets the unique key and answers the winner's payment.
* Notifications: ``payment.created``; then ``payment.success``/``payment.failed``/``payment.pending``
  with ``invoice.update.payment`` when the invoice changed; ``payment.updated`` for an update.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.invoices import Invoice, PaymentStatus
from billingkit.domain.money import quantize_exponent
from billingkit.domain.payment_rules import (
    check_payable,
    check_payment_amount,
    payment_fingerprint,
    payment_key,
)
from billingkit.domain.payments import Payment, PaymentDestinationType, PaymentMethodType
from billingkit.domain.queries import Op, Page
from billingkit.domain.resources import Status
from billingkit.domain.validation import (
    MAX_TEXT,
    CurrencyCode,
    DecimalText,
    Identifier,
    InputModel,
    Key,
    Metadata,
    UtcDatetime,
)
from billingkit.errors import AlreadyExists, IdempotencyConflict, InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.payment_collection import (
    OFFLINE_METHODS,
    Outcome,
    collect,
    payment_wallet,
    provider_outcome,
    settle_outcome,
)
from billingkit.services.records import PartialUpdate, archive, get_live
from billingkit.services.search import Searches, SearchRequest
from billingkit.services.subscription_payment_methods import with_subscription_method

__all__ = [
    "PaymentCreate",
    "PaymentSearch",
    "PaymentUpdate",
    "create_payment",
    "delete_payment",
    "get_payment",
    "list_payments",
    "process_payment",
    "record_payment",
    "update_payment",
]

ENTITY = "payment"
LABEL = "payment"
Url = Annotated[str, Field(max_length=MAX_TEXT)]


class PaymentCreate(InputModel):
    """The reference's ``CreatePaymentRequest``. ``success_url``, ``cancel_url`` and
    ``gateway_options`` are accepted and not used: the provider port takes none of them."""

    ignored: ClassVar[frozenset[str]] = frozenset({"success_url", "cancel_url", "gateway_options"})

    amount: DecimalText
    currency: CurrencyCode
    destination_id: Identifier
    destination_type: PaymentDestinationType
    payment_method_type: PaymentMethodType
    payment_method_id: Key | None = None
    payment_gateway: Key | None = None
    process_payment: bool = True
    save_card_and_make_default: bool = False
    idempotency_key: Key | None = None
    metadata: Metadata = {}
    success_url: Url | None = None
    cancel_url: Url | None = None
    gateway_options: dict[str, Any] | None = None

    def intent(self) -> dict[str, Any]:
        """The fields that make the payment what it is (what its derived key and its
        fingerprint are made of)."""
        return self.model_dump(
            include={
                "amount",
                "currency",
                "destination_id",
                "destination_type",
                "payment_method_type",
                "payment_method_id",
                "payment_gateway",
                "process_payment",
                "save_card_and_make_default",
            }
        )


class PaymentUpdate(PartialUpdate):
    """The reference's ``UpdatePaymentRequest``, with what a caller may change:

    * ``metadata``, any time;
    * ``payment_method_id``, ``payment_gateway``, ``gateway_payment_id``, ``gateway_tracking_id``
      while the payment is INITIATED (not collected yet);
    * ``payment_status`` of an ``OFFLINE`` payment not yet succeeded: SUCCEEDED (optionally with
      ``succeeded_at``) pays the invoice as a new payment would; FAILED (optionally with
      ``failed_at`` and ``error_message``) records the failure. Other methods get their status
      from the wallet or the provider (``process``); ``refunded_at`` and ``voided_at`` are refused
      (money goes back through credit notes and voids).
    """

    required = frozenset({"metadata"})

    payment_status: PaymentStatus | None = None
    error_message: Annotated[str, Field(max_length=MAX_TEXT)] | None = None
    succeeded_at: UtcDatetime | None = None
    failed_at: UtcDatetime | None = None
    refunded_at: UtcDatetime | None = None
    voided_at: UtcDatetime | None = None
    payment_method_id: Key | None = None
    payment_gateway: Key | None = None
    gateway_payment_id: Key | None = None
    gateway_tracking_id: Key | None = None
    metadata: Metadata | None = None


class PaymentSearch(SearchRequest):
    """``GET /payments``: by invoice, customer, status, method, currency, gateway ids."""

    kind: ClassVar[str] = "payments"

    payment_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    destination_type: Annotated[PaymentDestinationType | None, Searches("destination_type", Op.EQ)] = None
    destination_id: Annotated[str | None, Searches("destination_id", Op.EQ)] = None
    customer_id: Annotated[str | None, Searches("customer_id", Op.EQ)] = None
    payment_status: Annotated[list[PaymentStatus] | None, Searches("payment_status", Op.IN)] = None
    payment_method_type: Annotated[PaymentMethodType | None, Searches("payment_method_type", Op.EQ)] = None
    currency: Annotated[CurrencyCode | None, Searches("currency", Op.EQ)] = None
    payment_gateway: Annotated[str | None, Searches("payment_gateway", Op.EQ)] = None
    gateway_payment_id: Annotated[str | None, Searches("gateway_payment_id", Op.EQ)] = None
    gateway_tracking_id: Annotated[str | None, Searches("gateway_tracking_id", Op.EQ)] = None


# -- recording ----------------------------------------------------------------------------------


def _check_request(ctx: Context, request: PaymentCreate) -> None:
    if request.destination_type is PaymentDestinationType.CUSTOMER:
        raise ValidationError(
            "a payment pays an invoice (destination_type INVOICE); money for a customer's account "
            "is a wallet top-up",
            field="destination_type",
        )
    check_payment_amount(request.amount, request.currency)
    method = request.payment_method_type
    if method in OFFLINE_METHODS:
        if request.payment_gateway is not None:
            raise ValidationError(
                f"a {method.value} payment goes through no payment gateway", field="payment_gateway"
            )
        if request.save_card_and_make_default:
            raise ValidationError(
                f"a {method.value} payment has no card to save", field="save_card_and_make_default"
            )
    else:
        name = ctx.providers.payment_provider.name
        if request.payment_gateway is not None and request.payment_gateway != name:
            raise ValidationError(
                f"payment gateway {request.payment_gateway!r} is not configured (this billing uses {name!r})",
                field="payment_gateway",
            )


def _existing(uow: UnitOfWork, key: str, fingerprint: str) -> Payment | None:
    found = uow.payments.find_one(include_archived=True, idempotency_key=key)
    if found is not None and found.request_fingerprint != fingerprint:
        raise IdempotencyConflict(
            f"idempotency_key {key!r} was used for another payment request ({found.id})",
            details={"field": "idempotency_key", "payment_id": found.id},
        )
    return found


def _invoice(uow: UnitOfWork, request: PaymentCreate) -> Invoice:
    invoice = uow.invoices.find(request.destination_id)
    if invoice is None or invoice.status is not Status.PUBLISHED:
        raise ValidationError(f"invoice {request.destination_id} not found", field="destination_id")
    check_payable(invoice)
    if request.currency != invoice.currency:
        raise ValidationError(
            f"currency {request.currency} differs from the invoice's {invoice.currency}", field="currency"
        )
    return invoice


def record_payment(
    uow: UnitOfWork, ctx: Context, request: PaymentCreate, *, intent: dict[str, Any] | None = None
) -> Payment:
    """Record ``request`` (and collect it unless ``process_payment`` is false); the payment as
    saved. ``intent``: further fields the derived key is made of (an invoice's collection attempt
    adds its sequence number). The key already stored with the same request -> that payment,
    nothing moved. See :func:`create_payment` for what it raises."""
    _check_request(ctx, request)
    request = with_subscription_method(uow, request)  # before the key: it is part of the request
    fields = {**request.intent(), **(intent or {})}
    fingerprint = payment_fingerprint(fields)
    key = request.idempotency_key or payment_key(ctx.tenant_id, ctx.env, fields)
    if (found := _existing(uow, key, fingerprint)) is not None:
        return found
    invoice = _invoice(uow, request)
    if request.payment_method_type is PaymentMethodType.CREDITS:
        payment_wallet(uow, request.payment_method_id, invoice)
    payment = Payment(
        id=ctx.ids.new("pay"),
        **ctx.stamp(),
        idempotency_key=key,
        request_fingerprint=fingerprint,
        destination_type=PaymentDestinationType.INVOICE,
        destination_id=invoice.id,
        invoice_number=invoice.invoice_number,
        customer_id=invoice.customer_id,
        payment_method_type=request.payment_method_type,
        payment_method_id=request.payment_method_id,
        payment_gateway=(
            None if request.payment_method_type in OFFLINE_METHODS else ctx.providers.payment_provider.name
        ),
        amount=request.amount.quantize(quantize_exponent(invoice.currency)),
        currency=invoice.currency,
        payment_status=PaymentStatus.INITIATED,
        track_attempts=True,
        save_card_and_make_default=request.save_card_and_make_default,
        metadata=request.metadata,
    )
    try:
        uow.payments.add(payment)
    except AlreadyExists:
        # A concurrent identical request stored it first: answer that payment.
        if (found := _existing(uow, key, fingerprint)) is not None:
            return found
        raise
    notifications.notify(uow, ctx, "payment.created", payment)
    if not request.process_payment:
        return payment
    return collect(uow, ctx, payment, invoice)


def create_payment(uow: UnitOfWork, ctx: Context, *, request: PaymentCreate) -> Payment:
    """Record a payment of an invoice and, unless ``process_payment`` is false, collect it (see
    the module docstring).

    Raises ``ValidationError`` naming the field (a CUSTOMER destination, an unknown invoice, an
    amount not above zero or with too many decimals, another currency, a wallet that cannot pay
    this invoice, a gateway that is not configured); ``InvalidOperation`` for an invoice that is
    not FINALIZED or takes no more payments, or a wallet holding too little (nothing is written);
    ``IdempotencyConflict`` for a key named with another request.
    """
    ctx.require(ENTITY, Action.WRITE)
    return record_payment(uow, ctx, request)


# -- reading ------------------------------------------------------------------------------------


def get_payment(uow: UnitOfWork, ctx: Context, *, payment_id: str) -> Payment:
    """The payment ``payment_id``. Raises ``NotFound`` (archived payments included)."""
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.payments, LABEL, payment_id)


def list_payments(uow: UnitOfWork, ctx: Context, *, search: PaymentSearch) -> Page[Payment]:
    """A page of payments (newest first by default)."""
    ctx.require(ENTITY, Action.READ)
    return uow.payments.list(search.to_query())


# -- changing -----------------------------------------------------------------------------------

_WHILE_INITIATED = ("payment_method_id", "payment_gateway", "gateway_payment_id", "gateway_tracking_id")


def _status_change(payment: Payment, changes: dict[str, Any]) -> PaymentStatus | None:
    """The status an update moves ``payment`` to (``None``: none), after checking it may."""
    for name in ("refunded_at", "voided_at"):
        if name in changes:
            raise ValidationError(
                f"{name} is not set by hand: money goes back through credit notes and invoice voids",
                field=name,
            )
    status: PaymentStatus | None = changes.pop("payment_status", None)
    if status is not None and status is payment.payment_status:
        status = None
    wanted = status or payment.payment_status
    for name, needs in (
        ("succeeded_at", PaymentStatus.SUCCEEDED),
        ("failed_at", PaymentStatus.FAILED),
        ("error_message", PaymentStatus.FAILED),
    ):
        if changes.get(name) is not None and wanted is not needs:
            raise ValidationError(f"{name} goes with payment_status {needs.value}", field=name)
    if status is None:
        return None
    if payment.payment_method_type is not PaymentMethodType.OFFLINE:
        raise InvalidOperation(
            f"payment {payment.id} is a {payment.payment_method_type.value} payment: its status comes "
            "from its wallet or its payment provider (POST /payments/{id}/process), not from an update"
        )
    if status not in (PaymentStatus.SUCCEEDED, PaymentStatus.FAILED):
        raise ValidationError(
            "an update moves an OFFLINE payment to SUCCEEDED or FAILED only", field="payment_status"
        )
    if payment.payment_status is PaymentStatus.SUCCEEDED:
        raise InvalidOperation(f"payment {payment.id} succeeded: its status no longer changes")
    return status


def update_payment(uow: UnitOfWork, ctx: Context, *, payment_id: str, data: PaymentUpdate) -> Payment:
    """Change what :class:`PaymentUpdate` allows; ``payment.updated`` (and ``payment.success``
    with the invoice's money, or ``payment.failed``, for a status change).

    Raises ``NotFound``; ``ValidationError`` naming a field that cannot be set (or set with that
    status); ``InvalidOperation`` for a status change the payment's method does not take, or a
    collection field changed after the payment was collected.
    """
    ctx.require(ENTITY, Action.WRITE)
    payment = get_live(uow.payments, LABEL, payment_id)
    changes = data.changes()
    status = _status_change(payment, changes)
    for name in _WHILE_INITIATED:
        changed = name in changes and changes[name] != getattr(payment, name)
        if changed and payment.payment_status is not PaymentStatus.INITIATED:
            raise InvalidOperation(
                f"payment {payment.id} is {payment.payment_status.value}: {name} changes only "
                "before it is collected (INITIATED)"
            )
    succeeded_at: datetime | None = changes.pop("succeeded_at", None)
    failed_at: datetime | None = changes.pop("failed_at", None)
    if status is None:
        if not changes:
            return payment
        saved = uow.payments.update(
            payment.model_copy(update={**changes, **ctx.touch()}), expected_version=payment.version
        )
        notifications.notify(uow, ctx, "payment.updated", saved)
        return saved
    invoice = get_live(uow.invoices, "invoice", payment.destination_id)
    if status is PaymentStatus.SUCCEEDED:
        check_payable(invoice)
    outcome = Outcome(status, error=changes.pop("error_message", None))
    saved = settle_outcome(
        uow,
        ctx,
        payment,
        invoice,
        outcome,
        attempts=payment.attempts,
        succeeded_at=succeeded_at,
        failed_at=failed_at,
        extra=changes,
    )
    notifications.notify(uow, ctx, "payment.updated", saved)
    return saved


def delete_payment(uow: UnitOfWork, ctx: Context, *, payment_id: str) -> Payment:
    """Archive a payment that moved no money: INITIATED, FAILED, or PENDING at nobody (a pending
    provider payment may still be paid: process it first). Answers the archived payment.

    Raises ``NotFound``; ``InvalidOperation`` for a SUCCEEDED payment (its money is on the
    invoice) or a PENDING provider payment.
    """
    ctx.require(ENTITY, Action.WRITE)
    payment = get_live(uow.payments, LABEL, payment_id)
    if payment.payment_status is PaymentStatus.SUCCEEDED:
        raise InvalidOperation(
            f"payment {payment.id} succeeded: its money is on invoice {payment.destination_id}; "
            "give it back with a credit note or by voiding the invoice"
        )
    if payment.payment_status is PaymentStatus.PENDING and payment.gateway_payment_id is not None:
        raise InvalidOperation(
            f"payment {payment.id} is pending at {payment.payment_gateway}: the customer may still pay it "
            "(process it to learn how it ended)"
        )
    return archive(uow.payments, payment, ctx)


def process_payment(uow: UnitOfWork, ctx: Context, *, payment_id: str) -> Payment:
    """Collect the payment now: an INITIATED one (recorded with ``process_payment=false``) or a
    FAILED one (a new attempt) is collected by its method; a PENDING provider payment is looked
    up at the provider (``get_payment``) and its success or failure applied, once (still pending:
    answered unchanged).

    Raises ``NotFound``; ``InvalidOperation`` for a SUCCEEDED payment, an invoice that no longer
    takes payments (voided since), or a wallet holding too little.
    """
    ctx.require(ENTITY, Action.WRITE)
    payment = get_live(uow.payments, LABEL, payment_id)
    if payment.payment_status is PaymentStatus.SUCCEEDED:
        raise InvalidOperation(f"payment {payment.id} already succeeded")
    invoice = get_live(uow.invoices, "invoice", payment.destination_id)
    if payment.payment_status is PaymentStatus.PENDING and payment.gateway_payment_id is not None:
        answer = ctx.providers.payment_provider.get_payment(payment.gateway_payment_id)
        outcome = provider_outcome(answer)
        if outcome.status is PaymentStatus.PENDING:
            return payment
        if outcome.status is PaymentStatus.SUCCEEDED:
            check_payable(invoice)
        attempts = payment.attempts
        if attempts:
            last = attempts[-1].model_copy(
                update={"payment_status": outcome.status, "error_message": outcome.error}
            )
            attempts = (*attempts[:-1], last)
        return settle_outcome(uow, ctx, payment, invoice, outcome, attempts=attempts)
    check_payable(invoice)
    return collect(uow, ctx, payment, invoice)
