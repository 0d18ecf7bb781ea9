"""Usage event ingestion through the library, on every store."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, NotFound, PermissionDenied, Scoped, TestClock, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.usage import UsageEvent, property_number
from billingkit.services import events as events_service
from billingkit.services.access import BootstrapResult


def _batch(n: int, prefix: str = "e") -> list[dict[str, Any]]:
    return [
        {
            "event_id": f"{prefix}{i}",
            "event_name": "api.request",
            "external_customer_id": "cust-1",
            "timestamp": f"2026-05-01T10:00:{i:02d}Z",
            "properties": {"region": "eu", "bytes": "1.5"},
        }
        for i in range(n)
    ]


def test_the_same_batch_twice_is_stored_once(test_env: Scoped) -> None:
    test_env.meters.create(name="Requests", event_name="api.request", aggregation={"type": "COUNT"})
    first = test_env.events.ingest_bulk(_batch(10))
    assert first.accepted_ids == tuple(f"e{i}" for i in range(10)) and first.duplicate_ids == ()
    again = test_env.events.ingest_bulk(_batch(10))
    assert again.accepted_ids == () and again.duplicate_ids == tuple(f"e{i}" for i in range(10))
    assert again.to_dict()["accepted"] == "0" and again.to_dict()["duplicates"] == "10"
    stored = test_env.events.get("e3")
    assert (stored.event_name, stored.external_customer_id, stored.properties) == (
        "api.request",
        "cust-1",
        {"region": "eu", "bytes": "1.5"},
    )
    assert stored.timestamp == datetime(2026, 5, 1, 10, 0, 3, tzinfo=UTC)


def test_repeats_within_a_batch_keep_the_first(test_env: Scoped) -> None:
    batch = [*_batch(2), {**_batch(1)[0], "properties": {"region": "us"}}]
    result = test_env.events.ingest_bulk(batch)
    assert (result.accepted_ids, result.duplicate_ids) == (("e0", "e1"), ("e0",))
    assert test_env.events.get("e0").properties["region"] == "eu"


def test_an_invalid_event_at_index_7_writes_nothing(test_env: Scoped) -> None:
    batch = _batch(10)
    batch[7] = {**batch[7], "timestamp": "2026-05-01T10:00:00"}  # no time zone
    with pytest.raises(ValidationError) as caught:
        test_env.events.ingest_bulk(batch)
    assert caught.value.field == "events[7].timestamp"
    for i in (0, 6, 8):
        with pytest.raises(NotFound):
            test_env.events.get(f"e{i}")


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"event_name": None}, "event_name"),
        ({"event_name": ""}, "event_name"),
        ({"external_customer_id": 42}, "external_customer_id"),
        ({"timestamp": "yesterday"}, "timestamp"),
        ({"properties": ["a"]}, "properties"),
        ({"event_id": "x" * 256}, "event_id"),
        ({"source": 1}, "source"),
        ({"customer_id": "c" * 65}, "customer_id"),  # the column holds 64 (PostgreSQL enforces it)
    ],
)
def test_invalid_fields_are_named(test_env: Scoped, patch: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.events.ingest_bulk([_batch(1)[0], {**_batch(2)[1], **patch}])
    assert caught.value.field == f"events[1].{field}"
    with pytest.raises(NotFound):
        test_env.events.get("e0")


def test_defaults_empty_batch_and_cap(billing: Billing, test_env: Scoped, clock: TestClock) -> None:
    result = test_env.events.ingest(event_name="login", external_customer_id="c")
    (event_id,) = result.accepted_ids
    assert event_id.startswith("event_")
    stored = test_env.events.get(event_id)
    assert stored.timestamp == clock.now() and stored.properties == {}
    offset = test_env.events.ingest(
        event_name="login", external_customer_id="c", timestamp="2026-05-01T12:00:00+02:00", event_id="tz"
    )
    assert offset.accepted_ids == ("tz",)
    assert test_env.events.get("tz").timestamp == datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    assert test_env.events.ingest_bulk([]).to_dict()["accepted"] == "0"
    billing.max_bulk_events = 3
    with pytest.raises(ValidationError) as caught:
        test_env.events.ingest_bulk(_batch(4))
    assert caught.value.field == "events" and caught.value.details["max_events"] == 3


def test_unmatched_events_are_stored_and_rejected_with_a_reason(test_env: Scoped) -> None:
    test_env.meters.create(
        name="EU requests",
        event_name="api.request",
        aggregation={"type": "COUNT"},
        filters=[{"key": "region", "values": ["eu"]}],
    )
    events = [
        {
            "event_id": "ok",
            "event_name": "api.request",
            "external_customer_id": "c",
            "properties": {"region": "eu"},
        },
        {
            "event_id": "us",
            "event_name": "api.request",
            "external_customer_id": "c",
            "properties": {"region": "us"},
        },
        {"event_id": "other", "event_name": "unknown.thing", "external_customer_id": "c"},
    ]
    result = test_env.events.ingest_bulk(events)
    assert result.accepted_ids == ("ok", "us", "other")
    assert result.rejected == {"us": "no_matching_meter", "other": "no_meter_for_event_name"}
    rejected = test_env.notifications.list(event_type="event.rejected").items
    assert [(n.entity_id, n.payload["reason"]) for n in rejected] == [
        ("us", "no_matching_meter"),
        ("other", "no_meter_for_event_name"),
    ]
    assert test_env.events.get("us").properties == {"region": "us"}  # stored all the same
    # a duplicate is not rejected twice
    test_env.events.ingest_bulk(events)
    assert test_env.notifications.list(event_type="event.rejected").total == 2


def test_scopes_and_roles(
    billing: Billing, setup: BootstrapResult, test_env: Scoped, prod_env: Scoped
) -> None:
    test_env.events.ingest_bulk(_batch(1))
    with pytest.raises(NotFound):
        prod_env.events.get("e0")
    assert prod_env.events.ingest_bulk(_batch(1)).accepted_ids == ("e0",)  # another environment
    env_id = setup.environments[0][0].id
    ingestor = billing.scope(setup.tenant.id, env_id, actor=Actor("i", (Role.EVENT_INGESTOR,)))
    reader = billing.scope(setup.tenant.id, env_id, actor=Actor("r", (Role.EVENT_READER,)))
    assert ingestor.events.ingest_bulk(_batch(2)).accepted_ids == ("e1",)
    with pytest.raises(PermissionDenied):
        ingestor.events.get("e0")
    assert reader.events.get("e1").event_id == "e1"
    with pytest.raises(PermissionDenied):
        reader.events.ingest_bulk(_batch(1, "r"))


# -- input no database can store is a 400 naming the field, on every store ----------------------


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"properties": {"x": "a\x00b"}}, "properties.x"),
        ({"properties": {"region": "eu", "meta": {"tags": ["ok", "a\x00"]}}}, "properties.meta.tags[1]"),
        ({"properties": {"a\x00b": 1}}, "properties.a\\u0000b"),
        ({"event_name": "api\x00request"}, "event_name"),
        ({"external_customer_id": "\x00"}, "external_customer_id"),
        ({"event_id": "e\x001"}, "event_id"),
        ({"source": "s\x00"}, "source"),
        ({"customer_id": "\x00c"}, "customer_id"),
    ],
)
def test_nul_characters_are_refused_and_nothing_is_stored(
    test_env: Scoped, patch: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.events.ingest_bulk([_batch(1)[0], {**_batch(2)[1], **patch}])
    assert caught.value.field == f"events[1].{field}"
    assert caught.value.http_status == 400 and "NUL" in caught.value.message
    with pytest.raises(NotFound):
        test_env.events.get("e0")


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"properties": {"x": "\ud800"}}, "properties.x"),
        ({"properties": {"x": ["ok", {"y": "a\udfffb"}]}}, "properties.x[1].y"),
        ({"properties": {"\udc00": "v"}}, "properties.\\udc00"),
        ({"event_name": "api\ud800"}, "event_name"),
        ({"external_customer_id": "c\udbff"}, "external_customer_id"),
    ],
)
def test_lone_surrogates_are_refused(test_env: Scoped, patch: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.events.ingest_bulk([_batch(1)[0], {**_batch(2)[1], **patch}])
    assert caught.value.field == f"events[1].{field}"
    assert "surrogate" in caught.value.message
    with pytest.raises(NotFound):
        test_env.events.get("e0")
    # a proper pair (an emoji) is fine, and reads back as written
    test_env.events.ingest(
        event_id="ok", event_name="n", external_customer_id="c", properties={"e": "\U0001f600"}
    )
    assert test_env.events.get("ok").properties == {"e": "\U0001f600"}


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), float("-inf"), Decimal("NaN"), Decimal("sNaN"), Decimal("-Infinity")],
)
def test_non_finite_numbers_are_refused(test_env: Scoped, value: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.events.ingest_bulk([_batch(1)[0], {**_batch(2)[1], "properties": {"tokens": value}}])
    assert caught.value.field == "events[1].properties.tokens" and "finite" in caught.value.message
    with pytest.raises(ValidationError) as nested:
        test_env.events.ingest(_batch(1)[0], properties={"usage": {"values": [1, value]}})
    assert nested.value.field == "events[0].properties.usage.values[1]"
    with pytest.raises(NotFound):
        test_env.events.get("e0")


def test_decimal_properties_are_stored_as_their_exact_text(test_env: Scoped) -> None:
    properties = {
        "amount": Decimal("2.50"),
        "big": Decimal("1E+2"),
        "small": Decimal("1.5E-7"),
        "zero": Decimal("-0.0"),
        "negative": Decimal("-3.10"),
        "nested": {"values": [Decimal("0.10"), 1, 2.5, "x", True, None]},
        "plain": 3,
    }
    test_env.events.ingest(_batch(1)[0], properties=properties)
    assert test_env.events.get("e0").properties == {
        "amount": "2.50",
        "big": "100",
        "small": "0.00000015",
        "zero": "0.0",
        "negative": "-3.10",
        "nested": {"values": ["0.10", 1, 2.5, "x", True, None]},
        "plain": 3,
    }
    assert property_number(test_env.events.get("e0").properties["amount"]) == Decimal("2.50")
    # the caller's objects are not changed
    assert properties["amount"] == Decimal("2.50") and properties["nested"]["values"][0] == Decimal("0.10")


def test_parsed_events_are_the_events_the_constructor_builds(billing: Billing, clock: TestClock) -> None:
    # parse_event fills UsageEvent's slots itself (no second validation): it must stay in step
    assert events_service._FAST_EVENT, "UsageEvent's fields changed: update services/events.py"
    ctx = billing.context("t", "e", Actor.system())
    raw = {
        "event_id": "e1",
        "event_name": "api.request",
        "external_customer_id": "cust-1",
        "timestamp": "2026-05-01T12:00:00.250+02:00",
        "properties": {"n": 1, "d": Decimal("1.50"), "nested": {"l": [1, "x"]}},
        "source": "s",
        "customer_id": "cus_1",
    }
    parsed = events_service.parse_event(raw, ctx)
    assert parsed == UsageEvent(
        event_id="e1",
        event_name="api.request",
        external_customer_id="cust-1",
        timestamp=datetime(2026, 5, 1, 10, 0, 0, 250000, tzinfo=UTC),
        properties={"n": 1, "d": "1.50", "nested": {"l": [1, "x"]}},
        customer_id="cus_1",
        source="s",
    )
    assert parsed.timestamp.tzinfo is UTC
    defaulted = events_service.parse_event({"event_name": "n", "external_customer_id": "c"}, ctx)
    assert defaulted.timestamp == clock.now() and defaulted.event_id.startswith("event_")
    assert (defaulted.properties, defaulted.source, defaulted.customer_id) == ({}, None, None)
    with pytest.raises(ValidationError) as caught:
        events_service.parse_event({**raw, "timestamp": "0001-01-01T00:00:00+01:00"}, ctx, "events[4].")
    assert caught.value.field == "events[4].timestamp"
    with pytest.raises(ValidationError) as deep:
        nested: dict[str, Any] = {}
        for _ in range(5000):
            nested = {"n": nested}
        events_service.parse_event({**raw, "properties": nested}, ctx)
    assert deep.value.field == "properties"


def test_texts_as_long_as_their_columns_are_stored(test_env: Scoped) -> None:
    # matched by a meter: an event.rejected notification cannot hold an id over 64 characters yet
    test_env.meters.create(name="Long", event_name="n" * 255, aggregation={"type": "COUNT"})
    event = {
        **_batch(1)[0],
        "event_id": "i" * 255,
        "event_name": "n" * 255,
        "external_customer_id": "x" * 255,
        "source": "s" * 255,
        "customer_id": "c" * 64,
    }
    assert test_env.events.ingest_bulk([event]).accepted_ids == ("i" * 255,)
    stored = test_env.events.get("i" * 255)
    assert (stored.event_name, stored.customer_id, stored.source) == ("n" * 255, "c" * 64, "s" * 255)


def test_decimal_properties_are_summed_exactly_by_usage(test_env: Scoped) -> None:
    values = [Decimal("2.50"), Decimal("1E+2"), Decimal("0.1"), Decimal("-0.0"), Decimal("1E-20")]
    test_env.events.ingest_bulk(
        [
            {**_batch(1)[0], "event_id": f"d{i}", "properties": {"amount": value}}
            for i, value in enumerate(values)
        ]
    )
    report = test_env.usage.report(
        event_name="api.request",
        aggregation_type="SUM",
        property_name="amount",
        external_customer_id="cust-1",
        start_time="2026-05-01T00:00:00Z",
        end_time="2026-05-02T00:00:00Z",
    )
    assert report.result.value == Decimal("102.60000000000000000001")


def test_a_rejected_event_with_a_long_id_is_recorded(test_env: Scoped) -> None:
    # event ids may be 255 characters; event.rejected stores the id as its entity id
    long_id = "e" * 255
    result = test_env.events.ingest(
        event_id=long_id, event_name="nothing.meters.this", external_customer_id="c"
    )
    assert result.rejected == {long_id: "no_meter_for_event_name"}
    (note,) = [n for n in test_env.notifications.list().items if n.event_type == "event.rejected"]
    assert note.entity_id == long_id


def test_the_alerts_flag_is_recorded_and_checked(test_env: Scoped) -> None:
    result = test_env.events.ingest_bulk(_batch(1), evaluate_alerts_immediately=True)
    assert result.evaluate_alerts_immediately and result.to_dict()["evaluate_alerts_immediately"] == "true"
    assert test_env.events.ingest_bulk(_batch(1, "f")).to_dict()["evaluate_alerts_immediately"] == "false"
    with pytest.raises(ValidationError) as caught:
        test_env.events.ingest_bulk(_batch(1, "g"), evaluate_alerts_immediately="yes")  # type: ignore[arg-type]
    assert caught.value.field == "evaluate_alerts_immediately"
