"""Checkout sessions: open one, read it, delete it (reference notes §8; the model and its
statuses are :mod:`billingkit.domain.checkout_sessions`).

Opening a session (:func:`open_session`, shared by ``POST /checkout/sessions`` and the pay-first
flows): the session is stored ``initiated`` with what it will apply, the provider is asked for a
place to pay (:mod:`billingkit.services.checkout_providers`), and the session becomes ``pending``
with ``payment_action`` {type, url}; ``checkout.session.initiated`` is recorded. Everything is one
unit of work: a refusal (a bad request, a zero invoice, a provider that opens no link) writes
nothing. The payment is taken only through the provider's confirmation
(:mod:`billingkit.services.checkout_completion`).

Rules:

* ``expires_at`` is when the session ends unpaid: given (it must be in the future), or 15 minutes
  (Razorpay) / 30 minutes (sandbox) from now; a provider link that expires sooner moves it earlier.
* ``idempotency_key`` is unique among the environment's open (``initiated``/``pending``) sessions:
  another open session with it is a 409 ``already_exists``; once that session has ended
  (completed, failed, expired) the key can be used again.
* A wallet has at most one open top-up session (another is a 409).
* ``POST /checkout/sessions`` opens ``create_subscription`` sessions only; the other actions are
  opened by the requests that carry ``checkout`` (their own routes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from billingkit.domain.access import Action
from billingkit.domain.checkout_sessions import (
    CheckoutAction,
    CheckoutSession,
    CheckoutStatus,
    default_lifetime,
    session_expiry,
)
from billingkit.domain.customers import Customer
from billingkit.domain.queries import Filter, ListQuery, Op, Sort
from billingkit.domain.subscriptions import CollectionMethod
from billingkit.domain.validation import InputModel, Key
from billingkit.errors import AlreadyExists, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.checkout_completion import fail_session
from billingkit.services.checkout_providers import (
    checkout_provider,
    default_provider,
    mandate_terms,
    start_payment,
)
from billingkit.services.checkout_requests import CheckoutParams
from billingkit.services.checkout_subscriptions import (
    CreateSubscriptionParams,
    Prepared,
    prepare_subscription,
    subscription_configuration,
)
from billingkit.services.context import Context
from billingkit.services.records import archive, get_live
from billingkit.services.subscription_setup import find_customer

__all__ = [
    "CheckoutConfiguration",
    "CheckoutSessionCreate",
    "create_checkout_session",
    "delete_checkout_session",
    "get_checkout_session",
    "get_subscription_session",
    "open_session",
]

ENTITY = "checkout_session"
LABEL = "checkout session"


class CheckoutConfiguration(InputModel):
    """The reference's ``CheckoutConfiguration``: the parameters of the session's action. A
    session opened here carries ``create_subscription_params``; the others are set by the
    pay-first flows and refused here."""

    not_supported: ClassVar[frozenset[str]] = frozenset(
        {"add_addon_params", "modify_subscription_params", "wallet_topup_params"}
    )

    create_subscription_params: CreateSubscriptionParams | None = None


class CheckoutSessionCreate(CheckoutParams):
    """The reference's ``CreateCheckoutSessionRequest``: ``customer_external_id``, ``action``
    (``create_subscription``) and ``configuration.create_subscription_params`` {plan_id, currency,
    billing_period, start_date, end_date, lookup_key, metadata}, with the checkout parameters of
    :class:`~billingkit.services.checkout_requests.CheckoutParams`."""

    ignored: ClassVar[frozenset[str]] = frozenset({"entity_creation_options"})

    customer_external_id: Key
    action: CheckoutAction
    configuration: CheckoutConfiguration | None = None


#: Prepares what a session is paid for, given the new session's id and provider name.
Prepare = Callable[[str, str], Prepared]


def _check_key(uow: UnitOfWork, key: str | None) -> None:
    if key is not None and uow.checkout_sessions.find_one(open_key=key) is not None:
        raise AlreadyExists(
            f"an open checkout session already has idempotency_key {key!r}; it can be used again "
            "once that session has ended",
            details={"field": "idempotency_key"},
        )


def _check_wallet(uow: UnitOfWork, wallet_id: str | None) -> None:
    if wallet_id is not None and uow.checkout_sessions.find_one(open_wallet_id=wallet_id) is not None:
        raise AlreadyExists(
            f"wallet {wallet_id} already has an open top-up checkout session",
            details={"field": "wallet_id"},
        )


def _payer(customer: Customer | None) -> dict[str, str]:
    """What a provider may ask about the payer: name, email and contact, where known."""
    if customer is None:
        return {}
    known = {"name": customer.name, "email": customer.email, "contact": customer.contact}
    return {key: value for key, value in known.items() if value}


def open_session(
    uow: UnitOfWork,
    ctx: Context,
    *,
    customer_id: str,
    action: CheckoutAction,
    params: CheckoutParams,
    prepare: Prepare,
    configuration: Callable[[Prepared], dict[str, Any]],
    description: str,
    wallet_id: str | None = None,
) -> CheckoutSession:
    """Open a ``pending`` session of ``action`` for customer ``customer_id`` (see the module
    doc): ``prepare`` makes the records it is paid for, ``configuration`` the session's
    ``configuration`` from them. Raises ``ValidationError`` (a provider
    that cannot be used, an ``expires_at`` not in the future), ``AlreadyExists`` (an open session
    with the key, or of the wallet), and whatever ``prepare`` or the provider raise."""
    name = params.payment_provider or default_provider(uow, ctx)
    provider = checkout_provider(uow, ctx, name)
    config = params.payment_provider_config
    if params.expires_at is not None and params.expires_at <= ctx.now:
        raise ValidationError("expires_at must be in the future", field="expires_at")
    expires_at = params.expires_at or ctx.now + default_lifetime(name)
    _check_key(uow, params.idempotency_key)
    _check_wallet(uow, wallet_id)
    session_id = ctx.ids.new("cs")
    prepared = prepare(session_id, name)
    session = CheckoutSession(
        id=session_id,
        **ctx.stamp(),
        customer_id=customer_id,
        action=action,
        checkout_status=CheckoutStatus.INITIATED,
        expires_at=expires_at,
        idempotency_key=params.idempotency_key,
        success_url=params.success_url,
        cancel_url=params.cancel_url,
        failure_url=params.failure_url,
        payment_provider=name,
        payment_provider_config=config.model_dump(mode="json", exclude_none=True) if config else {},
        configuration=configuration(prepared),
        metadata=params.metadata,
        open_key=params.idempotency_key,
        open_wallet_id=wallet_id,
        run_at=expires_at,
        subscription_id=prepared.subscription.id if prepared.subscription else None,
        invoice_id=prepared.invoice.id,
        payment_id=prepared.payment.id,
    )
    try:
        uow.checkout_sessions.add(session)
    except AlreadyExists:
        # A concurrent request took the key (or the wallet) first: say which.
        _check_key(uow, params.idempotency_key)
        _check_wallet(uow, wallet_id)
        raise
    amount = prepared.invoice.amount_due
    payer = uow.customers.find(customer_id) if provider is not None else None
    started = start_payment(
        ctx,
        session,
        provider,
        amount=amount,
        currency=prepared.invoice.currency,
        description=description,
        mandate=mandate_terms(config, amount) if provider is not None else None,
        customer=_payer(payer),
    )
    expiry = session_expiry(expires_at, started.expires_at)
    pending = session.model_copy(
        update={
            "checkout_status": CheckoutStatus.PENDING,
            "payment_action": started.payment_action,
            "provider_result": started.provider_result,
            "provider_session_id": started.provider_session_id,
            "expires_at": expiry,
            "run_at": expiry,
        }
    )
    pending = uow.checkout_sessions.update(pending, expected_version=session.version)
    notifications.notify(uow, ctx, "checkout.session.initiated", pending)
    return pending


def create_checkout_session(
    uow: UnitOfWork, ctx: Context, *, request: CheckoutSessionCreate
) -> CheckoutSession:
    """``POST /checkout/sessions``: a ``create_subscription`` session for the customer with
    ``customer_external_id`` (see the module doc). Raises ``ValidationError`` naming the field
    (another action, missing ``create_subscription_params``, an unknown customer or plan...),
    ``InvalidOperation`` ("checkout requires a non-zero invoice"), ``AlreadyExists`` (409)."""
    ctx.require(ENTITY, Action.WRITE)
    if request.action is not CheckoutAction.CREATE_SUBSCRIPTION:
        raise ValidationError(
            f"{request.action.value} sessions are opened by the request they pay for (its checkout "
            "field); POST /checkout/sessions opens create_subscription sessions",
            field="action",
        )
    params = request.configuration.create_subscription_params if request.configuration else None
    if params is None:
        raise ValidationError(
            "a create_subscription session needs configuration.create_subscription_params",
            field="configuration",
        )
    customer = find_customer(uow, customer_id=None, external_customer_id=request.customer_external_id)
    config = request.payment_provider_config
    collection = config.collection_method if config else None

    def prepare(session_id: str, provider: str) -> Prepared:
        return prepare_subscription(
            uow,
            ctx,
            customer=customer,
            params=params,
            collection_method=collection or CollectionMethod.SEND_INVOICE,
            session_id=session_id,
            provider=provider,
        )

    return open_session(
        uow,
        ctx,
        customer_id=customer.id,
        action=request.action,
        params=request,
        prepare=prepare,
        configuration=lambda prepared: subscription_configuration(params, prepared),
        description=f"subscription to plan {params.plan_id}",
    )


def get_checkout_session(uow: UnitOfWork, ctx: Context, *, session_id: str) -> CheckoutSession:
    """The session ``session_id``. Raises ``NotFound``."""
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.checkout_sessions, LABEL, session_id)


def get_subscription_session(uow: UnitOfWork, ctx: Context, *, subscription_id: str) -> CheckoutSession:
    """The newest checkout session that made (or pays for) subscription ``subscription_id``.
    Raises ``NotFound``."""
    ctx.require(ENTITY, Action.READ)
    query = ListQuery(
        filters=(Filter("subscription_id", Op.EQ, subscription_id),),
        sort=(Sort("created_at", descending=True),),
        limit=1,
    )
    found = uow.checkout_sessions.list(query).items
    if not found:
        raise NotFound(f"no checkout session for subscription {subscription_id}")
    return found[0]


def delete_checkout_session(uow: UnitOfWork, ctx: Context, *, session_id: str) -> CheckoutSession:
    """Archive session ``session_id``. An open one is first ended as ``failed`` ("deleted"),
    with the cleanup a failed payment has (its draft records archived,
    ``checkout.session.failed``). Raises ``NotFound``."""
    ctx.require(ENTITY, Action.WRITE)
    session = get_live(uow.checkout_sessions, LABEL, session_id)
    if session.is_open:
        session = fail_session(uow, ctx, session, "checkout session deleted")
    return archive(uow.checkout_sessions, session, ctx)
