"""Subscriptions and invoices through the official SDK: a plan bought, billed and previewed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import Billing, TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _catalogue(sdk: Flexprice, env: Scoped) -> tuple[str, str, str]:
    """A customer and a plan with a monthly fee and metered calls; returns their ids."""
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    plan = sdk.plans.create_plan(name="Pro", lookup_key="pro")
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
        amount="49.00",
        display_name="Base",
    )
    sdk.prices.create_price(
        **common,
        type_="USAGE",
        billing_model="FLAT_FEE",
        invoice_cadence="ARREAR",
        amount="0.01",
        meter_id=calls.id,
        display_name="Calls",
    )
    return customer.id, plan.id, calls.id


def test_subscribe_activate_and_find(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    customer_id, plan_id, _ = _catalogue(sdk, env)
    sub = known(
        sdk.subscriptions.create_subscription(
            customer_id=customer_id,
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            billing_period_count=1,
            billing_cycle="anniversary",
            payment_terms="30 NET",
            lookup_key="ada-pro",
            metadata={"crm": "42"},
        )
    )
    assert isinstance(sub, models.SubscriptionResponse)
    assert (sub.customer_id, sub.plan_id, sub.currency, sub.billing_period, sub.billing_period_count) == (
        customer_id,
        plan_id,
        "usd",
        "MONTHLY",
        1,
    )
    assert (sub.subscription_status, sub.billing_cycle, sub.lookup_key, sub.metadata) == (
        "active",
        "anniversary",
        "ada-pro",
        {"crm": "42"},
    )
    now = clock.now()
    assert (sub.start_date, sub.current_period_start, sub.billing_anchor) == (now, now, now)
    assert sub.current_period_end == datetime(2026, 6, 1, 9, 30, tzinfo=UTC)
    assert sorted((li.display_name, li.price_type, li.invoice_cadence) for li in sub.line_items) == [
        ("Base", "FIXED", "ADVANCE"),
        ("Calls", "USAGE", "ARREAR"),
    ]

    assert known(sdk.subscriptions.get_subscription(id=sub.id)).model_dump() == sub.model_dump()
    v2 = known(sdk.subscriptions.get_subscription_v2(id=sub.id, expand="subscription_line_items"))
    assert isinstance(v2, models.SubscriptionResponseV2)
    assert (v2.id, v2.plan_prices_out_of_sync, len(v2.line_items)) == (sub.id, False, 2)
    assert sdk.subscriptions.get_subscription_v2(id=sub.id).line_items is None  # only when expanded
    everything = "coupon_associations,credit_grants,subscription_line_items,phases"
    full = known(sdk.subscriptions.get_subscription_v2(id=sub.id, expand=everything))
    assert (full.coupon_associations, full.credit_grants, full.phases, len(full.line_items)) == (
        [],
        [],
        [],
        2,
    )

    draft = known(
        sdk.subscriptions.create_subscription(
            external_customer_id="cust-ada",
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            subscription_status="draft",
        )
    )
    assert (draft.customer_id, draft.subscription_status) == (customer_id, "draft")
    later = now + timedelta(days=2)
    active = known(sdk.subscriptions.activate_subscription(id=draft.id, start_date=later))
    assert (active.id, active.subscription_status, active.start_date) == (draft.id, "active", later)
    with pytest.raises(errors.FlexpriceError) as twice:
        sdk.subscriptions.activate_subscription(id=draft.id, start_date=later)
    assert status_and_code(twice.value) == (400, "invalid_operation")

    found = known(sdk.subscriptions.query_subscription(customer_id=customer_id, with_line_items=True))
    assert isinstance(found, models.ListSubscriptionsResponse)
    assert {s.id for s in found.items} == {sub.id, draft.id} and all(
        len(s.line_items) == 2 for s in found.items
    )
    assert [s.id for s in sdk.subscriptions.query_subscription(subscription_ids=[sub.id]).items] == [sub.id]
    mine = known(sdk.customers.get_subscriptions_for_customer(external_id="cust-ada"))
    assert {s.id for s in mine.items} == {sub.id, draft.id} and mine.pagination.total == 2

    with pytest.raises(errors.FlexpriceError) as bad:
        sdk.subscriptions.create_subscription(
            customer_id=customer_id,
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            billing_period_count=0,
        )
    assert status_and_code(bad.value) == (400, "validation_error")
    assert bad.value.data.message.startswith("billing_period_count")
    with pytest.raises(errors.FlexpriceError) as nobody:
        sdk.customers.get_subscriptions_for_customer(external_id="nobody")
    assert status_and_code(nobody.value) == (404, "not_found")


def test_invoices(sdk: Flexprice, env: Scoped, billing: Billing, clock: TestClock) -> None:
    customer_id, plan_id, _ = _catalogue(sdk, env)
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer_id, plan_id=plan_id, currency="usd", billing_period="MONTHLY"
    )
    sdk.events.ingest_events_bulk(
        events=[
            {
                "event_id": f"c{i}",
                "event_name": "api.call",
                "external_customer_id": "cust-ada",
                "timestamp": (clock.now() + timedelta(hours=i + 1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            for i in range(150)
        ]
    )
    preview = known(sdk.invoices.get_invoice_preview(subscription_id=sub.id))
    assert isinstance(preview, models.InvoiceResponse)
    assert (preview.subscription_id, preview.customer_id, preview.currency, preview.invoice_type) == (
        sub.id,
        customer_id,
        "usd",
        "SUBSCRIPTION",
    )
    # the period's usage and the next period's fee, billed in advance
    assert sorted((li.display_name, li.quantity, li.amount) for li in preview.line_items) == [
        ("Base", "1", "49.00"),
        ("Calls", "150", "1.50"),
    ]

    clock.advance(days=31)  # the first period ends: its usage is billed with the next fee
    billing.run_due()
    found = known(sdk.invoices.query_invoice(customer_id=customer_id))
    assert isinstance(found, models.ListInvoicesResponse)
    opening, renewal = sorted(found.items, key=lambda i: i.billing_sequence)
    assert (opening.billing_reason, opening.amount_due, opening.invoice_status, opening.payment_status) == (
        "SUBSCRIPTION_CREATE",
        "49.00",
        "FINALIZED",
        "PENDING",
    )
    assert (renewal.billing_reason, renewal.amount_due, renewal.subtotal, renewal.total) == (
        "SUBSCRIPTION_CYCLE",
        "50.50",
        "50.50",
        "50.50",
    )
    invoice = known(sdk.invoices.get_invoice(id=renewal.id))
    assert (invoice.id, invoice.invoice_number, invoice.period_start, invoice.period_end) == (
        renewal.id,
        renewal.invoice_number,
        renewal.period_start,
        renewal.period_end,
    )
    assert sorted((li.display_name, li.amount) for li in invoice.line_items) == [
        ("Base", "49.00"),
        ("Calls", "1.50"),
    ]
    by_reason = sdk.invoices.query_invoice(customer_id=customer_id, billing_reason="SUBSCRIPTION_CYCLE")
    assert [i.id for i in by_reason.items] == [renewal.id]
    with pytest.raises(errors.FlexpriceError) as missing:
        sdk.invoices.get_invoice(id="inv_missing")
    assert status_and_code(missing.value) == (404, "not_found")


def test_line_item_commitments(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    customer_id, plan_id, calls_id = _catalogue(sdk, env)
    (calls_price,) = [p for p in env.prices.list(plan_ids=[plan_id]).items if p.meter_id == calls_id]
    sub = known(
        sdk.subscriptions.create_subscription(
            customer_id=customer_id,
            plan_id=plan_id,
            currency="usd",
            billing_period="MONTHLY",
            line_item_commitments={
                calls_price.id: models.LineItemCommitmentConfig(
                    commitment_type="amount", commitment_amount=5, overage_factor=1.5, enable_true_up=True
                )
            },
        )
    )
    (committed,) = [li for li in sub.line_items if li.price_id == calls_price.id]
    # the SDK sends JSON numbers (5.0): read exactly as written
    assert (committed.commitment_type, committed.commitment_amount) == ("amount", "5.0")
    assert (committed.commitment_overage_factor, committed.commitment_true_up_enabled) == ("1.5", True)
    sdk.events.ingest_events_bulk(
        events=[
            {
                "event_id": f"k{i}",
                "event_name": "api.call",
                "external_customer_id": "cust-ada",
                "timestamp": (clock.now() + timedelta(hours=i + 1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            for i in range(600)
        ]
    )
    preview = known(sdk.invoices.get_invoice_preview(subscription_id=sub.id))
    (calls,) = [li for li in preview.line_items if li.price_id == calls_price.id]
    assert calls.amount == "6.50"  # 600 x 0.01 = 6.00: 5.00 + 1.00 x 1.5 = 6.50
    info = calls.commitment_info
    assert isinstance(info, models.CommitmentInfo)
    assert (info.type, info.amount, info.duration, info.overage_factor) == ("amount", "5.0", "MONTHLY", "1.5")
    assert (info.computed_commitment_utilized_amount, info.computed_overage_amount) == ("5.00", "1.50")
