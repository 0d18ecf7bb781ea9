"""Plans through the library, on every store: items created, read, cloned and archived together."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit import AlreadyExists, Billing, NotFound, PermissionDenied, Scoped, TestClock, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.services.access import BootstrapResult


def _flat(amount: str = "49.00") -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "USD",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "lookup_key": "pro-monthly",
    }


def _tiered(meter_id: str) -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "TIERED",
        "tier_mode": "SLAB",
        "tiers": [
            {"up_to": 1000, "unit_amount": "0.02"},
            {"up_to": None, "unit_amount": "0.01", "flat_amount": "5"},
        ],
        "meter_id": meter_id,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
    }


@pytest.fixture
def api_feature(test_env: Scoped) -> tuple[str, str]:
    meter = test_env.meters.create(name="API calls", event_name="api.request", aggregation={"type": "COUNT"})
    feature = test_env.features.create(name="API", type="metered", meter_id=meter.id, lookup_key="api")
    return meter.id, feature.id


def _pro(test_env: Scoped, meter_id: str, feature_id: str, **overrides: Any) -> Any:
    fields: dict[str, Any] = {
        "name": "Pro",
        "description": "For teams",
        "lookup_key": "pro",
        "display_order": 2,
        "metadata": {"tier": "pro"},
        "prices": [_flat(), _tiered(meter_id)],
        "entitlements": [{"feature_id": feature_id, "usage_limit": 10000, "usage_reset_period": "MONTHLY"}],
        "credit_grants": [{"name": "Welcome", "credits": "100", "cadence": "ONETIME"}],
    }
    return test_env.plans.create(**{**fields, **overrides})


def test_create_with_items_and_read_back(test_env: Scoped, api_feature: tuple[str, str]) -> None:
    meter_id, feature_id = api_feature
    plan = _pro(test_env, meter_id, feature_id)
    assert (plan.name, plan.description, plan.lookup_key, plan.display_order, plan.metadata) == (
        "Pro",
        "For teams",
        "pro",
        2,
        {"tier": "pro"},
    )
    flat, tiered = plan.prices
    assert (flat.entity_type.value, flat.entity_id, flat.amount, flat.currency) == (
        "PLAN",
        plan.id,
        Decimal("49.00"),
        "usd",
    )
    assert (tiered.meter_id, tiered.tier_mode.value, len(tiered.tiers or ())) == (meter_id, "SLAB", 2)
    assert [p.sequence for p in plan.prices] == [1, 2]
    (entitlement,) = plan.entitlements
    assert (
        entitlement.plan_id,
        entitlement.feature_id,
        entitlement.usage_limit,
        entitlement.feature_type.value,
    ) == (
        plan.id,
        feature_id,
        10000,
        "metered",
    )
    (grant,) = plan.credit_grants
    assert (grant.scope.value, grant.plan_id, grant.credits) == ("PLAN", plan.id, Decimal(100))
    assert test_env.plans.get(plan.id) == plan
    wire = plan.to_dict()
    assert wire["prices"][0]["amount"] == "49.00" and wire["prices"][0]["display_amount"] == "$49.00"
    assert (
        wire["entitlements"][0]["feature_id"] == feature_id and wire["credit_grants"][0]["credits"] == "100"
    )
    assert [e.id for e in test_env.plans.entitlements(plan.id)] == [entitlement.id]
    assert [g.id for g in test_env.plans.credit_grants(plan.id)] == [grant.id]


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"prices": [_flat(), {**_tiered("meter_missing")}]}, "prices[1].meter_id"),
        ({"prices": [{**_flat(), "invoice_cadence": "SOMETIMES"}]}, "prices[0].invoice_cadence"),
        ({"prices": [{**_tiered("m"), "tiers": []}]}, "prices[0].tiers"),
        ({"entitlements": [{"feature_id": "feat_missing"}]}, "entitlements[0].feature_id"),
        (
            {"credit_grants": [{"name": "G", "credits": "0", "cadence": "ONETIME"}]},
            "credit_grants[0].credits",
        ),
        ({"name": ""}, "name"),
        ({"display_order": "first"}, "display_order"),
    ],
)
def test_an_invalid_item_names_its_path_and_writes_nothing(
    test_env: Scoped, billing: Billing, api_feature: tuple[str, str], patch: dict[str, Any], field: str
) -> None:
    meter_id, feature_id = api_feature
    with pytest.raises(ValidationError) as caught:
        _pro(test_env, meter_id, feature_id, **patch)
    assert caught.value.field == field
    assert test_env.plans.list(status=None).total == 0
    assert test_env.prices.list(status=None).total == 0
    assert test_env.entitlements.list(status=None).total == 0


def test_lookup_key_unique_among_live_plans(test_env: Scoped, prod_env: Scoped) -> None:
    first = test_env.plans.create(name="Basic", lookup_key="basic")
    with pytest.raises(AlreadyExists):
        test_env.plans.create(name="Basic 2", lookup_key="basic")
    prod_env.plans.create(name="Basic", lookup_key="basic")
    test_env.plans.delete(first.id)
    assert test_env.plans.create(name="Basic", lookup_key="basic").id != first.id


def test_update_changes_given_fields(test_env: Scoped, clock: TestClock) -> None:
    plan = test_env.plans.create(name="Basic", description="d", metadata={"a": "1"})
    clock.advance(seconds=5)
    updated = test_env.plans.update(plan.id, name="Starter", description=None, display_order=3)
    assert (updated.name, updated.description, updated.display_order, updated.metadata) == (
        "Starter",
        None,
        3,
        {"a": "1"},
    )
    assert updated.updated_at > plan.updated_at and updated.created_at == plan.created_at
    with pytest.raises(ValidationError) as caught:
        test_env.plans.update(plan.id, name=None)
    assert caught.value.field == "name"


def test_delete_archives_the_plan_with_its_items(
    test_env: Scoped, billing: Billing, api_feature: tuple[str, str], clock: TestClock
) -> None:
    meter_id, feature_id = api_feature
    plan = _pro(test_env, meter_id, feature_id)
    clock.advance(days=1)
    assert test_env.plans.delete(plan.id).status.value == "archived"
    with pytest.raises(NotFound):
        test_env.plans.get(plan.id)
    for price in plan.prices:
        stored = test_env.prices.list(
            price_ids=[price.id], status="archived", allow_expired_prices=True
        ).items[0]
        assert stored.end_date == clock.now()
    assert test_env.entitlements.list(status="archived").total == 1
    assert test_env.credit_grants.list(status="archived").total == 1
    deleted = test_env.notifications.list(event_type="entitlement.deleted")
    assert [n.entity_id for n in deleted.items] == [plan.entitlements[0].id]
    # the lookup keys of its prices are free again
    assert (
        test_env.plans.create(name="Pro", lookup_key="pro", prices=[_flat()]).prices[0].lookup_key
        == "pro-monthly"
    )


def test_clone_copies_the_current_items(test_env: Scoped, api_feature: tuple[str, str]) -> None:
    meter_id, feature_id = api_feature
    plan = _pro(test_env, meter_id, feature_id)
    with pytest.raises(ValidationError) as caught:
        test_env.plans.clone(plan.id, name="Pro", lookup_key="pro-2")
    assert caught.value.field == "name"
    with pytest.raises(ValidationError) as caught:
        test_env.plans.clone(plan.id, name="Pro 2")
    assert caught.value.field == "lookup_key"
    copy = test_env.plans.clone(plan.id, name="Pro (annual)", lookup_key="pro-annual", display_order=9)
    assert (copy.name, copy.lookup_key, copy.description, copy.display_order, copy.metadata) == (
        "Pro (annual)",
        "pro-annual",
        "For teams",
        9,
        {"tier": "pro"},
    )
    assert (
        copy.id != plan.id
        and len(copy.prices) == 2
        and len(copy.entitlements) == 1
        and len(copy.credit_grants) == 1
    )
    for original, copied in zip(plan.prices, copy.prices, strict=True):
        assert copied.id != original.id and copied.entity_id == copy.id
        assert (copied.amount, copied.tiers, copied.meter_id) == (
            original.amount,
            original.tiers,
            original.meter_id,
        )
    assert copy.prices[0].lookup_key is None  # lookup keys are unique, so copies do not take them
    assert copy.entitlements[0].feature_id == feature_id and copy.entitlements[0].entity_id == copy.id
    assert copy.credit_grants[0].plan_id == copy.id
    assert test_env.plans.get(plan.id) == plan  # the source is untouched


def test_list_and_expand(test_env: Scoped, api_feature: tuple[str, str], clock: TestClock) -> None:
    meter_id, feature_id = api_feature
    pro = _pro(test_env, meter_id, feature_id)
    clock.advance(seconds=1)
    basic = test_env.plans.create(name="Basic", lookup_key="basic", metadata={"tier": "basic"})
    page = test_env.plans.list()
    assert [p.id for p in page.items] == [basic.id, pro.id] and page.total == 2
    assert page.items[1].prices == ()  # items only on request
    expanded = test_env.plans.list(expand="prices,entitlements", order="asc")
    assert [len(p.prices) for p in expanded.items] == [2, 0]
    assert [len(p.entitlements) for p in expanded.items] == [1, 0] and expanded.items[0].credit_grants == ()
    assert [p.id for p in test_env.plans.search(metadata={"tier": "basic"}).items] == [basic.id]
    assert [p.id for p in test_env.plans.search(plan_ids=[pro.id], lookup_key="pro").items] == [pro.id]


def test_other_environment_and_reader(
    test_env: Scoped, prod_env: Scoped, billing: Billing, setup: BootstrapResult
) -> None:
    plan = test_env.plans.create(name="Basic", lookup_key="basic")
    for call in (prod_env.plans.get, prod_env.plans.delete, prod_env.plans.entitlements):
        with pytest.raises(NotFound):
            call(plan.id)
    with pytest.raises(NotFound):
        prod_env.plans.clone(plan.id, name="x", lookup_key="x")
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.plans.get(plan.id).name == "Basic"
    for write in (
        lambda: reader.plans.create(name="B"),
        lambda: reader.plans.update(plan.id, name="x"),
        lambda: reader.plans.delete(plan.id),
        lambda: reader.plans.clone(plan.id, name="x", lookup_key="x"),
    ):
        with pytest.raises(PermissionDenied):
            write()


def test_addons_own_items_like_plans(
    test_env: Scoped, api_feature: tuple[str, str], prod_env: Scoped
) -> None:
    _, feature_id = api_feature
    addon = test_env.addons.create(
        name="Priority support",
        lookup_key="support",
        description="4h response",
        prices=[{**_flat("99"), "lookup_key": None}],
        entitlements=[{"feature_id": feature_id, "usage_limit": 500}],
    )
    assert (addon.prices[0].entity_type.value, addon.prices[0].entity_id) == ("ADDON", addon.id)
    assert (addon.entitlements[0].entity_type.value, addon.entitlements[0].plan_id) == ("ADDON", None)
    assert test_env.addons.get(addon.id) == addon == test_env.addons.get_by_lookup_key("support")
    updated = test_env.addons.update(addon.id, name="Premium support", metadata={"sla": "4h"})
    assert (updated.name, updated.description, updated.metadata) == (
        "Premium support",
        "4h response",
        {"sla": "4h"},
    )
    with pytest.raises(ValidationError) as caught:
        test_env.addons.create(name="No key")
    assert caught.value.field == "lookup_key"
    with pytest.raises(AlreadyExists):
        test_env.addons.create(name="Again", lookup_key="support")
    assert [a.id for a in test_env.addons.list(lookup_keys=["support"]).items] == [addon.id]
    assert [e.id for e in test_env.addons.entitlements(addon.id)] == [addon.entitlements[0].id]
    with pytest.raises(NotFound):
        prod_env.addons.get(addon.id)
    test_env.addons.delete(addon.id)
    with pytest.raises(NotFound):
        test_env.addons.get_by_lookup_key("support")
    assert test_env.prices.list(status="archived", allow_expired_prices=True).total == 1


def test_addon_metadata_holds_any_json(test_env: Scoped) -> None:
    """The reference types add-on metadata as any JSON object (plans: strings only)."""
    metadata = {"tier": 2, "regions": ["eu", "us"], "limits": {"seats": 5}, "beta": True, "note": None}
    addon = test_env.addons.create(name="Boost", lookup_key="boost", metadata=metadata)
    assert test_env.addons.get(addon.id).metadata == metadata
    changed = test_env.addons.update(addon.id, metadata={"tier": 3})
    assert test_env.addons.get(changed.id).metadata == {"tier": 3}
    for bad in ({"x": float("nan")}, {"k" * 41: 1}, {"x": ["y" * 500]}):
        with pytest.raises(ValidationError) as caught:
            test_env.addons.create(name="Bad", lookup_key="bad", metadata=bad)
        # NaN is refused by the shared storable check, which names the key (metadata.x).
        assert caught.value.field in ("metadata", "metadata.x")
    with pytest.raises(ValidationError):
        test_env.plans.create(name="Pro", metadata={"tier": 2})  # plans keep string values
