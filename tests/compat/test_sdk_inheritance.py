"""Subscription hierarchies through the official SDK: ``inheritance`` on create, the search filters
``parent_subscription_ids`` and ``invoicing_customer_ids``, the modify types ``inheritance`` and
``grouped_invoicing``, and a parent's invoice (lines naming their subscription, the invoice's
``subscription_customer_id``, the invoice filter of that name)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import Billing, TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _plan(sdk: Flexprice, env: Scoped) -> str:
    """Plan Team: 20.00 a month in advance and 0.10 a call in arrears."""
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    plan = sdk.plans.create_plan(name="Team", lookup_key="team")
    common = {
        "billing_period": "MONTHLY",
        "currency": "usd",
        "entity_type": "PLAN",
        "entity_id": plan.id,
        "price_unit_type": "FIAT",
    }
    sdk.prices.create_price(
        **common,
        type_="FIXED",
        billing_model="FLAT_FEE",
        invoice_cadence="ADVANCE",
        amount="20",
        display_name="Seat",
    )
    sdk.prices.create_price(
        **common,
        type_="USAGE",
        billing_model="FLAT_FEE",
        invoice_cadence="ARREAR",
        amount="0.10",
        meter_id=calls.id,
        display_name="Calls",
    )
    return plan.id


def test_a_family_through_the_sdk(sdk: Flexprice, env: Scoped, billing: Billing, clock: TestClock) -> None:
    plan_id = _plan(sdk, env)
    for external_id in ("holding", "branch", "team", "payer"):
        sdk.customers.create_customer(external_id=external_id, name=external_id.title())
    parent = known(
        sdk.subscriptions.create_subscription(
            external_customer_id="holding",
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            inheritance=models.SubscriptionInheritanceConfig(
                external_customer_ids_to_inherit_subscription=["branch"]
            ),
        )
    )
    assert (parent.subscription_type, parent.parent_subscription_id) == ("parent", None)
    child = known(
        sdk.subscriptions.create_subscription(
            external_customer_id="team",
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            inheritance={"parent_subscription_id": parent.id},
        )
    )
    assert (child.subscription_type, child.parent_subscription_id) == ("grouped_invoicing", parent.id)
    family = known(sdk.subscriptions.query_subscription(parent_subscription_ids=[parent.id]))
    assert sorted(s.subscription_type for s in family.items) == ["grouped_invoicing", "inherited"]

    delegated = known(
        sdk.subscriptions.create_subscription(
            external_customer_id="team",
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            inheritance={"invoicing_customer_external_id": "payer"},
        )
    )
    assert delegated.subscription_type == "delegated_invoicing"
    paying = known(
        sdk.subscriptions.query_subscription(invoicing_customer_ids=[delegated.invoicing_customer_id])
    )
    assert [s.id for s in paying.items] == [delegated.id]

    sdk.events.ingest_events_bulk(
        events=[
            {
                "event_id": f"{who}-{i}",
                "event_name": "api.call",
                "external_customer_id": who,
                "timestamp": (clock.now() + timedelta(hours=i + 1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            for who in ("holding", "branch", "team")
            for i in range(10)
        ]
    )
    clock.advance(days=31)
    billing.run_due()
    cycle = [
        i
        for i in known(sdk.invoices.query_invoice(subscription_id=parent.id)).items
        if i.billing_reason == "SUBSCRIPTION_CYCLE"
    ]
    (invoice,) = cycle
    read = known(sdk.invoices.get_invoice(id=invoice.id))
    # holding + branch: 20 calls = 2.00; team: 10 calls = 1.00, its seat for the next month and,
    # in arrears, its first month (it had no opening invoice). 20 + 2 + 20 + 1 + 20 = 63.00.
    assert sorted((li.display_name, li.amount, li.subscription_id) for li in read.line_items) == sorted(
        [
            ("Seat", "20.00", parent.id),
            ("Calls", "2.00", parent.id),
            ("Seat", "20.00", child.id),
            ("Calls", "1.00", child.id),
            ("Seat", "20.00", child.id),
        ]
    )
    assert (read.total, read.subscription_customer_id) == ("63.00", parent.customer_id)
    theirs = known(sdk.invoices.query_invoice(subscription_customer_id=[delegated.customer_id]))
    # the opening and the first cycle invoice, both issued to the payer
    assert [(i.subscription_id, i.customer_id) for i in theirs.items] == [
        (delegated.id, delegated.invoicing_customer_id)
    ] * 2


def test_modify_through_the_sdk(sdk: Flexprice, env: Scoped) -> None:
    plan_id = _plan(sdk, env)
    for external_id in ("holding", "branch", "team"):
        sdk.customers.create_customer(external_id=external_id, name=external_id.title())
    parent = sdk.subscriptions.create_subscription(
        external_customer_id="holding", plan_id=plan_id, currency="usd", billing_period="MONTHLY"
    )
    added = known(
        sdk.subscriptions.execute_subscription_modify(
            id=parent.id,
            type_="inheritance",
            inheritance_params={"action": "add", "external_customer_ids_to_inherit_subscription": ["branch"]},
        )
    )
    assert isinstance(added, models.SubscriptionModifyResponse)
    assert added.subscription is not None and added.subscription.subscription_type == "parent"
    assert added.changed_resources is not None and added.changed_resources.subscriptions is not None
    (change,) = added.changed_resources.subscriptions
    assert (change.action, change.status) == ("created", "active")

    team = sdk.subscriptions.create_subscription(
        external_customer_id="team", plan_id=plan_id, currency="usd", billing_period="MONTHLY"
    )
    joined = known(
        sdk.subscriptions.execute_subscription_modify(
            id=team.id,
            type_="grouped_invoicing",
            grouped_invoicing_params={"action": "add", "parent_subscription_id": parent.id},
        )
    )
    assert joined.subscription is not None
    assert (joined.subscription.subscription_type, joined.subscription.parent_subscription_id) == (
        "grouped_invoicing",
        parent.id,
    )
    removed = known(
        sdk.subscriptions.execute_subscription_modify(
            id=parent.id,
            type_="inheritance",
            inheritance_params={"action": "remove", "external_customer_ids_to_remove": ["branch"]},
        )
    )
    assert removed.changed_resources is not None and removed.changed_resources.subscriptions is not None
    assert [(c.action, c.status) for c in removed.changed_resources.subscriptions] == [
        ("updated", "cancelled")
    ]
    with pytest.raises(errors.FlexpriceError) as refused:
        sdk.subscriptions.execute_subscription_modify(
            id=parent.id,
            type_="inheritance",
            inheritance_params={"action": "remove", "external_customer_ids_to_remove": ["team"]},
        )
    assert status_and_code(refused.value) == (400, "validation_error")
