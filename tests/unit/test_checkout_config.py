"""Checkout configuration and pure rules: per-environment Razorpay accounts from the environment
variables, ``Settings.public_url``, and a session's lifetime and expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from billingkit import Billing, Settings, TestClock, ValidationError
from billingkit.domain.checkout_sessions import default_lifetime, session_expiry
from billingkit.errors import ConfigurationError
from billingkit.providers import RazorpayPaymentProvider

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def test_each_environment_gets_the_razorpay_account_its_variables_name() -> None:
    found = RazorpayPaymentProvider.per_environment_from_env(
        {
            "BILLINGKIT_RAZORPAY_KEY_ID__env_live": "rzp_live_1",
            "BILLINGKIT_RAZORPAY_KEY_SECRET__env_live": "secret-1",
            "BILLINGKIT_RAZORPAY_WEBHOOK_SECRET__env_live": "hook-1",
            "BILLINGKIT_RAZORPAY_KEY_ID": "rzp_shared",  # the shared account is not an environment's
            "BILLINGKIT_RAZORPAY_KEY_SECRET": "shared",
        }
    )
    assert list(found) == ["env_live"]
    assert found["env_live"].api.key_id == "rzp_live_1"
    assert "secret-1" not in repr(found["env_live"])
    with pytest.raises(ConfigurationError, match="KEY_SECRET"):
        RazorpayPaymentProvider.per_environment_from_env({"BILLINGKIT_RAZORPAY_KEY_ID__env_x": "rzp"})
    billing = Billing.from_env(
        {
            "BILLINGKIT_RAZORPAY_KEY_ID__env_live": "rzp_live_1",
            "BILLINGKIT_RAZORPAY_KEY_SECRET__env_live": "secret-1",
            "BILLINGKIT_PUBLIC_URL": "https://billing.example.com",
            "BILLINGKIT_TOKEN_SECRET": "t",
        }
    )
    assert billing.providers.for_environment("env_live", "razorpay") is not None
    assert billing.providers.for_environment("env_other", "razorpay") is None
    assert billing.settings.public_url == "https://billing.example.com"


def test_the_public_url_is_an_http_address_and_prefixes_the_sandbox_page() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(public_url="billing.example.com")
    assert caught.value.field == "public_url"
    billing = Billing(clock=TestClock(NOW), settings=Settings(public_url="https://pay.example.com/"))
    setup = billing.bootstrap(tenant_name="Acme", owner_email="owner@acme.test")
    test = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    plan = test.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "9",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    test.customers.create(external_id="c1", name="Ada")
    session = test.checkout.create(
        customer_external_id="c1",
        action="create_subscription",
        configuration={
            "create_subscription_params": {"plan_id": plan.id, "currency": "usd", "billing_period": "MONTHLY"}
        },
    )
    assert session.payment_action is not None
    assert session.payment_action["url"].startswith(
        f"https://pay.example.com/v1/checkout/sandbox/{session.id}?"
    )


@pytest.mark.parametrize(
    ("requested", "link", "expected"),
    [
        # requested 12:30, the link expires 12:20 -> 12:20
        (
            NOW + timedelta(hours=3),
            NOW + timedelta(hours=2, minutes=50),
            NOW + timedelta(hours=2, minutes=50),
        ),
        (NOW + timedelta(minutes=15), NOW + timedelta(hours=1), NOW + timedelta(minutes=15)),
        (NOW + timedelta(minutes=15), None, NOW + timedelta(minutes=15)),
    ],
)
def test_the_sooner_expiry_wins(requested: datetime, link: datetime | None, expected: datetime) -> None:
    assert session_expiry(requested, link) == expected


def test_default_lifetimes_follow_the_provider() -> None:
    assert (default_lifetime("razorpay"), default_lifetime("sandbox")) == (
        timedelta(minutes=15),
        timedelta(minutes=30),
    )
