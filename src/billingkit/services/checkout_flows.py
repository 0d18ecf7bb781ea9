"""The pay-first flows: requests that carry ``checkout`` open a checkout session instead of
applying at once (reference notes §8).

``POST /subscriptions`` with ``checkout``: the subscription is created as a ``draft`` (whatever
``subscription_status`` asked), with its first invoice and a payment of it, and a
``create_subscription`` session collects the money; the draft is activated only once paid
(:mod:`billingkit.services.checkout_subscriptions`). Without ``checkout`` the request is an
ordinary create.
"""

from __future__ import annotations

from datetime import timedelta

from billingkit.domain.access import Action
from billingkit.domain.checkout_sessions import CheckoutAction
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.ports import UnitOfWork
from billingkit.services.checkout_sessions import open_session
from billingkit.services.checkout_subscriptions import (
    CreateSubscriptionParams,
    Prepared,
    checkout_invoice,
    checkout_payment,
    subscription_configuration,
)
from billingkit.services.context import Context
from billingkit.services.subscription_setup import find_customer
from billingkit.services.subscriptions import SubscriptionCreate, create_subscription

__all__ = ["create_subscription_checked"]


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
