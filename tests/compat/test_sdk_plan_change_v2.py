"""A plan change in place through the official SDK: a preview, then the execute it showed, an
idempotent retry, and a refusal. May 2026 has 31 days; eleven days in, 20 are left."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from tests.compat.conftest import known, status_and_code


def _plan(sdk: Flexprice, name: str, amount: str) -> str:
    plan = sdk.plans.create_plan(name=name, lookup_key=name.lower())
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
    return plan.id or ""


def test_preview_then_execute_a_plan_change_in_place(sdk: Flexprice, clock: TestClock) -> None:
    pro, big = _plan(sdk, "Pro", "31.00"), _plan(sdk, "Max", "93.00")
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer.id, plan_id=pro, currency="usd", billing_period="MONTHLY", billing_period_count=1
    )
    clock.advance(timedelta(days=11))

    preview = known(
        sdk.subscriptions.preview_subscription_plan_change_v2(
            id=sub.id, target_plan_id=big, proration_behavior="create_prorations"
        )
    )
    assert isinstance(preview, models.SubscriptionChangeV2Response)
    assert (preview.change_type, preview.is_scheduled) == ("upgrade", False)
    assert preview.to_plan is not None and (preview.to_plan.id, preview.to_plan.name) == (big, "Max")
    (shown,) = (preview.changed_resources.invoices or []) if preview.changed_resources else []
    assert shown.status == "preview" and shown.invoice is not None and shown.invoice.total == "40.00"
    assert sdk.subscriptions.get_subscription(id=sub.id).plan_id == pro  # nothing written

    done = known(
        sdk.subscriptions.execute_subscription_plan_change_v2(
            id=sub.id, target_plan_id=big, proration_behavior="create_prorations", idempotency_key="sdk-1"
        )
    )
    assert done.subscription is not None and (done.subscription.id, done.subscription.plan_id) == (
        sub.id,
        big,
    )
    (issued,) = (done.changed_resources.invoices or []) if done.changed_resources else []
    assert (issued.action, issued.status) == ("created", "issued")
    assert issued.invoice is not None and issued.invoice.total == "40.00" == shown.invoice.total
    lines = (done.changed_resources.line_items or []) if done.changed_resources else []
    assert [line.change_action for line in lines] == ["ended", "created"]

    again = known(
        sdk.subscriptions.execute_subscription_plan_change_v2(
            id=sub.id, target_plan_id=big, proration_behavior="create_prorations", idempotency_key="sdk-1"
        )
    )
    assert again == done

    with pytest.raises((errors.ErrorResponse, errors.FlexpriceDefaultError)) as caught:
        sdk.subscriptions.execute_subscription_plan_change_v2(
            id=sub.id, target_plan_id=big, proration_behavior="none"
        )
    assert status_and_code(caught.value) == (400, "validation_error")  # already on Max
