"""Meters through the library, on every store."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit import (
    Billing,
    InvalidOperation,
    NotFound,
    PermissionDenied,
    Scoped,
    TestClock,
    ValidationError,
)
from billingkit.domain.access import Actor, Role
from billingkit.domain.catalog import MeterFilterValue
from billingkit.domain.usage import AggregationType, BucketSize
from billingkit.services.access import BootstrapResult
from tests.services.test_groups import stored_price

TOKENS: dict[str, Any] = {
    "name": "Tokens",
    "event_name": "llm_call",
    "aggregation": {"type": "SUM", "field": "tokens", "bucket_size": "HOUR"},
    "filters": [{"key": "model", "values": ["gpt", "o1", "gpt"]}],
}


def test_create_read_every_field(test_env: Scoped) -> None:
    meter = test_env.meters.create(**TOKENS)
    assert meter.id.startswith("meter_")
    assert (meter.name, meter.event_name, meter.reset_usage.value) == ("Tokens", "llm_call", "BILLING_PERIOD")
    agg = meter.aggregation
    assert (agg.type, agg.field, agg.bucket_size, agg.multiplier, agg.group_by, agg.expression) == (
        AggregationType.SUM,
        "tokens",
        BucketSize.HOUR,
        None,
        None,
        None,
    )
    assert meter.filters == (MeterFilterValue(key="model", values=("gpt", "o1")),)
    assert test_env.meters.get(meter.id) == meter
    spec = meter.to_spec()
    assert (spec.aggregation, spec.field, spec.filters[0].values) == (
        AggregationType.SUM,
        "tokens",
        ("gpt", "o1"),
    )

    scaled = test_env.meters.create(
        name="Scaled",
        event_name="llm_call",
        aggregation={"type": "SUM_WITH_MULTIPLIER", "field": "ms", "multiplier": "0.001"},
        reset_usage="NEVER",
    )
    assert scaled.aggregation.multiplier == Decimal("0.001") and scaled.reset_usage.value == "NEVER"
    assert scaled.to_dict()["aggregation"]["multiplier"] == "0.001"
    # reference clients send "" for unset aggregation fields
    count = test_env.meters.create(
        name="Calls", event_name="api", aggregation={"type": "COUNT", "field": "", "bucket_size": ""}
    )
    assert (count.aggregation.field, count.aggregation.bucket_size, count.filters) == (None, None, ())
    peak = test_env.meters.create(
        name="Peak",
        event_name="gpu",
        aggregation={"type": "MAX", "field": "n", "bucket_size": "15MIN", "group_by": "host"},
    )
    assert (peak.aggregation.group_by, peak.aggregation.bucket_size) == ("host", BucketSize.FIFTEEN_MINUTES)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"aggregation": {"type": "MEDIAN", "field": "x"}}, "aggregation.type"),
        ({"aggregation": {"type": "SUM"}}, "aggregation.field"),
        ({"aggregation": {"type": "SUM", "field": "x", "bucket_size": "YEAR"}}, "aggregation.bucket_size"),
        ({"aggregation": {"type": "AVG", "field": "x", "bucket_size": "DAY"}}, "aggregation.bucket_size"),
        ({"aggregation": {"type": "SUM_WITH_MULTIPLIER", "field": "x"}}, "aggregation.multiplier"),
        (
            {"aggregation": {"type": "SUM_WITH_MULTIPLIER", "field": "x", "multiplier": "0"}},
            "aggregation.multiplier",
        ),
        ({"aggregation": {"type": "SUM", "field": "x", "multiplier": "2"}}, "aggregation.multiplier"),
        ({"aggregation": {"type": "SUM", "field": "x", "multiplier": 1.5}}, "aggregation.multiplier"),
        ({"aggregation": {"type": "SUM", "field": "x", "group_by": "h"}}, "aggregation.group_by"),
        ({"aggregation": {"type": "SUM", "field": "x", "expression": "a*b"}}, "aggregation.expression"),
        ({"filters": [{"key": "a", "values": ["1"]}, {"key": "a", "values": ["2"]}]}, "filters"),
        ({"filters": [{"key": "", "values": ["1"]}]}, "filters[0].key"),
        ({"filters": [{"key": "a", "values": []}]}, "filters[0].values"),
        ({"reset_usage": "MONTHLY"}, "reset_usage"),
        ({"event_name": ""}, "event_name"),
        ({"name": None}, "name"),
    ],
)
def test_invalid_input_names_the_field_and_writes_nothing(
    test_env: Scoped, patch: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.meters.create(**{**TOKENS, **patch})
    assert caught.value.field == field
    assert test_env.meters.list(status=None).total == 0


def test_update_renames_and_only_adds_filters(test_env: Scoped, clock: TestClock) -> None:
    meter = test_env.meters.create(**TOKENS)
    clock.advance(minutes=1)
    updated = test_env.meters.update(
        meter.id,
        name="LLM tokens",
        filters=[{"key": "model", "values": ["o3", "gpt"]}, {"key": "region", "values": ["eu"]}],
    )
    assert updated.name == "LLM tokens" and updated.updated_at > meter.updated_at
    assert updated.filters == (
        MeterFilterValue(key="model", values=("gpt", "o1", "o3")),
        MeterFilterValue(key="region", values=("eu",)),
    )
    # sending fewer filters never removes any
    again = test_env.meters.update(meter.id, filters=[{"key": "region", "values": ["eu"]}])
    assert again == updated and test_env.meters.get(meter.id).filters == updated.filters
    # the unchangeable fields may be repeated with their current values
    same = test_env.meters.update(
        meter.id, event_name="llm_call", aggregation=TOKENS["aggregation"], reset_usage="BILLING_PERIOD"
    )
    assert same == updated


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"event_name": "other"}, "event_name"),
        ({"aggregation": {"type": "MAX", "field": "tokens", "bucket_size": "HOUR"}}, "aggregation"),
        ({"aggregation": {"type": "SUM", "field": "tokens"}}, "aggregation"),
        ({"reset_usage": "NEVER"}, "reset_usage"),
        ({"name": None}, "name"),
        ({"filters": [{"key": "x", "values": []}]}, "filters[0].values"),
    ],
)
def test_update_refuses_changes_that_alter_billed_usage(
    test_env: Scoped, fields: dict[str, Any], field: str
) -> None:
    meter = test_env.meters.create(**TOKENS)
    with pytest.raises(ValidationError) as caught:
        test_env.meters.update(meter.id, **{"name": "Renamed", **fields})
    assert caught.value.field == field
    assert test_env.meters.get(meter.id) == meter


def test_delete_refused_while_a_live_feature_or_price_uses_the_meter(test_env: Scoped) -> None:
    meter = test_env.meters.create(**TOKENS)
    feature = test_env.features.create(name="Tokens", type="metered", meter_id=meter.id)
    with pytest.raises(InvalidOperation) as caught:
        test_env.meters.delete(meter.id)
    assert caught.value.details == {"feature_id": feature.id}
    test_env.features.delete(feature.id)
    price = stored_price(test_env, meter_id=meter.id)
    with pytest.raises(InvalidOperation) as caught:
        test_env.meters.delete(meter.id)
    assert caught.value.details == {"price_id": price.id}
    assert test_env.meters.get(meter.id) == meter
    with test_env.billing.storage.unit_of_work(test_env.tenant_id, test_env.environment_id) as uow:
        uow.prices.update(price.model_copy(update={"status": "archived"}))
        uow.commit()
    assert test_env.meters.delete(meter.id).status.value == "archived"
    with pytest.raises(NotFound):
        test_env.meters.get(meter.id)
    with pytest.raises(NotFound):
        test_env.meters.update(meter.id, name="x")
    assert test_env.meters.list().total == 0 and test_env.meters.list(status="archived").total == 1


def test_list_search_and_list_for_event(test_env: Scoped, clock: TestClock) -> None:
    a = test_env.meters.create(**TOKENS)
    clock.advance(seconds=1)
    b = test_env.meters.create(name="Calls", event_name="llm_call", aggregation={"type": "COUNT"})
    clock.advance(seconds=1)
    c = test_env.meters.create(name="Other", event_name="api", aggregation={"type": "COUNT"})
    assert [m.id for m in test_env.meters.list().items] == [c.id, b.id, a.id]
    assert [m.id for m in test_env.meters.list(event_name="llm_call", order="asc").items] == [a.id, b.id]
    assert [
        m.id
        for m in test_env.meters.search(
            meter_ids=[a.id, c.id], sort=[{"field": "name", "direction": "asc"}]
        ).items
    ] == [
        c.id,
        a.id,
    ]
    assert test_env.meters.list_for_event("llm_call") == [a, b]
    assert test_env.meters.list_for_event("nothing") == []
    test_env.meters.delete(a.id)
    assert test_env.meters.list_for_event("llm_call") == [b]


def test_other_environment_cannot_see(test_env: Scoped, prod_env: Scoped) -> None:
    meter = test_env.meters.create(**TOKENS)
    for call in (prod_env.meters.get, prod_env.meters.delete):
        with pytest.raises(NotFound):
            call(meter.id)
    with pytest.raises(NotFound):
        prod_env.meters.update(meter.id, name="x")
    assert prod_env.meters.list().total == 0 and prod_env.meters.list_for_event("llm_call") == []


def test_reader_reads_but_cannot_write(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    meter = test_env.meters.create(**TOKENS)
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("u", (Role.ALL_READER,)))
    assert reader.meters.get(meter.id) == meter
    assert reader.meters.list_for_event("llm_call") == [meter]
    for call in (
        lambda: reader.meters.create(**TOKENS),
        lambda: reader.meters.update(meter.id, name="x"),
        lambda: reader.meters.delete(meter.id),
    ):
        with pytest.raises(PermissionDenied):
            call()
    assert test_env.meters.get(meter.id) == meter
