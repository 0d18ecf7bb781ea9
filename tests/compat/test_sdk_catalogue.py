"""Price units, plans, prices, features and groups through the official SDK."""

from __future__ import annotations

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code

FLAT = {
    "billing_model": "FLAT_FEE",
    "billing_period": "MONTHLY",
    "currency": "usd",
    "invoice_cadence": "ADVANCE",
    "price_unit_type": "FIAT",
}


def test_price_units(sdk: Flexprice) -> None:
    created = known(
        sdk.price_units.create_price_unit(
            base_currency="usd",
            code="credit",
            conversion_rate="0.25",
            name="Credit",
            symbol="C",
            metadata={"a": "b"},
        )
    )
    assert isinstance(created, models.CreatePriceUnitResponse)
    assert (created.code, created.base_currency, created.conversion_rate, created.symbol) == (
        "credit",
        "usd",
        "0.25",
        "C",
    )
    assert (created.name, created.metadata, created.status) == ("Credit", {"a": "b"}, "published")

    fetched = known(sdk.price_units.get_price_unit(id=created.id))
    assert isinstance(fetched, models.PriceUnitResponse)
    assert fetched.model_dump() == created.model_dump()
    assert known(sdk.price_units.get_price_unit_by_code(code="credit")) == fetched
    renamed = known(sdk.price_units.update_price_unit(id=created.id, name="Credits", metadata={"a": "c"}))
    assert (renamed.name, renamed.metadata, renamed.conversion_rate) == ("Credits", {"a": "c"}, "0.25")

    other = sdk.price_units.create_price_unit(
        base_currency="eur", code="token", conversion_rate="2", name="Token", symbol="T"
    )
    listed = known(sdk.price_units.list_price_units(limit=1, offset=0, sort="code", order="asc"))
    assert isinstance(listed, models.ListPriceUnitsResponse)
    assert [u.code for u in listed.items] == ["credit"] and listed.pagination.total == 2
    searched = known(sdk.price_units.query_price_unit(price_unit_ids=[other.id]))
    assert [u.code for u in searched.items] == ["token"]

    deleted = known(sdk.price_units.delete_price_unit(id=other.id))
    assert isinstance(deleted, models.SuccessResponse) and deleted.message
    assert [u.code for u in sdk.price_units.list_price_units(status="published").items] == ["credit"]
    with pytest.raises(errors.FlexpriceError) as bad:
        sdk.price_units.create_price_unit(
            base_currency="usd", code="x", conversion_rate="-1", name="X", symbol="X"
        )
    assert status_and_code(bad.value) == (400, "validation_error")


def test_plans_and_prices(sdk: Flexprice, env: Scoped) -> None:
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    sdk.price_units.create_price_unit(
        base_currency="usd", code="credit", conversion_rate="0.5", name="Credit", symbol="C"
    )
    plan = known(
        sdk.plans.create_plan(
            name="Pro", lookup_key="pro", description="For teams", display_order=2, metadata={"k": "v"}
        )
    )
    assert isinstance(plan, models.PlanResponse)
    assert (plan.name, plan.lookup_key, plan.description, plan.display_order, plan.metadata) == (
        "Pro",
        "pro",
        "For teams",
        2,
        {"k": "v"},
    )

    base = known(
        sdk.prices.create_price(
            **FLAT,
            entity_type="PLAN",
            entity_id=plan.id,
            type_="FIXED",
            amount="49.00",
            lookup_key="pro-base",
            display_name="Base",
            description="Platform fee",
            metadata={"p": "q"},
        )
    )
    assert isinstance(base, models.PriceResponse)
    assert (base.type, base.billing_model, base.amount, base.currency) == (
        "FIXED",
        "FLAT_FEE",
        "49.00",
        "usd",
    )
    assert (base.entity_type, base.entity_id, base.lookup_key) == ("PLAN", plan.id, "pro-base")
    assert (base.billing_period, base.billing_period_count, base.invoice_cadence, base.billing_cadence) == (
        "MONTHLY",
        1,
        "ADVANCE",
        "RECURRING",
    )
    assert (base.display_name, base.description, base.metadata, base.price_unit_type) == (
        "Base",
        "Platform fee",
        {"p": "q"},
        "FIAT",
    )
    usage = known(
        sdk.prices.create_price(
            **{**FLAT, "billing_model": "TIERED", "invoice_cadence": "ARREAR"},
            entity_type="PLAN",
            entity_id=plan.id,
            type_="USAGE",
            meter_id=calls.id,
            tier_mode="SLAB",
            tiers=[{"up_to": 1000, "unit_amount": "0.02"}, {"unit_amount": "0.01", "flat_amount": "1"}],
        )
    )
    assert (usage.tier_mode, usage.meter_id) == ("SLAB", calls.id)
    assert [(t.up_to, t.unit_amount, t.flat_amount) for t in usage.tiers] == [
        (1000, "0.02", None),
        (None, "0.01", "1"),
    ]
    in_credits = known(
        sdk.prices.create_price(
            **{**FLAT, "price_unit_type": "CUSTOM"},
            entity_type="PLAN",
            entity_id=plan.id,
            type_="FIXED",
            price_unit_config={"price_unit": "credit", "amount": "10"},
        )
    )
    assert (in_credits.price_unit_type, in_credits.price_unit, in_credits.price_unit_amount) == (
        "CUSTOM",
        "credit",
        "10",
    )
    assert in_credits.amount is not None and float(in_credits.amount) == 5  # 10 credits at 0.5 usd

    bulk = known(
        sdk.prices.create_prices_bulk(
            items=[
                {**FLAT, "entity_type": "PLAN", "entity_id": plan.id, "type": "FIXED", "amount": a}
                for a in ("5", "7.5")
            ]
        )
    )
    assert isinstance(bulk, models.CreateBulkPriceResponse)
    assert [p.amount for p in bulk.items] == ["5", "7.5"]

    fetched = known(sdk.prices.get_price(id=usage.id))  # expands its meter
    assert (fetched.id, fetched.meter.id, fetched.meter.event_name, fetched.meter.aggregation.type) == (
        usage.id,
        calls.id,
        "api.call",
        "COUNT",
    )
    assert known(sdk.prices.get_price_by_lookup_key(lookup_key="pro-base")).id == base.id
    found = known(sdk.prices.query_price(plan_ids=[plan.id], limit=50))
    assert isinstance(found, models.ListPricesResponse)
    assert {p.id for p in found.items} == {base.id, usage.id, in_credits.id, *(p.id for p in bulk.items)}

    # a new amount is a new version that takes the lookup key; display changes stay in place
    renamed = known(sdk.prices.update_price(id=base.id, display_name="Platform"))
    assert (renamed.id, renamed.display_name, renamed.amount) == (base.id, "Platform", "49.00")
    v2 = known(sdk.prices.update_price(id=base.id, amount="59.00"))
    assert (v2.amount, v2.parent_price_id, v2.lookup_key) == ("59.00", base.id, "pro-base")
    assert known(sdk.prices.delete_price(id=bulk.items[1].id)).message

    detail = known(sdk.plans.get_plan(id=plan.id))
    assert {p.id for p in detail.prices} == {usage.id, in_credits.id, bulk.items[0].id, v2.id}
    updated = known(sdk.plans.update_plan(id=plan.id, description="For growing teams", metadata={"k": "w"}))
    assert (updated.name, updated.description, updated.metadata) == ("Pro", "For growing teams", {"k": "w"})
    listed = known(sdk.plans.query_plan(plan_ids=[plan.id], expand="prices"))
    assert isinstance(listed, models.ListPlansResponse)
    assert [p.id for p in listed.items] == [plan.id] and len(listed.items[0].prices) == 4

    copy = known(sdk.plans.clone_plan(id=plan.id, name="Pro (EU)", lookup_key="pro-eu"))
    assert (copy.name, copy.lookup_key) == ("Pro (EU)", "pro-eu") and copy.id != plan.id
    assert len(sdk.plans.get_plan(id=copy.id).prices) == 4
    assert known(sdk.plans.delete_plan(id=copy.id)).message
    assert [p.id for p in sdk.plans.query_plan(lookup_key="pro-eu").items] == []

    with pytest.raises(errors.FlexpriceError) as missing_meter:
        sdk.prices.create_price(**FLAT, entity_type="PLAN", entity_id=plan.id, type_="USAGE", amount="1")
    assert status_and_code(missing_meter.value) == (400, "validation_error")
    assert missing_meter.value.data.message.startswith("meter_id")


def test_features_and_groups(sdk: Flexprice, env: Scoped) -> None:
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    api = known(
        sdk.features.create_feature(
            name="API calls",
            type_="metered",
            meter_id=calls.id,
            lookup_key="api",
            description="Requests",
            unit_singular="call",
            unit_plural="calls",
            metadata={"team": "core"},
        )
    )
    assert isinstance(api, models.FeatureResponse)
    assert (api.name, api.type, api.meter_id, api.lookup_key, api.description) == (
        "API calls",
        "metered",
        calls.id,
        "api",
        "Requests",
    )
    assert (api.unit_singular, api.unit_plural, api.metadata, api.status) == (
        "call",
        "calls",
        {"team": "core"},
        "published",
    )
    sso = known(sdk.features.create_feature(name="SSO", type_="boolean", lookup_key="sso"))
    seats = known(sdk.features.create_feature(name="Seats", type_="static", lookup_key="seats"))
    assert (sso.type, seats.type) == ("boolean", "static")

    found = known(
        sdk.features.query_feature(feature_ids=[api.id, sso.id], sort=[{"field": "name", "direction": "asc"}])
    )
    assert isinstance(found, models.ListFeaturesResponse)
    assert [f.name for f in found.items] == ["API calls", "SSO"]
    assert [f.id for f in sdk.features.query_feature(lookup_key="seats").items] == [seats.id]
    renamed = known(sdk.features.update_feature(id=api.id, name="API requests", unit_plural="requests"))
    assert (renamed.name, renamed.unit_plural, renamed.meter_id) == ("API requests", "requests", calls.id)
    copy = known(sdk.features.clone_feature(id=sso.id, name="SSO (EU)", lookup_key="sso-eu"))
    assert (copy.name, copy.lookup_key, copy.type) == ("SSO (EU)", "sso-eu", "boolean") and copy.id != sso.id
    assert known(sdk.features.delete_feature(id=copy.id)).message
    assert sdk.features.query_feature(feature_ids=[copy.id]).items == []

    group = known(sdk.groups.create_group(entity_type="feature", lookup_key="core", name="Core features"))
    assert isinstance(group, models.GroupResponse)
    assert (group.entity_type, group.lookup_key, group.name, group.entity_ids) == (
        "feature",
        "core",
        "Core features",
        [],
    )
    assert known(sdk.groups.get_group(id=group.id)).model_dump() == group.model_dump()
    listed = known(sdk.groups.query_group(lookup_key="core"))
    assert isinstance(listed, models.ListGroupsResponse) and [g.id for g in listed.items] == [group.id]
    assert sdk.groups.delete_group(id=group.id) is None
    with pytest.raises(errors.FlexpriceError) as gone:
        sdk.groups.get_group(id=group.id)
    assert status_and_code(gone.value) == (404, "not_found")
