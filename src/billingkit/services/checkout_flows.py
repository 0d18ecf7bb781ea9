"""The pay-first flows: requests that carry ``checkout`` open a checkout session instead of
applying at once (reference notes §8).

``POST /subscriptions`` with ``checkout``: the subscription is created as a ``draft`` (whatever
``subscription_status`` asked), with its first invoice and a payment of it, and a
``create_subscription`` session collects the money; the draft is activated only once paid
(:mod:`billingkit.services.checkout_subscriptions`). Without ``checkout`` the request is an
ordinary create.

``POST /wallets/{id}/top-up`` with ``checkout`` (``PURCHASED_CREDIT_INVOICED`` only): the invoiced
purchase is made as without checkout (pending credits, a finalized invoice selling them), with a
payment of that invoice, and a ``wallet_topup`` session collects it; the credits land when the
provider confirms the payment (the invoice paid), and fail if the session ends unpaid (the invoice
voided). A wallet has one open top-up session at a time (409).

``POST /subscriptions/{id}/modify/execute`` with ``type: quantity_change`` and ``checkout``: the
change is checked and priced, its invoice stored as a ``DRAFT`` with a payment of it, and a
``modify_subscription`` session collects it; the subscription changes only once paid
(:mod:`billingkit.services.checkout_quantities`). Without ``checkout`` the request is an ordinary
modification.

``POST /subscriptions/addon`` with ``checkout``: the add-on's association is held ``pending``, the
charge attaching it makes now stored as a ``DRAFT`` invoice with a payment of it, and an
``add_addon`` session collects it; the add-on is activated only once paid
(:mod:`billingkit.services.checkout_addons`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

from billingkit.domain.access import Action
from billingkit.domain.checkout_sessions import CheckoutAction, CheckoutSession
from billingkit.domain.invoices import Invoice, InvoiceStatus
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.wallets import TransactionReason
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.checkout_addons import addon_configuration, prepare_addon
from billingkit.services.checkout_quantities import modify_configuration, prepare_quantity_change
from billingkit.services.checkout_requests import CheckoutParams
from billingkit.services.checkout_sessions import open_session
from billingkit.services.checkout_subscriptions import (
    CreateSubscriptionParams,
    Prepared,
    checkout_invoice,
    checkout_payment,
    subscription_configuration,
)
from billingkit.services.context import Context
from billingkit.services.records import get_live
from billingkit.services.subscription_addons import AddAddonRequest, AddedAddon, add_addon
from billingkit.services.subscription_modify import (
    ExecuteSubscriptionModifyRequest,
    SubscriptionModifyResult,
    modify_subscription,
)
from billingkit.services.subscription_setup import find_customer
from billingkit.services.subscriptions import SubscriptionCreate, create_subscription
from billingkit.services.wallet_topups import TopUpRequest, TopUpResult, top_up_wallet
from billingkit.services.wallets import live_wallet

#: What a pay-first change holds until paid (a pending quantity change, a pending add-on).
Made = TypeVar("Made")

__all__ = [
    "add_addon_checked",
    "create_subscription_checked",
    "modify_subscription_checked",
    "top_up_wallet_checked",
]


def create_subscription_checked(
    uow: UnitOfWork, ctx: Context, *, data: SubscriptionCreate, renewal_notice: timedelta | None = None
) -> Subscription:
    """Create a subscription; with ``data.checkout``, a draft whose activation waits for the
    payment of a checkout session (read it with ``checkout.for_subscription``). Raises as
    :func:`~billingkit.services.subscriptions.create_subscription`, and as
    :func:`~billingkit.services.checkout_sessions.open_session` with ``checkout``."""
    if data.checkout is None:
        return create_subscription(uow, ctx, data=data, renewal_notice=renewal_notice)
    ctx.require("subscription", Action.WRITE)
    customer = find_customer(
        uow, customer_id=data.customer_id, external_customer_id=data.external_customer_id
    )
    draft_request = data.model_copy(
        update={"checkout": None, "subscription_status": SubscriptionStatus.DRAFT}
    )
    params = CreateSubscriptionParams(
        plan_id=data.plan_id,
        currency=data.currency,
        billing_period=data.billing_period,
        start_date=data.start_date,
        end_date=data.end_date,
        lookup_key=data.lookup_key,
        metadata=data.metadata,
    )

    def prepare(session_id: str, provider: str) -> Prepared:
        sub = create_subscription(uow, ctx, data=draft_request, renewal_notice=renewal_notice)
        invoice = checkout_invoice(uow, ctx, sub)
        return Prepared(invoice, checkout_payment(uow, ctx, invoice, session_id, provider), sub)

    session = open_session(
        uow,
        ctx,
        customer_id=customer.id,
        action=CheckoutAction.CREATE_SUBSCRIPTION,
        params=data.checkout,
        prepare=prepare,
        configuration=lambda prepared: subscription_configuration(params, prepared),
        description=f"subscription to plan {data.plan_id}",
    )
    return uow.subscriptions.get(session.subscription_id or "")


def top_up_wallet_checked(
    uow: UnitOfWork, ctx: Context, *, wallet_id: str, request: TopUpRequest
) -> TopUpResult:
    """Top wallet ``wallet_id`` up; with ``request.checkout``, an invoiced purchase whose credits
    land once a ``wallet_topup`` checkout session is paid (see the module doc). Raises as
    :func:`~billingkit.services.wallet_topups.top_up_wallet`; ``ValidationError`` on ``checkout``
    for another reason; ``AlreadyExists`` (409) while the wallet has an open top-up session."""
    if request.checkout is None:
        return top_up_wallet(uow, ctx, wallet_id=wallet_id, request=request)
    ctx.require("wallet", Action.WRITE)
    if request.transaction_reason is not TransactionReason.PURCHASED_CREDIT_INVOICED:
        raise ValidationError(
            "checkout goes with transaction_reason PURCHASED_CREDIT_INVOICED", field="checkout"
        )
    wallet = live_wallet(uow, wallet_id)
    purchase = request.model_copy(update={"checkout": None})
    made: list[TopUpResult] = []

    def prepare(session_id: str, provider: str) -> Prepared:
        result = top_up_wallet(uow, ctx, wallet_id=wallet.id, request=purchase)
        invoice = uow.invoices.get(result.invoice_id or "")
        if invoice.invoice_status is not InvoiceStatus.FINALIZED or invoice.amount_remaining <= 0:
            raise InvalidOperation(
                f"top-up {result.wallet_transaction.id} was already invoiced as {invoice.id}, which takes "
                "no payment now: use another idempotency_key"
            )
        made.append(result)
        return Prepared(invoice, checkout_payment(uow, ctx, invoice, session_id, provider))

    def configuration(prepared: Prepared) -> dict[str, Any]:
        return {
            "wallet_topup_params": {
                "wallet_id": wallet.id,
                "wallet_transaction_id": made[0].wallet_transaction.id,
            }
        }

    session = open_session(
        uow,
        ctx,
        customer_id=wallet.customer_id,
        action=CheckoutAction.WALLET_TOPUP,
        params=request.checkout,
        prepare=prepare,
        configuration=configuration,
        description=f"wallet top-up of {wallet.id}",
        wallet_id=wallet.id,
    )
    return replace(made[0], checkout_session=session)


def _open_on(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    action: CheckoutAction,
    params: CheckoutParams,
    *,
    make: Callable[[], tuple[Made, Invoice]],
    configuration: Callable[[Made], dict[str, Any]],
    description: str,
) -> tuple[Made, CheckoutSession]:
    """Open a session of ``action`` paying for a change of live ``sub``: ``make`` holds the
    change and stores the invoice it is paid with, ``configuration`` describes it."""
    ctx.require("subscription", Action.WRITE)
    made: list[Made] = []

    def prepare(session_id: str, provider: str) -> Prepared:
        held, invoice = make()
        made.append(held)
        return Prepared(invoice, checkout_payment(uow, ctx, invoice, session_id, provider), sub)

    session = open_session(
        uow,
        ctx,
        customer_id=sub.customer_id,
        action=action,
        params=params,
        prepare=prepare,
        configuration=lambda _prepared: configuration(made[0]),
        description=description,
    )
    return made[0], session


def modify_subscription_checked(
    uow: UnitOfWork,
    ctx: Context,
    *,
    subscription_id: str,
    data: ExecuteSubscriptionModifyRequest,
    renewal_notice: timedelta | None = None,
) -> SubscriptionModifyResult:
    """Modify a subscription; a quantity change with ``data.checkout`` waits for the payment of a
    ``modify_subscription`` session (the answer: the subscription unchanged and
    ``checkout_session``). Raises as :func:`~billingkit.services.subscription_modify.
    modify_subscription`; ``InvalidOperation`` ("checkout requires a non-zero invoice") for a
    change that charges nothing; as :func:`~billingkit.services.checkout_sessions.open_session`."""
    if data.checkout is None:
        return modify_subscription(
            uow, ctx, subscription_id=subscription_id, data=data, renewal_notice=renewal_notice
        )
    sub = get_live(uow.subscriptions, "subscription", subscription_id)
    change = data.quantity_change_params
    assert change is not None  # the request model allows checkout with quantity_change only
    _made, session = _open_on(
        uow,
        ctx,
        sub,
        CheckoutAction.MODIFY_SUBSCRIPTION,
        data.checkout,
        make=lambda: prepare_quantity_change(uow, ctx, sub, change),
        configuration=lambda made: modify_configuration(sub, made),
        description=f"quantity change of subscription {sub.id}",
    )
    return SubscriptionModifyResult(sub, checkout_session=session)


def add_addon_checked(uow: UnitOfWork, ctx: Context, *, data: AddAddonRequest) -> AddedAddon:
    """Attach an add-on; with ``data.checkout``, held ``pending`` until an ``add_addon`` session
    is paid (the answer: the pending association, the subscription unchanged,
    ``checkout_session``). Raises as :func:`~billingkit.services.subscription_addons.add_addon`;
    ``InvalidOperation`` ("checkout requires a non-zero invoice") for an add-on that charges
    nothing now; as :func:`~billingkit.services.checkout_sessions.open_session`."""
    if data.checkout is None:
        return add_addon(uow, ctx, data=data)
    sub = get_live(uow.subscriptions, "subscription", data.subscription_id)
    attach = data.model_copy(update={"checkout": None})
    held, session = _open_on(
        uow,
        ctx,
        sub,
        CheckoutAction.ADD_ADDON,
        data.checkout,
        make=lambda: prepare_addon(uow, ctx, attach),
        configuration=lambda made: addon_configuration(attach, made),
        description=f"add-on {data.addon_id} for subscription {sub.id}",
    )
    return AddedAddon(held.association, sub, None, checkout_session=session)
