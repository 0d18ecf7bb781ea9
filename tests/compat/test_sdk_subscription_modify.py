"""Subscription modifications through the official SDK: ``execute_subscription_modify`` with
``quantity_change`` and ``trial_end``, and ``preview_subscription_modify`` (nothing written)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from flexprice import Flexprice, models
from flexprice.models.errors import FlexpriceError

from billingkit import Billing, TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code
from tests.store_rows import every_row


def _subscription(
    sdk: Flexprice, *, quantity: str = "5", trial_days: int | None = None
) -> models.SubscriptionResponse:
    """Seats at 10.00 a month in advance; the clock stands at 1 May 09:30 (a 31-day period)."""
    customer = sdk.customers.create_customer(external_id=f"cust-{quantity}-{trial_days}", name="Ada")
    plan = sdk.plans.create_plan(name=f"Seats {quantity} {trial_days}")
    price = sdk.prices.create_price(
        billing_period="MONTHLY",
        currency="usd",
        entity_type="PLAN",
        entity_id=plan.id,
        type_="FIXED",
        billing_model="FLAT_FEE",
        invoice_cadence="ADVANCE",
        amount="10.00",
        price_unit_type="FIAT",
    )
    extra = {"trial_period_days": trial_days} if trial_days else {}
    return sdk.subscriptions.create_subscription(
        customer_id=customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        billing_period_count=1,
        override_line_items=[{"price_id": price.id, "quantity": quantity}],
        **extra,
    )


def test_quantity_change_previewed_then_executed(
    sdk: Flexprice, env: Scoped, clock: TestClock, billing: Billing
) -> None:
    sub = _subscription(sdk)
    assert sub.line_items is not None and sub.id is not None
    line_id = sub.line_items[0].id
    assert line_id is not None
    clock.advance(timedelta(days=11))  # 20 of 31 days left
    params = {"line_items": [{"id": line_id, "quantity": "8"}]}
    before = every_row(billing.storage)
    preview = known(
        sdk.subscriptions.preview_subscription_modify(
            id=sub.id, type_="quantity_change", quantity_change_params=params
        )
    )
    assert every_row(billing.storage) == before
    assert isinstance(preview, models.SubscriptionModifyResponse) and preview.changed_resources is not None
    (shown,) = preview.changed_resources.invoices or []
    assert shown.status == "preview" and shown.invoice is not None
    assert str(shown.invoice.total) == "19.35"  # 80.00 x 20/31 = 51.61 less 50.00 x 20/31 = 32.26

    done = known(
        sdk.subscriptions.execute_subscription_modify(
            id=sub.id, type_="quantity_change", quantity_change_params=params
        )
    )
    assert done.changed_resources is not None
    (issued,) = done.changed_resources.invoices or []
    assert (issued.action, issued.status) == ("created", "issued")
    assert issued.invoice is not None and str(issued.invoice.total) == "19.35"
    assert [item.change_action for item in done.changed_resources.line_items or []] == ["ended", "created"]


def test_trial_end_through_the_sdk(sdk: Flexprice, clock: TestClock) -> None:
    sub = _subscription(sdk, quantity="1", trial_days=14)
    assert sub.id is not None
    clock.advance(timedelta(days=2))
    moved = known(
        sdk.subscriptions.execute_subscription_modify(
            id=sub.id,
            type_="trial_end",
            trial_end_params={"action": "scheduled_date", "new_trial_end": datetime(2026, 5, 20, tzinfo=UTC)},
        )
    )
    assert moved.subscription is not None and moved.subscription.trial_end == datetime(
        2026, 5, 20, tzinfo=UTC
    )
    ended = known(
        sdk.subscriptions.execute_subscription_modify(
            id=sub.id, type_="trial_end", trial_end_params={"action": "immediate"}
        )
    )
    assert ended.subscription is not None and ended.subscription.subscription_status == "active"
    assert ended.changed_resources is not None
    (invoice,) = ended.changed_resources.invoices or []
    assert invoice.invoice is not None and invoice.invoice.billing_reason == "SUBSCRIPTION_TRIAL_END"
    with pytest.raises(FlexpriceError) as caught:
        sdk.subscriptions.execute_subscription_modify(
            id=sub.id, type_="trial_end", trial_end_params={"action": "immediate"}
        )
    assert status_and_code(caught.value) == (400, "invalid_operation")
