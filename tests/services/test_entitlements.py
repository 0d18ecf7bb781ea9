"""Entitlements through the library, on every store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from billingkit import AlreadyExists, Billing, NotFound, PermissionDenied, Scoped, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.catalog import EntitlementEntityType
from billingkit.domain.resources import Status
from billingkit.services.access import BootstrapResult
from billingkit.services.entitlements import (
    EntitlementInput,
    add_owned_entitlement,
    copy_entitlement,
    entitlements_of,
)
from tests.services.conftest import stored


@dataclass
class Catalog:
    plan: str
    other_plan: str
    addon: str
    archived_plan: str
    metered: str
    boolean: str
    static: str
    config: str
    archived_feature: str
    prod_feature: str


def _add(billing: Billing, tenant_id: str, env_id: str, kind: str, **fields: Any) -> str:
    return str(stored(billing.scope(tenant_id, env_id), kind, **fields).id)


@pytest.fixture
def catalog(billing: Billing, setup: BootstrapResult) -> Catalog:
    t = setup.tenant.id
    env = setup.environments[0][0].id
    prod = setup.environments[1][0].id
    plain = {"meter_id": None, "reporting_unit": None, "alert_settings": None}
    return Catalog(
        plan=_add(billing, t, env, "plans"),
        other_plan=_add(billing, t, env, "plans"),
        addon=_add(billing, t, env, "addons"),
        archived_plan=_add(billing, t, env, "plans", status=Status.ARCHIVED),
        metered=_add(billing, t, env, "features", type="metered", meter_id="meter_1"),
        boolean=_add(billing, t, env, "features", type="boolean", **plain),
        static=_add(billing, t, env, "features", type="static", **plain),
        config=_add(billing, t, env, "features", type="config", **plain),
        archived_feature=_add(billing, t, env, "features", type="boolean", status=Status.ARCHIVED, **plain),
        prod_feature=_add(billing, t, prod, "features", type="boolean", **plain),
    )


def test_create_reads_back_every_field(test_env: Scoped, catalog: Catalog, clock: Any) -> None:
    start = datetime(2026, 6, 1, tzinfo=UTC)
    end = datetime(2027, 6, 1, tzinfo=UTC)
    e = test_env.entitlements.create(
        plan_id=catalog.plan,
        feature_id=catalog.metered,
        feature_type="metered",
        is_enabled=True,
        usage_limit=1000,
        usage_reset_period="MONTHLY",
        is_soft_limit=True,
        aggregation_mode="additive",
        grant_measure="quantity",
        grant_quota="250.0",
        grant_duration_unit="hour",
        grant_duration_value=24,
        grant_allocation_behavior="first_usage",
        parent_entitlement_id="ent_parent",
        display_order=3,
        start_date=start,
        end_date=end,
    )
    assert e.id.startswith("ent_")
    assert (e.entity_type, e.entity_id, e.plan_id, e.feature_type.value) == (
        EntitlementEntityType.PLAN,
        catalog.plan,
        catalog.plan,
        "metered",
    )
    assert (e.usage_limit, e.usage_reset_period, e.is_soft_limit, e.aggregation_mode) == (
        1000,
        "MONTHLY",
        True,
        "additive",
    )
    assert (e.grant_measure, e.grant_quota, e.grant_duration_unit, e.grant_duration_value) == (
        "quantity",
        250,
        "hour",
        24,
    )
    assert (e.grant_allocation_behavior, e.parent_entitlement_id, e.display_order) == (
        "first_usage",
        "ent_parent",
        3,
    )
    assert (e.start_date, e.end_date, e.created_at, e.status) == (start, end, clock.now(), Status.PUBLISHED)
    assert e.to_dict()["grant_quota"] == "250"  # a string on the wire, as the reference has it
    assert test_env.entitlements.get(e.id) == e

    static = test_env.entitlements.create(
        entity_type="ADDON", entity_id=catalog.addon, feature_id=catalog.static, static_value="gold"
    )
    assert (static.entity_type.value, static.plan_id, static.feature_type.value, static.static_value) == (
        "ADDON",
        None,
        "static",
        "gold",
    )
    config = test_env.entitlements.create(
        entity_id=catalog.plan, feature_id=catalog.config, config_value={"regions": ["eu"], "max": 3}
    )
    assert config.config_value == {"regions": ["eu"], "max": 3} and config.plan_id == catalog.plan
    flag = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.boolean, is_enabled=False)
    assert (flag.is_enabled, flag.is_soft_limit, flag.usage_limit, flag.display_order) == (
        False,
        False,
        None,
        0,
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"feature_id": "feat_missing"}, "feature_id"),
        ({"feature_id": "@archived"}, "feature_id"),
        ({"feature_id": "@prod"}, "feature_id"),
        ({"feature_type": "boolean"}, "feature_type"),
        ({"feature_type": "weird"}, "feature_type"),
        ({"grant_quota": "1.5"}, "grant_quota"),
        ({"grant_quota": "-1"}, "grant_quota"),
        ({"grant_quota": 2.0}, "grant_quota"),
        ({"grant_quota": "lots"}, "grant_quota"),
        ({"usage_limit": -1}, "usage_limit"),
        ({"usage_reset_period": "HOURLY"}, "usage_reset_period"),
        ({"grant_duration_value": 3}, "grant_duration_unit"),
        ({"static_value": "x"}, "static_value"),
        ({"config_value": {"a": 1}}, "config_value"),
        (
            {"start_date": datetime(2026, 2, 1, tzinfo=UTC), "end_date": datetime(2026, 1, 1, tzinfo=UTC)},
            "end_date",
        ),
        ({"start_date": datetime(2026, 2, 1)}, "start_date"),
        ({"plan_id": None}, "entity_id"),
        ({"plan_id": None, "entity_id": "@addon"}, "entity_id"),
        ({"plan_id": None, "entity_type": "ADDON", "entity_id": "@plan"}, "entity_id"),
        ({"plan_id": "@archived_plan"}, "entity_id"),
        ({"plan_id": None, "entity_type": "SUBSCRIPTION", "entity_id": "subs_1"}, "entity_type"),
        ({"entity_type": "ADDON", "entity_id": "@addon"}, "plan_id"),
        ({"entity_type": "CUSTOMER"}, "entity_type"),
        ({"display_order": 2**31}, "display_order"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, catalog: Catalog, fields: dict[str, Any], field: str
) -> None:
    refs = {
        "@archived": catalog.archived_feature,
        "@prod": catalog.prod_feature,
        "@addon": catalog.addon,
        "@plan": catalog.plan,
        "@archived_plan": catalog.archived_plan,
    }
    body = {"plan_id": catalog.plan, "feature_id": catalog.metered, **fields}
    body = {k: refs.get(v, v) if isinstance(v, str) else v for k, v in body.items() if v is not None}
    with pytest.raises(ValidationError) as caught:
        test_env.entitlements.create(**body)
    assert caught.value.field == field
    assert caught.value.details["field"] == field
    assert test_env.entitlements.list(status=None).total == 0
    assert test_env.notifications.list(event_type="entitlement.created").total == 0


def test_static_feature_needs_a_value_when_enabled(test_env: Scoped, catalog: Catalog) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.static)
    assert caught.value.field == "static_value"
    off = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.static, is_enabled=False)
    assert off.static_value is None


def test_one_live_entitlement_per_feature_and_owner(test_env: Scoped, catalog: Catalog) -> None:
    first = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.boolean)
    with pytest.raises(AlreadyExists):
        test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.boolean)
    # other owners may grant the same feature
    test_env.entitlements.create(plan_id=catalog.other_plan, feature_id=catalog.boolean)
    test_env.entitlements.create(entity_type="ADDON", entity_id=catalog.addon, feature_id=catalog.boolean)
    test_env.entitlements.delete(first.id)
    again = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.boolean)
    assert again.id != first.id
    assert test_env.entitlements.list(status=None).total == 4


def test_bulk_creates_all_or_nothing(test_env: Scoped, catalog: Catalog) -> None:
    items: list[dict[str, Any]] = [
        {"plan_id": catalog.plan, "feature_id": catalog.metered, "grant_quota": "100", "usage_limit": 5},
        {"plan_id": catalog.plan, "feature_id": catalog.boolean},
        {"plan_id": catalog.plan, "feature_id": catalog.static, "static_value": "x", "grant_quota": "1"},
    ]
    with pytest.raises(ValidationError) as caught:
        test_env.entitlements.create_bulk(items=items)
    assert caught.value.field == "items[2].grant_quota"
    bad_quota = [items[0], {**items[1], "grant_quota": "1.5"}]
    with pytest.raises(ValidationError) as caught:
        test_env.entitlements.create_bulk(items=bad_quota)
    assert caught.value.field == "items[1].grant_quota"
    missing_owner = [items[0], {"plan_id": "plan_missing", "feature_id": catalog.boolean}]
    with pytest.raises(ValidationError) as caught:
        test_env.entitlements.create_bulk(items=missing_owner)
    assert caught.value.field == "items[1].entity_id"
    missing_feature = [items[0], {"plan_id": catalog.plan, "feature_id": "feat_x"}]
    with pytest.raises(ValidationError) as caught:
        test_env.entitlements.create_bulk(items=missing_feature)
    assert caught.value.field == "items[1].feature_id"
    with pytest.raises(AlreadyExists):
        test_env.entitlements.create_bulk(items=[items[0], items[1], items[1]])
    with pytest.raises(ValidationError) as caught:
        test_env.entitlements.create_bulk(items=[])
    assert caught.value.field == "items"
    assert test_env.entitlements.list(status=None).total == 0
    assert test_env.notifications.list(event_type="entitlement.created").total == 0

    created = test_env.entitlements.create_bulk(items=items[:2])
    assert [(e.feature_id, e.grant_quota, e.usage_limit) for e in created] == [
        (catalog.metered, 100, 5),
        (catalog.boolean, None, None),
    ]
    assert test_env.entitlements.list().total == 2


def test_update_and_clear_grant_config(test_env: Scoped, catalog: Catalog, clock: Any) -> None:
    e = test_env.entitlements.create(
        plan_id=catalog.plan,
        feature_id=catalog.metered,
        usage_limit=10,
        grant_measure="quantity",
        grant_quota=50,
        grant_duration_unit="day",
        grant_duration_value=1,
        grant_allocation_behavior="unit_start",
    )
    assert test_env.entitlements.update(e.id) == e
    clock.advance(seconds=60)
    changed = test_env.entitlements.update(e.id, usage_limit=None, is_soft_limit=True, grant_quota="75")
    assert (changed.usage_limit, changed.is_soft_limit, changed.grant_quota) == (None, True, 75)
    assert changed.updated_at == clock.now() and changed.created_at == e.created_at
    with pytest.raises(ValidationError) as caught:
        test_env.entitlements.update(e.id, clear_grant_config=True, grant_quota=1)
    assert caught.value.field == "clear_grant_config"
    cleared = test_env.entitlements.update(e.id, clear_grant_config=True)
    assert [getattr(cleared, f) for f in ("grant_measure", "grant_quota", "grant_duration_unit")] == [
        None
    ] * 3
    assert (cleared.grant_duration_value, cleared.grant_allocation_behavior) == (None, None)
    for fields, field in (
        ({"static_value": "x"}, "static_value"),
        ({"is_enabled": None}, "is_enabled"),
        ({"grant_quota": "0.5"}, "grant_quota"),
        ({"usage_limit": -5}, "usage_limit"),
    ):
        with pytest.raises(ValidationError) as caught:
            test_env.entitlements.update(e.id, **fields)
        assert caught.value.field == field
    assert test_env.entitlements.get(e.id) == cleared


def test_list_and_search_filters(test_env: Scoped, catalog: Catalog) -> None:
    a = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.metered, grant_quota=1)
    b = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.boolean, is_enabled=False)
    c = test_env.entitlements.create(entity_type="ADDON", entity_id=catalog.addon, feature_id=catalog.boolean)

    def ids(**fields: Any) -> list[str]:
        return [e.id for e in test_env.entitlements.search(order="asc", **fields).items]

    assert ids() == [a.id, b.id, c.id]
    assert ids(plan_ids=[catalog.plan]) == [a.id, b.id]
    assert ids(entity_type="ADDON") == [c.id]
    assert ids(entity_ids=[catalog.addon, catalog.other_plan]) == [c.id]
    assert ids(feature_ids=[catalog.boolean]) == [b.id, c.id]
    assert ids(feature_type="metered") == [a.id]
    assert ids(is_enabled=False) == [b.id]
    assert ids(has_grant_config=True) == [a.id]
    assert ids(has_grant_config=False) == [b.id, c.id]
    assert ids(entitlement_ids=[c.id]) == [c.id]
    test_env.entitlements.delete(b.id)
    assert ids() == [a.id, c.id]
    assert test_env.entitlements.list(status="archived").items[0].id == b.id


def test_expand_adds_feature_and_owner(test_env: Scoped, catalog: Catalog) -> None:
    e = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.boolean)
    [plain] = test_env.entitlements.expand([e], None)
    assert plain == e.to_dict()
    [body] = test_env.entitlements.expand([e], "features,plans,addons")
    assert body["feature"]["id"] == catalog.boolean and body["feature"]["type"] == "boolean"
    assert body["plan"]["id"] == catalog.plan and body["addon"] is None


def test_shared_functions_for_plans_and_addons(
    billing: Billing, setup: BootstrapResult, catalog: Catalog
) -> None:
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)

    def run(uow: Any, ctx: Any) -> Any:
        first = add_owned_entitlement(
            uow,
            ctx,
            EntitlementInput(feature_id=catalog.metered, usage_limit=5, display_order=2),
            entity_type=EntitlementEntityType.PLAN,
            entity_id=catalog.plan,
        )
        second = add_owned_entitlement(
            uow,
            ctx,
            EntitlementInput(feature_id=catalog.boolean, display_order=1),
            entity_type=EntitlementEntityType.PLAN,
            entity_id=catalog.plan,
        )
        copied = copy_entitlement(
            uow, ctx, first, entity_type=EntitlementEntityType.ADDON, entity_id=catalog.addon
        )
        return first, second, copied, entitlements_of(uow, EntitlementEntityType.PLAN, catalog.plan)

    first, second, copied, owned = scoped.run(run)
    assert [e.id for e in owned] == [second.id, first.id]
    assert (copied.entity_type.value, copied.entity_id, copied.plan_id, copied.usage_limit) == (
        "ADDON",
        catalog.addon,
        None,
        5,
    )
    assert copied.id != first.id and copied.id.startswith("ent_")

    def failing(uow: Any, ctx: Any) -> Any:
        return add_owned_entitlement(
            uow,
            ctx,
            EntitlementInput(feature_id="feat_missing"),
            entity_type=EntitlementEntityType.PLAN,
            entity_id=catalog.other_plan,
            field_prefix="entitlements[1].",
        )

    with pytest.raises(ValidationError) as caught:
        scoped.run(failing)
    assert caught.value.field == "entitlements[1].feature_id"
    assert caught.value.details["field"] == "entitlements[1].feature_id"

    def duplicate(uow: Any, ctx: Any) -> Any:
        return add_owned_entitlement(
            uow,
            ctx,
            EntitlementInput(feature_id=catalog.metered, feature_type="metered"),
            entity_type=EntitlementEntityType.PLAN,
            entity_id=catalog.plan,
        )

    with pytest.raises(AlreadyExists):
        scoped.run(duplicate)


def test_notifications_are_recorded_with_payload(
    test_env: Scoped, billing: Billing, catalog: Catalog
) -> None:
    delivered: list[Any] = []
    unsubscribe = billing.subscribe("entitlement.updated", delivered.append)
    e = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.metered, usage_limit=1)
    test_env.entitlements.update(e.id, usage_limit=2)
    test_env.entitlements.delete(e.id)
    unsubscribe()
    events = test_env.notifications.list(entity_id=e.id).items
    assert [ev.event_type for ev in events] == [
        "entitlement.created",
        "entitlement.updated",
        "entitlement.deleted",
    ]
    assert [ev.entity_type for ev in events] == ["entitlement"] * 3
    assert events[0].payload["entitlement"]["feature_id"] == catalog.metered
    assert events[1].payload == {
        "event_type": "entitlement.updated",
        "entitlement": delivered[0].payload["entitlement"],
    }
    assert events[1].payload["entitlement"]["usage_limit"] == 2
    assert events[2].payload["entitlement"]["status"] == "archived"


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped, catalog: Catalog) -> None:
    e = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.boolean)
    for call in (prod_env.entitlements.get, prod_env.entitlements.delete):
        with pytest.raises(NotFound):
            call(e.id)
    with pytest.raises(NotFound):
        prod_env.entitlements.update(e.id, is_enabled=False)
    assert prod_env.entitlements.list().total == 0
    # the plan of the test environment is no owner in production
    with pytest.raises(ValidationError) as caught:
        prod_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.prod_feature)
    assert caught.value.field == "entity_id"
    test_env.entitlements.delete(e.id)
    with pytest.raises(NotFound):
        test_env.entitlements.get(e.id)


def test_reader_reads_but_cannot_write(
    billing: Billing, setup: BootstrapResult, test_env: Scoped, catalog: Catalog
) -> None:
    e = test_env.entitlements.create(plan_id=catalog.plan, feature_id=catalog.boolean)
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.entitlements.get(e.id) == e
    assert reader.entitlements.list().total == 1
    with pytest.raises(PermissionDenied):
        reader.entitlements.create(plan_id=catalog.plan, feature_id=catalog.metered)
    with pytest.raises(PermissionDenied):
        reader.entitlements.create_bulk(items=[{"plan_id": catalog.plan, "feature_id": catalog.metered}])
    with pytest.raises(PermissionDenied):
        reader.entitlements.update(e.id, is_enabled=False)
    with pytest.raises(PermissionDenied):
        reader.entitlements.delete(e.id)
