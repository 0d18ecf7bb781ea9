"""Usage reports and batch aggregation through the library, on every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, NotFound, PermissionDenied, Scoped, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.usage import AggregationType, MeterSpec, UsageQuery
from billingkit.services.access import BootstrapResult

D = Decimal
MAY = datetime(2026, 5, 1, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)


def _ingest(scoped: Scoped) -> None:
    # acme: tokens 0.1 + 0.2 + 5 in May (eu, eu, us), 100 in June; globex: 7 in May.
    rows: list[tuple[str, str, str, Any, str]] = [
        ("e1", "acme", "2026-04-03T10:00:00Z", 0.1, "eu"),
        ("e2", "acme", "2026-04-03T11:30:00Z", "0.2", "eu"),
        ("e3", "acme", "2026-04-04T10:00:00Z", 5, "us"),
        ("e4", "acme", "2026-05-02T00:00:00Z", 100, "eu"),
        ("e5", "globex", "2026-04-05T00:00:00Z", 7, "eu"),
    ]
    scoped.events.ingest_bulk(
        [
            {
                "event_id": event_id,
                "event_name": "llm.call",
                "external_customer_id": customer,
                "timestamp": ts,
                "properties": {"tokens": tokens, "region": region},
            }
            for event_id, customer, ts, tokens, region in rows
        ]
    )


APRIL = {"start_time": "2026-04-01T00:00:00Z", "end_time": "2026-05-01T00:00:00Z"}


def test_sum_for_a_customer_is_exact(test_env: Scoped) -> None:
    _ingest(test_env)
    report = test_env.usage.report(
        event_name="llm.call",
        aggregation_type="SUM",
        property_name="tokens",
        external_customer_id="acme",
        **APRIL,
    )
    assert report.result.value == D("5.3") and report.result.event_count == 3  # 0.1 + 0.2 + 5
    body = report.to_dict()
    assert body["value"] == "5.3" and body["type"] == "SUM" and body["event_name"] == "llm.call"
    assert body["results"] == [] and body["groups"] == []


def test_every_customer_filters_groups_and_windows(test_env: Scoped) -> None:
    _ingest(test_env)
    everyone = test_env.usage.report(event_name="llm.call", aggregation_type="COUNT", **APRIL)
    assert everyone.result.value == 4  # e1, e2, e3, e5 (e4 is in May)
    eu = test_env.usage.report(
        event_name="llm.call",
        aggregation_type="SUM",
        property_name="tokens",
        filters={"region": ["eu"]},
        **APRIL,
    )
    assert eu.result.value == D("7.3")  # 0.1 + 0.2 + 7
    grouped = test_env.usage.report(
        event_name="llm.call",
        aggregation_type="MAX",
        property_name="tokens",
        group_by=["properties.region"],
        **APRIL,
    ).to_dict()
    assert grouped["value"] == "7"
    assert grouped["groups"] == [
        {"group": "eu", "value": "7", "event_count": 3},
        {"group": "us", "value": "5", "event_count": 1},
    ]
    report = test_env.usage.report(
        event_name="llm.call",
        aggregation_type="SUM",
        property_name="tokens",
        external_customer_id="acme",
        window_size="DAY",
        **APRIL,
    )
    daily = report.to_dict()
    assert [(r["window_size"], r["value"]) for r in daily["results"]] == [
        ("2026-04-03T00:00:00Z", "0.3"),
        ("2026-04-04T00:00:00Z", "5"),
    ]
    assert daily["value"] == "5.3"
    # The library names the instant what it is; the wire keeps the reference's window_size.
    assert [(w.window_start, w.window_end, w.value) for w in report.results] == [
        (datetime(2026, 4, 3, tzinfo=UTC), datetime(2026, 4, 4, tzinfo=UTC), Decimal("0.3")),
        (datetime(2026, 4, 4, tzinfo=UTC), datetime(2026, 4, 5, tzinfo=UTC), Decimal(5)),
    ]
    assert (report.value, report.event_count) == (Decimal("5.3"), daily["event_count"])
    assert [r["window_end"] for r in daily["results"]] == ["2026-04-04T00:00:00Z", "2026-04-05T00:00:00Z"]


def test_the_default_window_is_the_last_seven_days(test_env: Scoped) -> None:
    _ingest(test_env)  # the test clock reads 2026-05-01 09:30 UTC
    report = test_env.usage.report(event_name="llm.call", aggregation_type="COUNT")
    assert report.result.value == 0  # everything is older than 7 days, or in the future
    test_env.events.ingest(
        event_name="llm.call",
        external_customer_id="acme",
        timestamp="2026-04-30T09:30:00Z",
        event_id="recent",
    )
    assert test_env.usage.report(event_name="llm.call", aggregation_type="COUNT").result.value == 1


def test_usage_by_meter_uses_the_meter_and_narrows_with_filters(test_env: Scoped) -> None:
    _ingest(test_env)
    meter = test_env.meters.create(
        name="Tokens", event_name="llm.call", aggregation={"type": "SUM", "field": "tokens"}
    )
    report = test_env.usage.for_meter(meter.id, external_customer_id="acme", **APRIL)
    assert report.result.value == D("5.3") and report.to_dict()["meter_id"] == meter.id
    narrowed = test_env.usage.for_meter(
        meter.id, external_customer_id="acme", filters={"region": ["us"]}, **APRIL
    )
    assert narrowed.result.value == 5
    customer = test_env.customers.create(external_id="globex", name="Globex")
    by_id = test_env.usage.for_meter(meter.id, customer_id=customer.id, **APRIL)
    assert by_id.result.value == 7
    with pytest.raises(NotFound):
        test_env.usage.for_meter("meter_missing", **APRIL)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"aggregation_type": "SUM"}, "property_name"),
        ({"aggregation_type": "NOPE"}, "aggregation_type"),
        ({"aggregation_type": "COUNT", "window_size": "DAY"}, "window_size"),
        ({"aggregation_type": "SUM", "property_name": "t", "window_size": "YEAR"}, "window_size"),
        (
            {"aggregation_type": "SUM", "property_name": "t", "window_size": "DAY", "bucket_size": "HOUR"},
            "bucket_size",
        ),
        ({"aggregation_type": "COUNT", "start_time": "2026-04-01T00:00:00"}, "start_time"),
        ({"aggregation_type": "COUNT", **{**APRIL, "end_time": "2026-03-01T00:00:00Z"}}, "end_time"),
        ({"aggregation_type": "COUNT", "timezone": "Asia/Kolkata"}, "timezone"),
        ({"aggregation_type": "COUNT", "billing_anchor": "2026-04-05T00:00:00Z"}, "billing_anchor"),
        ({"aggregation_type": "COUNT", "group_by": ["source"]}, "group_by"),
        ({"aggregation_type": "SUM_WITH_MULTIPLIER", "property_name": "t"}, "multiplier"),
        ({"aggregation_type": "SUM_WITH_MULTIPLIER", "property_name": "t", "multiplier": 1.5}, "multiplier"),
        ({"aggregation_type": "COUNT", "customer_id": "cust_missing"}, "customer_id"),
        ({"aggregation_type": "COUNT", "filters": {"region": []}}, "filters.region"),
    ],
)
def test_bad_requests_name_the_field(test_env: Scoped, fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.usage.report(event_name="llm.call", **fields)
    assert caught.value.field == field


def test_batch_aggregation_answers_many_questions(test_env: Scoped) -> None:
    _ingest(test_env)
    tokens = MeterSpec("llm.call", AggregationType.SUM, "tokens")
    calls = MeterSpec("llm.call", AggregationType.COUNT)
    april, may = (datetime(2026, 4, 1, tzinfo=UTC), MAY), (MAY, JUNE)
    queries = [
        UsageQuery(tokens, *april, frozenset({"acme"})),
        UsageQuery(tokens, *may, frozenset({"acme"})),
        UsageQuery(calls, *april, frozenset({"acme", "globex"})),
        UsageQuery(tokens, *april, frozenset({"nobody"})),
        UsageQuery(calls, april[0], april[0] + timedelta(days=2, hours=11), None),  # e1 only
    ]
    values = [r.value for r in test_env.usage.aggregate(queries)]
    assert values == [D("5.3"), D(100), D(4), D(0), D(1)]


def test_reading_usage_needs_event_read(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    _ingest(test_env)
    env_id = test_env.environment_id
    assert env_id is not None
    ingestor = billing.scope(setup.tenant.id, env_id, actor=Actor("i", (Role.EVENT_INGESTOR,)))
    reader = billing.scope(setup.tenant.id, env_id, actor=Actor("r", (Role.EVENT_READER,)))
    with pytest.raises(PermissionDenied):
        ingestor.usage.report(event_name="llm.call", aggregation_type="COUNT", **APRIL)
    with pytest.raises(PermissionDenied):
        ingestor.usage.aggregate([UsageQuery(MeterSpec("llm.call", AggregationType.COUNT), MAY, JUNE)])
    assert reader.usage.report(event_name="llm.call", aggregation_type="COUNT", **APRIL).result.value == 4


def test_usage_of_another_environment_is_invisible(test_env: Scoped, prod_env: Scoped) -> None:
    _ingest(test_env)
    assert prod_env.usage.report(event_name="llm.call", aggregation_type="COUNT", **APRIL).result.value == 0
