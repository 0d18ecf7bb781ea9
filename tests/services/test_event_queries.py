"""Event queries through the library, on every store: defaults, validation, permissions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from billingkit import Billing, PermissionDenied, Scoped, TestClock, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.event_queries import EventPage, format_key
from billingkit.services.access import BootstrapResult
from billingkit.services.event_queries import event_page_to_dict, parse_property_filters

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)  # the clock fixture's start


def _event(event_id: str, at: datetime, **fields: Any) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "event_name": "api.request",
        "external_customer_id": "cust-1",
        "timestamp": at.isoformat(),
        **fields,
    }


def _ids(page: EventPage) -> list[str]:
    return [e.event_id for e in page.events]


def test_defaults_are_the_last_7_days_newest_first(test_env: Scoped, clock: TestClock) -> None:
    test_env.events.ingest_bulk(
        [
            _event("too-old", NOW - timedelta(days=7, seconds=1)),
            _event("oldest", NOW - timedelta(days=7)),
            _event("recent", NOW - timedelta(hours=1)),
            _event("latest", NOW - timedelta(microseconds=1)),
            _event("at-now", NOW),  # the window ends at now, exclusive
            _event("future", NOW + timedelta(hours=1)),
        ]
    )
    page = test_env.events.query()
    assert _ids(page) == ["latest", "recent", "oldest"]
    assert (page.has_more, page.total_count) == (False, 3)
    clock.advance(hours=2)
    assert _ids(test_env.events.query()) == ["future", "at-now", "latest", "recent"]
    # an explicit end moves the default start with it
    assert _ids(test_env.events.query(end_time=NOW - timedelta(days=6))) == ["oldest", "too-old"]
    # the window can be given as ISO text or aware datetimes, in any zone
    assert _ids(test_env.events.query(start_time="2026-05-01T10:30:00+02:00", end_time=NOW)) == [
        "latest",
        "recent",
    ]


def test_filters_sort_and_paging(test_env: Scoped) -> None:
    at = NOW - timedelta(hours=1)
    test_env.events.ingest_bulk(
        [
            _event("a", at, properties={"region": "eu", "tier": 2}, source="api"),
            _event("b", at, event_name="login", properties={"region": "us", "tier": 2.5}),
            _event("c", at + timedelta(seconds=1), properties={"region": "eu", "tier": True}),
            _event(
                "d", at + timedelta(seconds=2), external_customer_id="cust-2", properties={"region": "eu"}
            ),
        ]
    )
    q = test_env.events.query
    assert _ids(q()) == ["d", "c", "b", "a"]
    assert _ids(q(order="asc")) == ["a", "b", "c", "d"]
    assert _ids(q(sort="event_name", order="asc")) == ["a", "c", "d", "b"]
    assert _ids(q(external_customer_id="cust-2")) == ["d"]
    assert _ids(q(event_name="login")) == ["b"]
    assert _ids(q(event_id="c")) == ["c"]
    assert _ids(q(source="api")) == ["a"]
    assert _ids(q(external_customer_id="")) == ["d", "c", "b", "a"]  # empty means not given
    assert _ids(q(property_filters={"region": ["eu"], "tier": ["2", "true"]})) == ["c", "a"]
    assert _ids(q(property_filters="region:eu;tier:2,true")) == ["c", "a"]
    assert _ids(q(property_filters={"tier": ["2.5"]})) == ["b"]
    page = q(page_size=2, offset=1)
    assert (_ids(page), page.has_more, page.total_count) == (["c", "b"], True, 4)
    after = q(page_size=2, iter_last_key=format_key(page.events[-1]))
    assert (_ids(after), after.has_more, after.total_count) == (["a"], False, 4)
    newer = q(page_size=2, iter_first_key=format_key(page.events[-1]))
    assert (_ids(newer), newer.has_more) == (["d", "c"], False)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"page_size": 0}, "page_size"),
        ({"page_size": 1001}, "page_size"),
        ({"page_size": True}, "page_size"),
        ({"page_size": "10"}, "page_size"),
        ({"offset": -1}, "offset"),
        ({"offset": 1.5}, "offset"),
        ({"sort": "name"}, "sort"),
        ({"order": "DESC"}, "order"),
        ({"start_time": "yesterday"}, "start_time"),
        ({"start_time": "2026-04-30T00:00:00"}, "start_time"),  # no time zone
        ({"end_time": datetime(2026, 4, 30)}, "end_time"),  # naive
        ({"end_time": 1714521600}, "end_time"),
        ({"start_time": "2026-04-30T00:00:00Z", "end_time": "2026-04-29T00:00:00Z"}, "end_time"),
        ({"start_time": "2026-06-01T00:00:00Z"}, "start_time"),  # after the default end (now)
        ({"external_customer_id": 5}, "external_customer_id"),
        ({"event_name": "a\x00b"}, "event_name"),
        ({"source": ["api"]}, "source"),
        ({"property_filters": ["region"]}, "property_filters"),
        ({"property_filters": {"region": "eu"}}, "property_filters.region"),
        ({"property_filters": {"region": []}}, "property_filters.region"),
        ({"property_filters": {"region": [1]}}, "property_filters.region"),
        ({"property_filters": {'a"b': ["x"]}}, 'property_filters.a"b'),
        ({"property_filters": "region"}, "property_filters"),
        ({"property_filters": "region:eu,"}, "property_filters.region"),
        ({"property_filters": "region:eu;region:us"}, "property_filters.region"),
        ({"iter_first_key": "nope"}, "iter_first_key"),
        ({"iter_last_key": "12::"}, "iter_last_key"),
        ({"iter_last_key": "99999999999999999999::e1"}, "iter_last_key"),
        ({"iter_last_key": "1::e\x00"}, "iter_last_key"),
        ({"iter_first_key": "1::a", "iter_last_key": "1::b"}, "iter_first_key"),
        ({"iter_last_key": "1::a", "sort": "event_name"}, "iter_last_key"),
    ],
)
def test_bad_input_names_the_wire_field(test_env: Scoped, fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        test_env.events.query(**fields)
    assert caught.value.field == field and caught.value.http_status == 400
    assert caught.value.to_dict()["details"]["field"] == field


def test_page_sizes_at_the_bounds(test_env: Scoped) -> None:
    events = [_event(f"e{n:04d}", NOW - timedelta(seconds=n + 1)) for n in range(1001)]
    test_env.events.ingest_bulk(events[:1000])
    test_env.events.ingest_bulk(events[1000:])
    assert len(test_env.events.query(page_size=1).events) == 1
    full = test_env.events.query(page_size=1000)
    assert (len(full.events), full.has_more, full.total_count) == (1000, True, 1001)
    assert len(test_env.events.query().events) == 50


def test_reading_needs_event_read(billing: Billing, setup: BootstrapResult, test_env: Scoped) -> None:
    test_env.events.ingest(_event("e1", NOW - timedelta(minutes=1)))
    env_id = setup.environments[0][0].id
    ingestor = billing.scope(setup.tenant.id, env_id, actor=Actor("i", (Role.EVENT_INGESTOR,)))
    reader = billing.scope(setup.tenant.id, env_id, actor=Actor("r", (Role.EVENT_READER,)))
    with pytest.raises(PermissionDenied):
        ingestor.events.query()
    with pytest.raises(PermissionDenied):  # permissions are checked before the input
        ingestor.events.query(page_size=0)
    assert _ids(reader.events.query()) == ["e1"]


def test_other_environments_see_nothing(test_env: Scoped, prod_env: Scoped) -> None:
    test_env.events.ingest(_event("e1", NOW - timedelta(minutes=1)))
    assert prod_env.events.query() == EventPage((), False, 0)


def test_page_dict_echoes_the_request_keys_when_empty(test_env: Scoped) -> None:
    test_env.events.ingest_bulk(
        [_event("e1", NOW - timedelta(minutes=2)), _event("e2", NOW - timedelta(minutes=1))]
    )
    page = test_env.events.query(order="asc")
    body = event_page_to_dict(page, "env_1", offset=0)
    assert [e["id"] for e in body["events"]] == ["e1", "e2"]
    assert body["events"][0] == {
        "id": "e1",
        "event_name": "api.request",
        "external_customer_id": "cust-1",
        "customer_id": None,
        "timestamp": "2026-05-01T09:28:00Z",
        "source": None,
        "properties": {},
        "environment_id": "env_1",
    }
    assert (body["iter_first_key"], body["iter_last_key"]) == (
        format_key(page.events[0]),
        format_key(page.events[1]),
    )
    assert (body["has_more"], body["total_count"], body["offset"]) == (False, 2, 0)
    # polling for newer events with the newest key: nothing yet, the same key comes back
    newest = format_key(test_env.events.query().events[0])
    empty = test_env.events.query(iter_first_key=newest)
    assert empty.events == ()
    body = event_page_to_dict(empty, "env_1", offset=None, iter_first_key=newest)
    assert (body["iter_first_key"], body["iter_last_key"], body["offset"], body["events"]) == (
        newest,
        None,
        0,
        [],
    )


def test_query_string_property_filters() -> None:
    assert parse_property_filters("region:eu,us;tier:gold") == {"region": ["eu", "us"], "tier": ["gold"]}
    assert parse_property_filters("url:https://x;") == {"url": ["https://x"]}  # the first ':' ends the key
    assert parse_property_filters("") is None and parse_property_filters(None) is None
    assert parse_property_filters(" a : b ") == {" a ": [" b "]}  # nothing is trimmed
