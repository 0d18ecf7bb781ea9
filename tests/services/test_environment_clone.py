"""Cloning an environment's catalogue, on every store: a rich catalogue is copied with new ids and
every reference remapped, and a customer subscribed in the clone is billed exactly what the same
customer is billed in the source.

Catalogue: meter ``api.call`` (SUM of ``n``); a feature group; features ``calls`` (metered, in the
group) and ``sso``; price unit ``credits`` (1 credit = 0.01 usd); plan ``pro``: 20.00 usd a month in
advance plus calls in arrear, slab tiers 0.10 up to 100 then 0.05 (in a price group), granting
100 calls (soft limit) and SSO, with 5 credits a month; add-on ``boost``: 500 credits (5.00 usd) a month in
advance; coupon ``TEN`` (10 % forever); VAT 20 % on the whole tenant.

Month one, 150 calls (100 included by the entitlement, 50 billed): opening invoice 20.00 + 5.00
= 25.00 - 10 % (2.50) = 22.50 + VAT 4.50 = 27.00; the period's end bills the calls
50 x 0.10 = 5.00 with the next advance 25.00: 30.00 - 3.00 = 27.00 + VAT 5.40 = 32.40, less the
4.50 the plan's granted credits pay: 27.90.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, Scoped, TestClock
from billingkit.services.access import BootstrapResult
from billingkit.services.environment_clone import CLONED_KINDS

FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "20.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}


def build_catalogue(env: Scoped) -> dict[str, Any]:
    meter = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "SUM", "field": "n"})
    feature_group = env.groups.create(name="AI", lookup_key="ai", entity_type="feature").group
    price_group = env.groups.create(name="Usage", lookup_key="usage", entity_type="price").group
    calls = env.features.create(
        name="API calls", type="metered", meter_id=meter.id, lookup_key="calls", group_id=feature_group.id
    )
    sso = env.features.create(name="SSO", type="boolean", lookup_key="sso")
    env.price_units.create(
        code="credits", name="Credits", symbol="CR", base_currency="usd", conversion_rate="0.01"
    )
    usage = {
        "type": "USAGE",
        "billing_model": "TIERED",
        "tier_mode": "SLAB",
        "tiers": [{"up_to": 100, "unit_amount": "0.10"}, {"up_to": None, "unit_amount": "0.05"}],
        "meter_id": meter.id,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "lookup_key": "pro-calls",
        "group_id": price_group.id,
    }
    plan = env.plans.create(
        name="Pro",
        lookup_key="pro",
        prices=[{**FEE, "lookup_key": "pro-fee"}, usage],
        entitlements=[
            {
                "feature_id": calls.id,
                "usage_limit": 100,
                "usage_reset_period": "MONTHLY",
                "is_soft_limit": True,
            },
            {"feature_id": sso.id},
        ],
        credit_grants=[{"name": "Monthly", "credits": "5", "cadence": "RECURRING", "period": "MONTHLY"}],
    )
    boost = env.addons.create(
        name="Boost",
        lookup_key="boost",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
                "price_unit_type": "CUSTOM",
                "price_unit_config": {"price_unit": "credits", "amount": "500"},
            }
        ],
    )
    coupon = env.coupons.create(
        name="Ten", type="percentage", cadence="forever", percentage_off="10", coupon_code="TEN"
    )
    env.tax_rates.create(name="VAT", code="VAT20", percentage_value="20")
    env.tax_associations.create(tax_rate_code="VAT20", entity_type="tenant")
    return {"meter": meter, "plan": plan, "boost": boost, "coupon": coupon, "calls": calls}


def bill_a_month(
    env: Scoped, clock: TestClock, plan_id: str, addon_id: str, coupon_id: str
) -> list[tuple[Any, ...]]:
    customer = env.customers.create(external_id="ada", name="Ada")
    sub = env.subscriptions.create(
        customer_id=customer.id,
        plan_id=plan_id,
        currency="usd",
        billing_period="MONTHLY",
        start_date=clock.now(),
        addons=[{"addon_id": addon_id}],
        coupons=[coupon_id],
    )
    env.events.ingest(
        event_name="api.call",
        external_customer_id="ada",
        properties={"n": 150},
        timestamp=clock.now() + timedelta(days=3),
    )
    assert sub.current_period_end is not None
    env.billing.run_due(sub.current_period_end + timedelta(seconds=1))
    invoices = env.invoices.list(customer_id=customer.id).items
    return sorted(
        (
            i.billing_reason,
            i.period_start - sub.start_date,
            i.subtotal,
            i.total_discount,
            i.total_tax,
            i.total,
            i.amount_due,
        )
        for i in invoices
    )


def test_a_clone_bills_like_its_source(billing: Billing, setup: BootstrapResult, clock: TestClock) -> None:
    source = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    made = build_catalogue(source)
    cloned = source.environments.clone(source.environment_id, name="staging", type="development")
    assert cloned.created and cloned.environment.name == "staging" and cloned.skipped == {}
    assert cloned.copied == {
        "meters": 1,
        "price_units": 1,
        "groups": 2,
        "features": 2,
        "plans": 1,
        "addons": 1,
        "prices": 3,
        "entitlements": 2,
        "credit_grants": 1,
        "coupons": 1,
        "tax_rates": 1,
        "tax_associations": 1,
    }
    assert list(cloned.copied) == list(CLONED_KINDS)
    clone = billing.scope(setup.tenant.id, cloned.environment.id)

    # New ids, same lookup keys, every reference pointing inside the clone.
    plan = clone.plans.get(cloned.ids[made["plan"].id])
    assert plan.id != made["plan"].id and plan.lookup_key == "pro"
    assert clone.plans.list(lookup_key="pro").items[0].id == plan.id
    meter_id = cloned.ids[made["meter"].id]
    by_key = {p.lookup_key: p for p in plan.prices}
    assert set(by_key) == {"pro-fee", "pro-calls"}
    calls_price = by_key["pro-calls"]
    assert (calls_price.entity_id, calls_price.meter_id) == (plan.id, meter_id)
    assert calls_price.group_id is not None and calls_price.group_id.startswith("group_")
    assert clone.groups.get(calls_price.group_id).group.lookup_key == "usage"
    assert {e.feature_id for e in plan.entitlements} == {
        cloned.ids[made["calls"].id],
        *[f.id for f in clone.features.list(lookup_key="sso").items],
    }
    assert all(e.plan_id == plan.id and e.environment_id == clone.environment_id for e in plan.entitlements)
    (grant,) = plan.credit_grants
    assert grant.plan_id == plan.id
    boost = clone.addons.get(cloned.ids[made["boost"].id])
    (unit_price,) = boost.prices
    assert unit_price.price_unit_id in {u.id for u in clone.price_units.list().items}
    assert clone.features.get(cloned.ids[made["calls"].id]).meter_id == meter_id
    source_ids = set(cloned.ids)
    assert source_ids.isdisjoint(cloned.ids.values())
    # Nothing of the customers' side came along, and the source is as it was.
    assert clone.customers.list().total == 0
    assert source.plans.get(made["plan"].id).prices == made["plan"].prices

    start = clock.now()
    billed_source = bill_a_month(source, clock, made["plan"].id, made["boost"].id, made["coupon"].id)
    clock.set(start)
    billed_clone = bill_a_month(clone, clock, plan.id, boost.id, cloned.ids[made["coupon"].id])
    assert billed_clone == billed_source
    assert {row[0].value: row[5] for row in billed_source} == {
        "SUBSCRIPTION_CREATE": Decimal("27.00"),
        "SUBSCRIPTION_CYCLE": Decimal("27.90"),
    }


def test_a_clone_into_an_existing_empty_environment_is_all_or_nothing(
    billing: Billing, setup: BootstrapResult
) -> None:
    source = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    build_catalogue(source)
    target = source.environments.create(name="empty", type="production")
    result = source.environments.clone(source.environment_id, target_environment_id=target.id)
    assert not result.created and result.environment.id == target.id
    assert billing.scope(setup.tenant.id, target.id).plans.list().total == 1
    # Now it is not empty: a second clone into it is refused and writes nothing.
    before = billing.scope(setup.tenant.id, target.id).meters.list().total
    with pytest.raises(InvalidOperation) as refused:
        source.environments.clone(source.environment_id, target_environment_id=target.id)
    assert refused.value.details["kinds"] == list(CLONED_KINDS)
    assert billing.scope(setup.tenant.id, target.id).meters.list().total == before
