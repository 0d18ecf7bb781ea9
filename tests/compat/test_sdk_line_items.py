"""Subscription line items through the official SDK: extra lines, overrides and entitlement
overrides on create; a line added, changed, searched and ended."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code

SETUP = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "50",
    "billing_period": "ONETIME",
    "invoice_cadence": "ADVANCE",
    "price_unit_type": "FIAT",
    "display_name": "Setup",
}


def _subscription(sdk: Flexprice, env: Scoped) -> tuple[models.SubscriptionResponse, str]:
    """Plan Pro (49.00 a month, 100 calls entitled) bought with its fee overridden to 39.00, a
    one-time setup fee and 1,000 calls; returns the subscription and the plan's fee price id."""
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    feature = env.features.create(name="API", type="metered", meter_id=calls.id)
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    plan = sdk.plans.create_plan(name="Pro", lookup_key="pro")
    fee = sdk.prices.create_price(
        entity_type="PLAN",
        entity_id=plan.id,
        currency="usd",
        type_="FIXED",
        billing_model="FLAT_FEE",
        billing_period="MONTHLY",
        invoice_cadence="ADVANCE",
        price_unit_type="FIAT",
        amount="49.00",
        display_name="Base",
    )
    entitlement = env.entitlements.create(plan_id=plan.id, feature_id=feature.id, usage_limit=100)
    sub = known(
        sdk.subscriptions.create_subscription(
            customer_id=customer.id,
            plan_id=plan.id,
            currency="usd",
            billing_period="MONTHLY",
            override_line_items=[{"price_id": fee.id, "amount": "39.00"}],
            line_items=[{"price": SETUP}],
            override_entitlements=[{"entitlement_id": entitlement.id, "usage_limit": 1000}],
        )
    )
    return sub, fee.id


def test_create_with_extra_and_overridden_lines(sdk: Flexprice, env: Scoped) -> None:
    sub, fee_id = _subscription(sdk, env)
    base, setup = sub.line_items
    assert (base.entity_type, setup.entity_type, setup.billing_period, setup.display_name) == (
        "plan",
        "subscription",
        "ONETIME",
        "Setup",
    )
    assert base.price_id != fee_id
    invoices = known(sdk.invoices.query_invoice(subscription_id=sub.id)).items
    assert [(i.billing_reason, i.amount_due) for i in invoices] == [("SUBSCRIPTION_CREATE", "89.00")]


def test_add_change_search_and_end_a_line(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    sub, _ = _subscription(sdk, env)
    clock.set(datetime(2026, 5, 11, 9, 30, tzinfo=UTC))
    added = known(
        sdk.subscriptions.create_subscription_line_item(
            id=sub.id,
            price={**SETUP, "billing_period": "MONTHLY", "amount": "31", "display_name": "Seat"},
            quantity=2,
            proration_behavior="create_prorations",
            commitment_amount=None,
        )
    )
    assert isinstance(added, models.SubscriptionLineItemResponse)
    assert (added.subscription_id, added.quantity, added.display_name, added.entity_type) == (
        sub.id,
        "2",
        "Seat",
        "subscription",
    )
    assert added.start_date == clock.now()
    # 2 x 31.00 for the 21 of 31 days left: 42.00, invoiced at once.
    update = [
        i
        for i in sdk.invoices.query_invoice(subscription_id=sub.id).items
        if i.billing_reason == "SUBSCRIPTION_UPDATE"
    ]
    assert [i.amount_due for i in update] == ["42.00"]

    clock.set(datetime(2026, 5, 21, 9, 30, tzinfo=UTC))
    changed = known(
        sdk.subscriptions.update_subscription_line_item(id=added.id, amount="40", metadata={"tier": "gold"})
    )
    assert (changed.start_date, changed.metadata) == (clock.now(), {"tier": "gold"})
    assert changed.id != added.id

    found = known(
        sdk.subscriptions.query_subscription_line_items(subscription_ids=[sub.id], active_filter=True)
    )
    assert isinstance(found, models.ListSubscriptionLineItemsResponse)
    assert [li.display_name for li in found.items] == ["Base", "Setup", "Seat"]
    assert found.items[-1].id == changed.id and found.pagination.total == 3
    # Expanded prices (the one-time fee's is left out: the SDK knows only RECURRING cadences).
    priced = known(
        sdk.subscriptions.query_subscription_line_items(price_ids=[changed.price_id], expand="prices")
    )
    assert [(li.id, li.price.amount, li.price.entity_type) for li in priced.items] == [
        (changed.id, "40", "SUBSCRIPTION")
    ]

    ended = known(
        sdk.subscriptions.delete_subscription_line_item(id=changed.id, effective_from="2026-05-25T00:00:00Z")
    )
    assert ended.end_date == datetime(2026, 5, 25, tzinfo=UTC)
    with pytest.raises(errors.FlexpriceError) as refused:
        sdk.subscriptions.update_subscription_line_item(
            id=sub.line_items[1].id, effective_from="2026-05-26T00:00:00Z", amount="1"
        )
    assert status_and_code(refused.value) == (400, "invalid_operation")  # the setup fee is invoiced
