"""Plan change v1 through the official SDK: a preview and an execution that replace the
subscription, and an end-of-period change answered as a schedule."""

from __future__ import annotations

from datetime import timedelta

from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from tests.compat.conftest import known, status_and_code


def _plans_and_subscription(sdk: Flexprice) -> tuple[str, str]:
    """A customer on 31.00 a month in advance, and a 93.00 plan to move to."""
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    plan_ids = []
    for name, amount in (("Pro", "31.00"), ("Max", "93.00")):
        plan = sdk.plans.create_plan(name=name)
        sdk.prices.create_price(
            billing_period="MONTHLY",
            currency="usd",
            entity_type="PLAN",
            entity_id=plan.id,
            type_="FIXED",
            billing_model="FLAT_FEE",
            invoice_cadence="ADVANCE",
            amount=amount,
            price_unit_type="FIAT",
        )
        plan_ids.append(plan.id)
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer.id, plan_id=plan_ids[0], currency="usd", billing_period="MONTHLY"
    )
    return sub.id, plan_ids[1]


def test_preview_and_execute_a_plan_change(sdk: Flexprice, clock: TestClock) -> None:
    sub_id, target = _plans_and_subscription(sdk)
    clock.advance(timedelta(days=11))  # 20 of 31 days unused: 20.00 credit
    change = {
        "id": sub_id,
        "target_plan_id": target,
        "billing_cadence": "RECURRING",
        "billing_cycle": "anniversary",
        "billing_period": "MONTHLY",
        "proration_behavior": "create_prorations",
    }
    preview = known(sdk.subscriptions.preview_subscription_change(**change))
    assert isinstance(preview, models.SubscriptionChangePreviewResponse)
    assert preview.change_type == "upgrade"
    assert preview.proration_details is not None
    assert (preview.proration_details.credit_amount, preview.proration_details.net_amount) == (
        "20.00",
        "73.00",
    )
    assert preview.next_invoice_preview is not None and preview.next_invoice_preview.total == "73.00"

    result = known(sdk.subscriptions.execute_subscription_change(**change))
    assert isinstance(result, models.SubscriptionChangeExecuteResponse)
    assert result.old_subscription is not None and result.old_subscription.status == "cancelled"
    assert result.new_subscription is not None and result.new_subscription.plan_id == target
    assert result.invoice is not None and result.invoice.total == "73.00"
    assert result.proration_applied is not None and result.proration_applied.charge_amount == "93.00"
    assert result.is_scheduled is False

    try:
        sdk.subscriptions.execute_subscription_change(**change)
    except errors.FlexpriceError as error:
        assert status_and_code(error) == (400, "invalid_operation")  # cancelled now
    else:
        raise AssertionError("a cancelled subscription changed plan")


def test_an_end_of_period_change_is_a_schedule(sdk: Flexprice) -> None:
    sub_id, target = _plans_and_subscription(sdk)
    result = known(
        sdk.subscriptions.execute_subscription_change(
            id=sub_id,
            target_plan_id=target,
            billing_cadence="RECURRING",
            billing_cycle="anniversary",
            billing_period="MONTHLY",
            proration_behavior="none",
            change_at="end_of_period",
        )
    )
    assert result.is_scheduled is True and result.schedule_id
    assert result.new_subscription is None
