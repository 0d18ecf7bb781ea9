"""Usage event ingestion through the library, on every store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from billingkit import Billing, NotFound, PermissionDenied, Scoped, TestClock, ValidationError
from billingkit.domain.access import Actor, Role
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
    assert again.to_dict()["accepted"] == 0 and again.to_dict()["duplicates"] == 10
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
    assert test_env.events.ingest_bulk([]).to_dict()["accepted"] == 0
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
    assert [(n.entity_id, n.payload["event"]["reason"]) for n in rejected] == [
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
