"""The official SDK's pay-first flows: ``execute_subscription_modify`` (a quantity change) and
``add_subscription_addon`` with ``checkout`` answer their session, and the sandbox page's Pay
applies them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from flexprice import Flexprice, models

from billingkit.facade import Scoped
from tests.checkout_world import PRICE, checkout_plan


def test_a_quantity_change_with_checkout_round_trips(sdk: Flexprice, http: TestClient, env: Scoped) -> None:
    customer = env.customers.create(external_id="c1", name="Ada")
    plan_id = checkout_plan(env)
    price = env.prices.list(plan_ids=[plan_id]).items[0]
    sub = env.subscriptions.create(
        customer_id=customer.id,
        plan_id=plan_id,
        currency="usd",
        billing_period="MONTHLY",
        override_line_items=[{"price_id": price.id, "quantity": "2"}],
    )
    line_id = sub.line_items[0].id

    answered = sdk.subscriptions.execute_subscription_modify(
        id=sub.id,
        type_="quantity_change",
        quantity_change_params={"line_items": [{"id": line_id, "quantity": "4"}]},
        checkout={"payment_provider": "sandbox", "idempotency_key": "seats-1"},
    )

    assert isinstance(answered, models.SubscriptionModifyResponse)
    session = answered.checkout_session
    assert session is not None and session.id is not None
    assert (session.action, session.checkout_status, session.idempotency_key) == (
        "modify_subscription",
        "pending",
        "seats-1",
    )
    assert answered.subscription is not None and answered.subscription.id == sub.id
    assert [line.quantity for line in env.subscriptions.get(sub.id).line_items] == [2]

    assert session.payment_action is not None and session.payment_action.url is not None
    http.post(session.payment_action.url.replace("?", "/pay?", 1), follow_redirects=False)

    done = sdk.checkout.get_checkout_session(id=session.id)
    assert done.checkout_status == "completed"
    invoice = sdk.invoices.get_invoice(id=done.checkout_invoice_id or "")
    assert (invoice.payment_status, invoice.amount_paid, invoice.billing_reason) == (
        "SUCCEEDED",
        "60.00",
        "SUBSCRIPTION_UPDATE",
    )
    assert [line.quantity for line in env.subscriptions.get(sub.id).line_items] == [2, 4]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the reference deprecated this path
def test_a_pay_first_addon_round_trips(sdk: Flexprice, http: TestClient, env: Scoped) -> None:
    customer = env.customers.create(external_id="c1", name="Ada")
    sub = env.subscriptions.create(
        customer_id=customer.id, plan_id=checkout_plan(env), currency="usd", billing_period="MONTHLY"
    )
    addon = env.addons.create(name="Boost", lookup_key="boost", prices=[{**PRICE, "amount": "20"}])

    added = sdk.subscriptions.add_subscription_addon(
        subscription_id=sub.id,
        addon_id=addon.id,
        cadence="onetime",
        checkout={"payment_provider": "sandbox", "idempotency_key": "boost-1"},
    )

    assert isinstance(added, models.AddAddonToSubscriptionResponse)
    assert added.addon_status == "pending"
    session = added.checkout_session
    assert session is not None and session.action == "add_addon" and session.checkout_status == "pending"
    assert session.payment_action is not None and session.payment_action.url is not None
    http.post(session.payment_action.url.replace("?", "/pay?", 1), follow_redirects=False)

    listed = sdk.subscriptions.get_subscription_addon_associations(id=sub.id)
    assert [(a.id, a.addon_status) for a in listed.items or []] == [(added.id, "active")]
