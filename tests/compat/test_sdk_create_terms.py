"""Issue 18's create terms through the official SDK: ``auto_invoice_threshold``,
``gateway_payment_method_id`` and ``checkout`` on ``create_subscription``, and ``sync_plan_prices``."""

from __future__ import annotations

from decimal import Decimal

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _usage_plan(sdk: Flexprice, env: Scoped) -> tuple[str, str]:
    """A customer and a plan billing 0.10 per call in arrears; their ids."""
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    plan = sdk.plans.create_plan(name="Metered", lookup_key="metered")
    sdk.prices.create_price(
        billing_period="MONTHLY",
        currency="usd",
        entity_type="PLAN",
        entity_id=plan.id,
        price_unit_type="FIAT",
        type_="USAGE",
        billing_model="FLAT_FEE",
        invoice_cadence="ARREAR",
        amount="0.10",
        meter_id=calls.id,
        display_name="Calls",
    )
    return customer.id, plan.id


def test_threshold_and_payment_method_on_create_and_an_unconfigured_checkout_provider_refused(
    sdk: Flexprice, env: Scoped
) -> None:
    customer_id, plan_id = _usage_plan(sdk, env)
    sub = known(
        sdk.subscriptions.create_subscription(
            customer_id=customer_id,
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            auto_invoice_threshold="50.00",
            gateway_payment_method_id="pm_card_visa",
        )
    )
    assert isinstance(sub, models.SubscriptionResponse)
    assert (sub.auto_invoice_threshold, sub.gateway_payment_method_id) == ("50.00", "pm_card_visa")
    v2 = known(sdk.subscriptions.get_subscription_v2(id=sub.id))
    assert Decimal(v2.auto_invoice_threshold or "0") == Decimal("50.00")

    with pytest.raises(errors.FlexpriceError) as refused:
        sdk.subscriptions.create_subscription(
            customer_id=customer_id,
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            checkout={"payment_provider": "razorpay", "success_url": "https://shop.test/ok"},
        )
    assert status_and_code(refused.value) == (400, "validation_error")
    assert "razorpay is not configured for this environment" in refused.value.data.message
    with pytest.raises(errors.FlexpriceError) as zero:
        sdk.subscriptions.create_subscription(
            customer_id=customer_id,
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            auto_invoice_threshold="0",
        )
    assert status_and_code(zero.value) == (400, "validation_error")
    assert zero.value.data.message.startswith("auto_invoice_threshold")


def test_sync_plan_prices(sdk: Flexprice, env: Scoped) -> None:
    customer_id, plan_id = _usage_plan(sdk, env)
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer_id, plan_id=plan_id, currency="usd", billing_period="MONTHLY"
    )
    added = sdk.prices.create_price(
        billing_period="MONTHLY",
        currency="usd",
        entity_type="PLAN",
        entity_id=plan_id,
        price_unit_type="FIAT",
        type_="FIXED",
        billing_model="FLAT_FEE",
        invoice_cadence="ADVANCE",
        amount="5.00",
        display_name="Support",
    )
    assert sdk.subscriptions.get_subscription_v2(id=sub.id).plan_prices_out_of_sync is True

    result = known(sdk.plans.sync_plan_prices(id=plan_id))
    assert isinstance(result, models.ModelsTemporalWorkflowResult)
    assert result.workflow_id == f"plan_price_sync_{plan_id}"
    assert result.run_id is not None and result.run_id.startswith("sync_")
    assert result.message is not None and "1 of 1 subscriptions updated" in result.message
    after = sdk.subscriptions.get_subscription_v2(id=sub.id, expand="subscription_line_items")
    assert after.plan_prices_out_of_sync is False
    assert added.id in {line.price_id for line in after.line_items or []}

    with pytest.raises(errors.FlexpriceError) as missing:
        sdk.plans.sync_plan_prices(id="plan_missing")
    assert status_and_code(missing.value) == (404, "not_found")
