"""The official SDK opens a Razorpay mandate checkout (``payment_provider_config`` with
``collection_method: charge_automatically``, ``payment_method`` and ``max_mandate_limit``) against
the adapter, paid on the local Razorpay fake and completed by its signed ``payment.captured``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import Billing, TestClock
from billingkit.http import create_app
from billingkit.services.access import BootstrapResult
from billingkit.testing.razorpay_fake import RazorpayFake
from tests.checkout_world import checkout_plan, subscription_params
from tests.compat.conftest import SERVER_URL, known, status_and_code


@pytest.fixture
def fake() -> Iterator[RazorpayFake]:
    with RazorpayFake() as started:
        yield started


@pytest.fixture
def razorpay_http(
    billing: Billing, setup: BootstrapResult, clock: TestClock, fake: RazorpayFake
) -> TestClient:
    own = Billing(
        billing.storage, clock, environment_providers={setup.environments[0][0].id: fake.provider()}
    )
    scoped = own.scope(setup.tenant.id, setup.environments[0][0].id)
    scoped.customers.create(external_id="c1", name="Ada")
    return TestClient(create_app(own), raise_server_exceptions=False)


def test_a_mandate_checkout_round_trips_through_the_sdk(
    razorpay_http: TestClient, setup: BootstrapResult, billing: Billing, fake: RazorpayFake
) -> None:
    sdk = Flexprice(
        server_url=SERVER_URL, api_key_auth=setup.environments[0][1].api_key, client=razorpay_http
    )
    plan_id = checkout_plan(billing.scope(setup.tenant.id, setup.environments[0][0].id))
    config = {"collection_method": "charge_automatically", "payment_method": "CARD"}

    with pytest.raises(errors.ErrorResponse) as refused:
        sdk.checkout.create_checkout_session(
            action="create_subscription",
            customer_external_id="c1",
            payment_provider="razorpay",
            configuration=subscription_params(plan_id),
            payment_provider_config={**config, "max_mandate_limit": "10"},
        )
    assert status_and_code(refused.value) == (400, "validation_error")

    created = sdk.checkout.create_checkout_session(
        action="create_subscription",
        customer_external_id="c1",
        payment_provider="razorpay",
        configuration=subscription_params(plan_id),
        payment_provider_config={**config, "max_mandate_limit": "100"},
    )
    assert isinstance(created, models.CheckoutSessionResponse)
    known(created)
    (invoice,) = fake.invoices.values()
    assert created.checkout_status == "pending" and created.payment_action is not None
    assert created.payment_action.url == invoice["short_url"]
    assert fake.registrations[invoice["id"]] == {"method": "card", "max_amount": 10000}

    paid = fake.authorise_mandate(invoice["id"])
    hook = fake.webhook("payment.captured", paid["id"])
    path = f"/v1/webhooks/razorpay/{setup.tenant.id}/{setup.environments[0][0].id}"
    assert razorpay_http.post(path, content=hook.body, headers=hook.headers).json() == {"status": "applied"}
    done = sdk.checkout.get_checkout_session(id=created.id or "")
    assert done.checkout_status == "completed" and done.checkout_payment_id is not None
