"""The official SDK's checkout calls against the adapter: ``create_checkout_session``,
``get_checkout_session`` and ``delete_checkout_session``, a session paid on the sandbox page, a
refused one, and ``create_subscription`` with ``checkout``."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.checkout_world import checkout_plan, subscription_params
from tests.compat.conftest import known, status_and_code


@pytest.fixture
def plan_id(env: Scoped) -> str:
    env.customers.create(external_id="c1", name="Ada")
    return checkout_plan(env)


def test_a_checkout_session_round_trips_and_is_paid_on_the_sandbox_page(
    sdk: Flexprice, http: TestClient, plan_id: str
) -> None:
    created = sdk.checkout.create_checkout_session(
        action="create_subscription",
        customer_external_id="c1",
        payment_provider="sandbox",
        configuration=subscription_params(plan_id),
        idempotency_key="sdk-1",
        success_url="https://shop.test/ok",
        metadata={"cart": "7"},
    )
    assert isinstance(created, models.CheckoutSessionResponse)
    assert (created.checkout_status, created.action, created.idempotency_key, created.metadata) == (
        "pending",
        "create_subscription",
        "sdk-1",
        {"cart": "7"},
    )
    assert created.payment_action is not None and created.payment_action.type == "checkout_url"
    assert created.payment_provider == "sandbox"  # a provider value the SDK keeps as it came
    assert created.id is not None and created.payment_action.url is not None

    paid = http.post(created.payment_action.url.replace("?", "/pay?", 1), follow_redirects=False)
    assert paid.headers["location"] == "https://shop.test/ok"
    done = sdk.checkout.get_checkout_session(id=created.id)
    # Every enum value is one the SDK knows but the provider: "sandbox" is billingkit's own.
    known(done.model_copy(update={"payment_provider": "razorpay"}))
    assert (done.checkout_status, done.checkout_invoice_id is not None, done.completed_at is not None) == (
        "completed",
        True,
        True,
    )
    # (This SDK version has no ``result``; the invoice names the subscription it opened.)
    invoice = sdk.invoices.get_invoice(id=done.checkout_invoice_id or "")
    assert invoice.payment_status == "SUCCEEDED"
    sub_id = invoice.subscription_id
    assert sub_id is not None
    assert sdk.subscriptions.get_subscription(id=sub_id).subscription_status == "active"

    sdk.checkout.delete_checkout_session(id=created.id)
    with pytest.raises(errors.FlexpriceError) as gone:
        sdk.checkout.get_checkout_session(id=created.id)
    assert status_and_code(gone.value) == (404, "not_found")


def test_an_open_key_is_a_conflict_and_a_subscription_with_checkout_answers_its_session(
    sdk: Flexprice, env: Scoped, plan_id: str
) -> None:
    def open_session() -> models.CheckoutSessionResponse:
        return sdk.checkout.create_checkout_session(
            action="create_subscription",
            customer_external_id="c1",
            payment_provider="sandbox",
            configuration=subscription_params(plan_id),
            idempotency_key="sdk-2",
        )

    open_session()
    with pytest.raises(errors.FlexpriceError) as duplicate:
        open_session()
    assert status_and_code(duplicate.value) == (409, "already_exists")

    sub = sdk.subscriptions.create_subscription(
        external_customer_id="c1",
        plan_id=plan_id,
        currency="usd",
        billing_period="MONTHLY",
        checkout={"payment_provider": "sandbox", "idempotency_key": "sdk-3"},
    )
    assert sub.subscription_status == "draft"
    assert sub.checkout_session is not None and sub.checkout_session.checkout_status == "pending"
    assert env.checkout.for_subscription(sub.id or "").id == sub.checkout_session.id
