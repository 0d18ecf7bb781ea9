"""Event ingestion, lookup, queries and usage reports through the official SDK.

The SDK types event properties as strings (as the reference does); numeric strings aggregate.
"""

from __future__ import annotations

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code

DAY = {"start_time": "2026-04-30T00:00:00Z", "end_time": "2026-05-01T00:00:00Z"}


def test_ingest_and_look_up(sdk: Flexprice, env: Scoped) -> None:
    answer = sdk.events.ingest_event(
        event_name="llm.call",
        external_customer_id="cust-1",
        event_id="call-1",
        source="api",
        timestamp="2026-04-30T10:00:00Z",
        properties={"tokens": "120", "model": "m1"},
    )
    assert answer == {"message": "Event accepted for processing", "event_id": "call-1"}
    again = sdk.events.ingest_event(event_name="llm.call", external_customer_id="cust-1", event_id="call-1")
    assert again == answer  # stored once; the Billingkit-Duplicate header tells them apart
    generated = sdk.events.ingest_event(event_name="login", external_customer_id="cust-1")
    assert generated["event_id"].startswith("event_")

    batch = [
        {
            "event_id": f"call-{i}",
            "event_name": "llm.call",
            "external_customer_id": "cust-1",
            "timestamp": f"2026-04-30T1{i}:00:00Z",
            "properties": {"tokens": str(i * 10), "model": "m2" if i % 2 else "m1"},
        }
        for i in range(1, 6)
    ]
    bulk = sdk.events.ingest_events_bulk(events=batch)
    assert bulk == {
        "message": "Events accepted for processing",
        "accepted": "4",
        "duplicates": "1",  # call-1 was already stored
        "evaluate_alerts_immediately": "false",
    }
    assert [e.event_id for e in env.events.query(**DAY).events][:2] == ["call-5", "call-4"]

    found = known(sdk.events.get_event(id="call-1", external_customer_id="cust-1"))
    assert isinstance(found, models.GetEventByIDResponse)
    event = found.event
    assert (event.id, event.event_name, event.external_customer_id, event.source) == (
        "call-1",
        "llm.call",
        "cust-1",
        "api",
    )
    assert (event.timestamp, event.properties) == ("2026-04-30T10:00:00Z", {"tokens": "120", "model": "m1"})
    with pytest.raises(errors.FlexpriceError) as missing:
        sdk.events.get_event(id="nope", external_customer_id="cust-1")
    assert status_and_code(missing.value) == (404, "not_found")
    with pytest.raises(errors.FlexpriceError) as invalid:
        sdk.events.ingest_events_bulk(events=[{"event_name": "x", "external_customer_id": ""}])
    assert status_and_code(invalid.value) == (400, "validation_error")


def test_list_raw_events(sdk: Flexprice) -> None:
    sdk.events.ingest_events_bulk(
        events=[
            {
                "event_id": f"e{i}",
                "event_name": "api.request",
                "external_customer_id": "cust-1",
                "timestamp": f"2026-04-30T10:{i:02d}:00Z",
                "properties": {"region": "eu" if i % 2 else "us"},
            }
            for i in range(10)
        ]
    )
    page = known(
        sdk.events.list_raw_events(
            external_customer_id="cust-1", property_filters={"region": ["eu"]}, page_size=3, **DAY
        )
    )
    assert isinstance(page, models.GetEventsResponse)
    assert [e.id for e in page.events] == ["e9", "e7", "e5"]
    assert (page.has_more, page.total_count, page.offset) == (True, 5, 0)
    assert page.iter_last_key == page.iter_last_key.split("::")[0] + "::e5"
    rest = known(
        sdk.events.list_raw_events(
            external_customer_id="cust-1",
            property_filters={"region": ["eu"]},
            iter_last_key=page.iter_last_key,
            **DAY,
        )
    )
    assert ([e.id for e in rest.events], rest.has_more) == (["e3", "e1"], False)
    oldest = sdk.events.list_raw_events(event_name="api.request", order="asc", page_size=1, offset=2, **DAY)
    assert [e.id for e in oldest.events] == ["e2"] and oldest.offset == 2
    with pytest.raises(errors.FlexpriceError) as bad:
        sdk.events.list_raw_events(page_size=5000)
    assert status_and_code(bad.value) == (400, "validation_error")


def test_usage_reports(sdk: Flexprice, env: Scoped) -> None:
    sdk.events.ingest_events_bulk(
        events=[
            {
                "event_id": f"t{i}",
                "event_name": "llm.call",
                "external_customer_id": customer,
                "timestamp": f"2026-04-0{i + 1}T12:00:00Z",
                "properties": {"tokens": tokens},
            }
            for i, (customer, tokens) in enumerate([("ada", "0.1"), ("ada", "0.2"), ("bob", "5")])
        ]
    )
    april = {"start_time": "2026-04-01T00:00:00Z", "end_time": "2026-05-01T00:00:00Z"}
    report = known(
        sdk.events.get_usage_statistics(
            event_name="llm.call",
            aggregation_type="SUM",
            property_name="tokens",
            external_customer_id="ada",
            window_size="DAY",
            **april,
        )
    )
    assert isinstance(report, models.GetUsageResponse)
    assert (report.event_name, report.type, report.value) == ("llm.call", "SUM", pytest.approx(0.3))
    assert [(r.window_size, r.value) for r in report.results] == [
        ("2026-04-01T00:00:00Z", pytest.approx(0.1)),
        ("2026-04-02T00:00:00Z", pytest.approx(0.2)),
    ]
    counted = known(sdk.events.get_usage_statistics(event_name="llm.call", aggregation_type="COUNT", **april))
    assert (counted.type, counted.value) == ("COUNT", 3)

    meter = env.meters.create(
        name="Tokens", event_name="llm.call", aggregation={"type": "SUM", "field": "tokens"}
    )
    by_meter = known(sdk.events.get_usage_by_meter(meter_id=meter.id, external_customer_id="bob", **april))
    assert (by_meter.event_name, by_meter.type, by_meter.value) == ("llm.call", "SUM", 5)
    with pytest.raises(errors.FlexpriceError) as bad:
        sdk.events.get_usage_statistics(
            event_name="llm.call", aggregation_type="SUM", timezone="Asia/Kolkata", **april
        )
    assert status_and_code(bad.value) == (400, "validation_error")
