"""Features through the library, on every store."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit import (
    AlreadyExists,
    Billing,
    InvalidOperation,
    NotFound,
    PermissionDenied,
    Scoped,
    TestClock,
    ValidationError,
)
from billingkit.domain.access import Actor, Role
from billingkit.domain.catalog import (
    AlertCondition,
    AlertSettings,
    AlertThreshold,
    FeatureType,
    MeterFilterValue,
    ReportingUnit,
)
from billingkit.services.access import BootstrapResult

METER: dict[str, Any] = {"name": "Calls", "event_name": "api_call", "aggregation": {"type": "COUNT"}}
ALERTS: dict[str, Any] = {
    "alert_enabled": True,
    "info": {"threshold": "50", "condition": "above"},
    "warning": {"threshold": "80"},
    "critical": {"threshold": "95.5", "condition": "above"},
}


def test_create_read_every_field(test_env: Scoped) -> None:
    meter = test_env.meters.create(**METER)
    group = test_env.groups.create(name="API", lookup_key="api", entity_type="feature").group
    feature = test_env.features.create(
        name="API calls",
        type="metered",
        description="Calls to the API",
        lookup_key="api-calls",
        meter_id=meter.id,
        group_id=group.id,
        metadata={"tier": "pro"},
        unit_singular="call",
        unit_plural="calls",
        reporting_unit={"unit_singular": "kcall", "unit_plural": "kcalls", "conversion_rate": "0.001"},
        alert_settings=ALERTS,
    )
    assert feature.id.startswith("feat_")
    assert (feature.name, feature.type, feature.description, feature.lookup_key) == (
        "API calls",
        FeatureType.METERED,
        "Calls to the API",
        "api-calls",
    )
    assert (feature.meter_id, feature.group_id, feature.metadata) == (meter.id, group.id, {"tier": "pro"})
    assert (feature.unit_singular, feature.unit_plural) == ("call", "calls")
    assert feature.reporting_unit == ReportingUnit(
        unit_singular="kcall", unit_plural="kcalls", conversion_rate=Decimal("0.001")
    )
    assert feature.alert_settings == AlertSettings(
        alert_enabled=True,
        info=AlertThreshold(threshold=Decimal(50)),
        warning=AlertThreshold(threshold=Decimal(80)),
        critical=AlertThreshold(threshold=Decimal("95.5"), condition=AlertCondition.ABOVE),
    )
    assert test_env.features.get(feature.id) == feature
    body = test_env.features.detail(feature.id).to_dict()
    assert body["meter"] == meter.to_dict() and "group" not in body
    assert body["reporting_unit"]["conversion_rate"] == "0.001"
    assert body["alert_settings"]["critical"] == {"threshold": "95.5", "condition": "above"}
    expanded = test_env.features.detail(feature.id, expand="groups").to_dict()
    assert expanded["group"]["id"] == group.id and expanded["group"]["entity_ids"] == [feature.id]

    flag = test_env.features.create(name="SSO", type="boolean")
    assert (flag.meter_id, flag.lookup_key, flag.reporting_unit, flag.alert_settings, flag.metadata) == (
        None,
        None,
        None,
        None,
        {},
    )
    assert "meter" not in test_env.features.detail(flag.id).to_dict()
    # integer conversion rates are accepted; the default is 1
    assert test_env.features.create(
        name="Seats",
        type="static",
        reporting_unit={"unit_singular": "s", "unit_plural": "ss", "conversion_rate": 60},
    ).reporting_unit == ReportingUnit(unit_singular="s", unit_plural="ss", conversion_rate=Decimal(60))
    assert test_env.features.create(
        name="Cfg", type="config", reporting_unit={"unit_singular": "s", "unit_plural": "ss"}
    ).reporting_unit == ReportingUnit(unit_singular="s", unit_plural="ss", conversion_rate=Decimal(1))


def test_inline_meter_is_created_in_the_same_unit_of_work(test_env: Scoped) -> None:
    feature = test_env.features.create(
        name="Tokens",
        type="metered",
        meter={**METER, "filters": [{"key": "model", "values": ["gpt"]}], "reset_usage": "NEVER"},
    )
    meter = test_env.meters.get(str(feature.meter_id))
    assert (meter.name, meter.event_name, meter.reset_usage.value, meter.filters) == (
        "Calls",
        "api_call",
        "NEVER",
        (MeterFilterValue(key="model", values=("gpt",)),),
    )
    # a failure after the meter was built leaves no meter behind
    test_env.features.create(name="A", type="boolean", lookup_key="taken")
    with pytest.raises(AlreadyExists):
        test_env.features.create(name="B", type="metered", lookup_key="taken", meter=METER)
    assert test_env.meters.list(status=None).total == 1


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"type": "usage"}, "type"),
        ({"name": ""}, "name"),
        ({}, "meter_id"),
        ({"meter_id": "meter_missing"}, "meter_id"),
        ({"meter": {**METER, "aggregation": {"type": "SUM"}}}, "meter.aggregation.field"),
        ({"meter": {**METER, "aggregation": {"type": "TOTAL"}}}, "meter.aggregation.type"),
        ({"meter": {**METER, "filters": [{"key": "a", "values": []}]}}, "meter.filters[0].values"),
        (
            {"meter": {**METER, "aggregation": {"type": "COUNT", "expression": "a"}}},
            "meter.aggregation.expression",
        ),
        ({"meter": {"name": "M"}}, "meter.event_name"),
        ({"type": "boolean", "meter": METER}, "meter"),
        ({"group_id": "group_missing", "meter": METER}, "group_id"),
        (
            {
                "reporting_unit": {"unit_singular": "a", "unit_plural": "b", "conversion_rate": "0"},
                "meter": METER,
            },
            "reporting_unit.conversion_rate",
        ),
        (
            {
                "reporting_unit": {"unit_singular": "a", "unit_plural": "b", "conversion_rate": 0.5},
                "meter": METER,
            },
            "reporting_unit.conversion_rate",
        ),
        ({"reporting_unit": {"unit_plural": "b"}, "meter": METER}, "reporting_unit.unit_singular"),
        ({"alert_settings": {"alert_enabled": True}, "meter": METER}, "alert_settings"),
        (
            {"alert_settings": {"info": {"threshold": "9"}, "warning": {"threshold": "5"}}, "meter": METER},
            "alert_settings.warning.threshold",
        ),
        (
            {
                "alert_settings": {
                    "info": {"threshold": "1", "condition": "below"},
                    "critical": {"threshold": "5"},
                },
                "meter": METER,
            },
            "alert_settings.critical.condition",
        ),
        (
            {"alert_settings": {"critical": {"threshold": "5", "condition": "equal"}}, "meter": METER},
            "alert_settings.critical.condition",
        ),
        (
            {"alert_settings": {"critical": {"threshold": "x"}}, "meter": METER},
            "alert_settings.critical.threshold",
        ),
        ({"metadata": {"k": ["v"]}, "meter": METER}, "metadata.k"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, patch: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.features.create(**{"name": "F", "type": "metered", **patch})
    assert caught.value.field == field
    assert test_env.features.list(status=None).total == 0
    assert test_env.meters.list(status=None).total == 0
    assert test_env.notifications.list().total == 0


def test_meter_and_group_references_must_be_live_and_fit(test_env: Scoped) -> None:
    meter = test_env.meters.create(**METER)
    price_group = test_env.groups.create(name="P", lookup_key="p", entity_type="price").group
    for fields, field in (
        ({"type": "metered", "meter_id": meter.id, "meter": METER}, "meter"),
        ({"type": "boolean", "meter_id": meter.id}, "meter_id"),
        ({"type": "boolean", "group_id": price_group.id}, "group_id"),
    ):
        with pytest.raises(ValidationError) as caught:
            test_env.features.create(name="F", **fields)
        assert caught.value.field == field
    test_env.meters.delete(meter.id)
    with pytest.raises(ValidationError) as caught:
        test_env.features.create(name="F", type="metered", meter_id=meter.id)
    assert caught.value.field == "meter_id"
    assert test_env.features.list(status=None).total == 0


def test_lookup_key_unique_among_live_features(test_env: Scoped, prod_env: Scoped) -> None:
    first = test_env.features.create(name="A", type="boolean", lookup_key="sso")
    with pytest.raises(AlreadyExists):
        test_env.features.create(name="B", type="boolean", lookup_key="sso")
    prod_env.features.create(name="A", type="boolean", lookup_key="sso")
    test_env.features.delete(first.id)
    assert test_env.features.create(name="C", type="boolean", lookup_key="sso").name == "C"


def test_update(test_env: Scoped, clock: TestClock) -> None:
    group = test_env.groups.create(name="G", lookup_key="g", entity_type="feature").group
    feature = test_env.features.create(
        name="Calls",
        type="metered",
        meter={**METER, "filters": [{"key": "m", "values": ["a"]}]},
        description="d",
        unit_singular="call",
        group_id=group.id,
    )
    clock.advance(minutes=1)
    updated = test_env.features.update(
        feature.id,
        name="API calls",
        description=None,
        metadata={"x": "y"},
        unit_plural="calls",
        reporting_unit={"unit_singular": "k", "unit_plural": "ks", "conversion_rate": "1000"},
        alert_settings={"alert_enabled": False, "critical": {"threshold": "10", "condition": "below"}},
        group_id="",
        filters=[{"key": "m", "values": ["b"]}, {"key": "r", "values": ["eu"]}],
    )
    assert (
        updated.name,
        updated.description,
        updated.metadata,
        updated.unit_singular,
        updated.unit_plural,
    ) == (
        "API calls",
        None,
        {"x": "y"},
        "call",
        "calls",
    )
    assert updated.group_id is None and updated.updated_at > feature.updated_at
    assert updated.reporting_unit is not None and updated.reporting_unit.conversion_rate == 1000
    assert updated.alert_settings == AlertSettings(
        critical=AlertThreshold(threshold=Decimal(10), condition=AlertCondition.BELOW)
    )
    assert test_env.meters.get(str(feature.meter_id)).filters == (
        MeterFilterValue(key="m", values=("a", "b")),
        MeterFilterValue(key="r", values=("eu",)),
    )
    assert test_env.features.get(feature.id) == updated
    assert test_env.features.update(feature.id, group_id=group.id).group_id == group.id
    # nothing sent, nothing changed
    assert test_env.features.update(feature.id) == test_env.features.get(feature.id)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": None}, "name"),
        ({"metadata": None}, "metadata"),
        ({"group_id": "group_missing"}, "group_id"),
        (
            {"reporting_unit": {"unit_singular": "a", "unit_plural": "b", "conversion_rate": "-1"}},
            "reporting_unit.conversion_rate",
        ),
        ({"alert_settings": {"alert_enabled": True}}, "alert_settings"),
        ({"filters": [{"key": "", "values": ["x"]}]}, "filters[0].key"),
    ],
)
def test_invalid_update_names_the_field_and_changes_nothing(
    test_env: Scoped, fields: dict[str, Any], field: str
) -> None:
    feature = test_env.features.create(name="Calls", type="metered", meter=METER)
    with pytest.raises(ValidationError) as caught:
        test_env.features.update(feature.id, **{"description": "new", **fields})
    assert caught.value.field == field
    assert test_env.features.get(feature.id) == feature
    assert test_env.meters.get(str(feature.meter_id)).filters == ()


def test_filters_need_a_metered_feature(test_env: Scoped) -> None:
    flag = test_env.features.create(name="SSO", type="boolean")
    with pytest.raises(ValidationError) as caught:
        test_env.features.update(flag.id, filters=[{"key": "a", "values": ["b"]}])
    assert caught.value.field == "filters"


def test_clone_copies_everything_but_name_and_lookup_key(test_env: Scoped) -> None:
    group = test_env.groups.create(name="G", lookup_key="g", entity_type="feature").group
    source = test_env.features.create(
        name="Calls",
        type="metered",
        lookup_key="calls",
        meter=METER,
        group_id=group.id,
        description="d",
        metadata={"a": "b"},
        unit_singular="call",
        unit_plural="calls",
        reporting_unit={"unit_singular": "k", "unit_plural": "ks", "conversion_rate": "1000"},
        alert_settings=ALERTS,
    )
    clone = test_env.features.clone(source.id, name="Calls v2", lookup_key="calls-v2")
    assert clone.id != source.id and clone.id.startswith("feat_")
    assert (clone.name, clone.lookup_key) == ("Calls v2", "calls-v2")
    same = (
        "type",
        "meter_id",
        "group_id",
        "description",
        "metadata",
        "unit_singular",
        "unit_plural",
        "reporting_unit",
        "alert_settings",
    )
    assert {k: getattr(clone, k) for k in same} == {k: getattr(source, k) for k in same}
    other = test_env.features.clone(
        source.id, name="Calls v3", lookup_key="v3", description=None, metadata={}
    )
    assert (other.description, other.metadata) == (None, {})
    assert test_env.meters.list().total == 1
    for fields, field in (
        ({"name": "Calls", "lookup_key": "x"}, "name"),
        ({"name": "X"}, "lookup_key"),
        ({"lookup_key": "x"}, "name"),
    ):
        with pytest.raises(ValidationError) as caught:
            test_env.features.clone(source.id, **fields)
        assert caught.value.field == field
    with pytest.raises(AlreadyExists):
        test_env.features.clone(source.id, name="Y", lookup_key="calls")
    assert test_env.features.list().total == 3


def test_list_search_and_expand(test_env: Scoped, clock: TestClock) -> None:
    group = test_env.groups.create(name="G", lookup_key="g", entity_type="feature").group
    a = test_env.features.create(
        name="API calls", type="metered", lookup_key="a", meter=METER, group_id=group.id
    )
    clock.advance(seconds=1)
    b = test_env.features.create(name="Seats", type="static", lookup_key="b")
    clock.advance(seconds=1)
    c = test_env.features.create(name="SSO", type="boolean", lookup_key="c")
    assert [f.id for f in test_env.features.list().items] == [c.id, b.id, a.id]
    assert [f.id for f in test_env.features.list(name_contains="s", order="asc").items] == [a.id, b.id, c.id]
    assert [f.id for f in test_env.features.list(name_contains="SEAT").items] == [b.id]
    assert [f.id for f in test_env.features.list(lookup_key="b").items] == [b.id]
    assert [f.id for f in test_env.features.list(lookup_keys=["a", "c"]).items] == [c.id, a.id]
    assert [f.id for f in test_env.features.list(feature_ids=[a.id, b.id]).items] == [b.id, a.id]
    assert [f.id for f in test_env.features.list(meter_ids=[a.meter_id]).items] == [a.id]

    plain = test_env.features.search(feature_ids=[a.id]).to_dict()["items"][0]
    assert "meter" not in plain and "group" not in plain
    rich = test_env.features.search(expand="meters,groups", order="asc").to_dict()["items"]
    assert rich[0]["meter"]["id"] == a.meter_id and rich[0]["group"]["id"] == group.id
    assert rich[0]["group"]["entity_ids"] == [a.id]
    assert (rich[1]["meter"], rich[1]["group"]) == (None, None)


def test_notifications_are_recorded_with_payload(test_env: Scoped, billing: Billing) -> None:
    delivered: list[Any] = []
    unsubscribe = billing.subscribe("feature.updated", delivered.append)
    f = test_env.features.create(name="SSO", type="boolean")
    test_env.features.update(f.id, name="Single sign-on")
    test_env.features.delete(f.id)
    unsubscribe()
    clone_source = test_env.features.create(name="X", type="boolean")
    clone = test_env.features.clone(clone_source.id, name="Y", lookup_key="y")
    events = test_env.notifications.list(entity_id=f.id).items
    assert [e.event_type for e in events] == ["feature.created", "feature.updated", "feature.deleted"]
    assert events[0].payload == {"event_type": "feature.created", "feature": f.to_dict()}
    assert events[1].payload["feature"]["name"] == "Single sign-on"
    assert events[2].payload["feature"]["status"] == "archived"
    assert [e.payload["feature"]["name"] for e in delivered] == ["Single sign-on"]
    assert [e.event_type for e in test_env.notifications.list(entity_id=clone.id).items] == [
        "feature.created"
    ]
    # a failed call records nothing
    with pytest.raises(ValidationError):
        test_env.features.update(clone.id, name="")
    assert test_env.notifications.list(entity_id=clone.id).total == 1


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped) -> None:
    feature = test_env.features.create(name="SSO", type="boolean")
    for call in (prod_env.features.get, prod_env.features.delete, prod_env.features.detail):
        with pytest.raises(NotFound):
            call(feature.id)
    with pytest.raises(NotFound):
        prod_env.features.update(feature.id, name="x")
    with pytest.raises(NotFound):
        prod_env.features.clone(feature.id, name="x", lookup_key="x")
    assert prod_env.features.list().total == 0
    # another environment's meter cannot be referenced
    meter = test_env.meters.create(**METER)
    with pytest.raises(ValidationError) as caught:
        prod_env.features.create(name="F", type="metered", meter_id=meter.id)
    assert caught.value.field == "meter_id"


def test_reader_reads_but_cannot_write(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    feature = test_env.features.create(name="SSO", type="boolean")
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.features.get(feature.id) == feature
    assert reader.features.list().total == 1
    for call in (
        lambda: reader.features.create(name="B", type="boolean"),
        lambda: reader.features.update(feature.id, name="x"),
        lambda: reader.features.delete(feature.id),
        lambda: reader.features.clone(feature.id, name="x", lookup_key="x"),
    ):
        with pytest.raises(PermissionDenied):
            call()
    assert test_env.features.get(feature.id) == feature


def test_a_feature_granted_by_a_live_entitlement_cannot_be_deleted(test_env: Scoped) -> None:
    feature = test_env.features.create(name="SSO", type="boolean")
    plan = test_env.plans.create(name="Enterprise", entitlements=[{"feature_id": feature.id}])
    with pytest.raises(InvalidOperation) as caught:
        test_env.features.delete(feature.id)
    assert caught.value.details["entitlement_id"] == plan.entitlements[0].id
    assert test_env.features.get(feature.id).status.value == "published"
    test_env.entitlements.delete(plan.entitlements[0].id)
    assert test_env.features.delete(feature.id).status.value == "archived"
