"""Usage aggregation: worked examples and properties (order independence, duplicates)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.usage import (
    AggregationType,
    BucketSize,
    MeterFilter,
    MeterSpec,
    UsageEvent,
    aggregate_usage,
    bucket_start,
    property_number,
    property_text,
)
from billingkit.errors import ValidationError
from billingkit.testing import strategies as bks

D = Decimal
START = datetime(2024, 1, 1, tzinfo=UTC)
END = datetime(2024, 1, 2, tzinfo=UTC)  # a one-day window


def ev(
    eid: str,
    hours: float,
    value: Any = None,
    name: str = "api_call",
    cust: str = "c1",
    **props: Any,
) -> UsageEvent:
    properties = dict(props)
    if value is not None:
        properties["n"] = value
    return UsageEvent(eid, name, cust, START + timedelta(hours=hours), properties)


EVENTS = [
    ev("e1", 0, 2, region="eu"),
    ev("e2", 6, "3", region="us"),
    ev("e3", 12, 3.0, region="eu"),
    ev("e1", 13, 100, region="eu"),  # duplicate id: ignored (the first e1 wins)
    ev("e4", 18, "n/a", region="eu"),  # not numeric: counted, but no value
    ev("e5", 25, 50, region="eu"),  # outside the window
    ev("e6", 3, 40, name="other"),  # another event name
    ev("e7", 3, 40, cust="c2", region="eu"),  # another customer
]


def agg(kind: str, **kw: Any) -> Decimal:
    meter = MeterSpec("api_call", AggregationType(kind), field=None if kind == "COUNT" else "n", **kw)
    return aggregate_usage(meter, EVENTS, start=START, end=END, external_customer_ids="c1").value


@pytest.mark.parametrize(
    ("kind", "kw", "expected"),
    [
        ("COUNT", {}, "4"),  # e1 e2 e3 e4
        ("SUM", {}, "8"),  # 2 + 3 + 3.0 (e4 is not numeric)
        ("AVG", {}, "2.666666666666666666666666667"),  # 8 / 3 numeric values
        ("MAX", {}, "3"),  # max(2, 3, 3.0)
        ("COUNT_UNIQUE", {}, "4"),  # texts "2", "3", "3.0", "n/a"
        ("LATEST", {}, "3.0"),  # e3 at 12:00 is the latest numeric event
        ("SUM_WITH_MULTIPLIER", {"multiplier": D("0.5")}, "4.0"),  # 8 * 0.5
        # 2 * 24/24 + 3 * 18/24 + 3 * 12/24 = 2 + 2.25 + 1.5 = 5.75
        ("WEIGHTED_SUM", {}, "5.75"),
    ],
)
def test_aggregation_examples(kind: str, kw: dict[str, Any], expected: str) -> None:
    assert agg(kind, **kw) == D(expected)


def test_filters_and_customers() -> None:
    meter = MeterSpec("api_call", AggregationType.SUM, field="n", filters=(MeterFilter("region", ("eu",)),))
    # c1 in eu: e1 (2) + e3 (3.0) = 5; e4 not numeric
    assert aggregate_usage(meter, EVENTS, start=START, end=END, external_customer_ids="c1").value == D(5)
    # every customer: + e7 (40) = 45
    assert aggregate_usage(meter, EVENTS, start=START, end=END).value == D(45)
    both = aggregate_usage(meter, EVENTS, start=START, end=END, external_customer_ids=["c1", "c2"])
    assert both.value == D(45) and both.event_count == 4  # e1 e3 e4 e7


def test_filter_value_compared_as_text() -> None:
    events = [
        ev("a", 1, 1, tier=1),  # int 1 -> "1"
        ev("b", 2, 1, tier="1"),
        ev("c", 3, 1, tier=True),  # bool -> "true"
        ev("d", 4, 1),  # key missing: no match
    ]
    meter = MeterSpec("api_call", AggregationType.COUNT, filters=(MeterFilter("tier", ("1", "true")),))
    assert aggregate_usage(meter, events, start=START, end=END).value == D(3)


def test_group_by() -> None:
    meter = MeterSpec("api_call", AggregationType.SUM, field="n", group_by="region")
    result = aggregate_usage(meter, EVENTS, start=START, end=END, external_customer_ids="c1")
    # eu: 2 + 3.0 (+ e4 not numeric) = 5.0; us: 3
    assert result.group_values() == {"eu": D("5.0"), "us": D(3)}
    assert [g.event_count for g in result.groups] == [3, 1]
    assert result.value == D(8)


def test_buckets_sum_and_max() -> None:
    events = [ev("a", 0.1, 5), ev("b", 0.5, 7), ev("c", 2.2, 4), ev("d", 2.9, 1)]
    hourly_max = MeterSpec("api_call", AggregationType.MAX, field="n", bucket_size=BucketSize.HOUR)
    result = aggregate_usage(hourly_max, events, start=START, end=END)
    # hour 0: max(5, 7) = 7; hour 2: max(4, 1) = 4; total = 7 + 4 = 11
    assert [(b.start.hour, b.value) for b in result.buckets] == [(0, D(7)), (2, D(4))]
    assert result.value == D(11)
    hourly_sum = MeterSpec("api_call", AggregationType.SUM, field="n", bucket_size="HOUR")  # type: ignore[arg-type]
    assert [b.value for b in aggregate_usage(hourly_sum, events, start=START, end=END).buckets] == [
        D(12),
        D(5),
    ]


def test_bucketed_max_per_group() -> None:
    events = [
        ev("a", 0.1, 5, gpu="a100"),
        ev("b", 0.2, 3, gpu="h100"),
        ev("c", 0.3, 9, gpu="a100"),
        ev("d", 1.5, 2, gpu="h100"),
    ]
    meter = MeterSpec("api_call", AggregationType.MAX, field="n", bucket_size=BucketSize.HOUR, group_by="gpu")
    result = aggregate_usage(meter, events, start=START, end=END)
    # hour 0: a100 max 9 + h100 max 3 = 12; hour 1: h100 2; total 14
    assert [b.value for b in result.buckets] == [D(12), D(2)]
    assert result.value == D(14)
    assert result.group_values() == {"a100": D(9), "h100": D(5)}


@pytest.mark.parametrize(
    ("size", "instant", "expected"),
    [
        ("MINUTE", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 8, 10, 42)),
        ("15MIN", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 8, 10, 30)),
        ("30MIN", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 8, 10, 30)),
        ("HOUR", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 8, 10)),
        ("3HOUR", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 8, 9)),
        ("6HOUR", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 8, 6)),
        ("12HOUR", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 8, 0)),
        ("DAY", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 8)),
        ("WEEK", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 6)),  # Wednesday -> Monday
        ("MONTH", datetime(2024, 5, 8, 10, 42, 7), datetime(2024, 5, 1)),
    ],
)
def test_bucket_alignment(size: str, instant: datetime, expected: datetime) -> None:
    assert bucket_start(instant.replace(tzinfo=UTC), BucketSize(size)) == expected.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "number", "text"),
    [
        (2, D(2), "2"),
        ("2.50", D("2.50"), "2.50"),
        (0.1, D("0.1"), "0.1"),
        (True, None, "true"),
        (None, None, None),
        ("abc", None, "abc"),
        (float("nan"), None, None),  # not finite: no number, no text
        ({"b": 1, "a": 2}, None, None),  # objects and lists have no text
        ([1, 2], None, None),
        (2.0, D("2.0"), "2.0"),
        (1e16, D("1E+16"), "10000000000000000"),  # plain notation, as PostgreSQL prints it
        (1.5e-07, D("1.5E-7"), "0.00000015"),
        (-0.0, D("0"), "0.0"),  # no negative zero in text
        (D("1.50E+3"), D("1500"), "1500"),
        (" 2.50 ", None, " 2.50 "),  # numeric strings: no spaces
        ("1e5", D("1e5"), "1e5"),
        ("1e99999", None, "1e99999"),  # exponent of at most 4 digits
        ("١٢", None, "١٢"),  # ASCII digits only
        ("1_000", None, "1_000"),
        (".5", D("0.5"), ".5"),
        ("+5.", D(5), "+5."),
    ],
)
def test_property_values(value: Any, number: Decimal | None, text: str | None) -> None:
    assert property_number(value) == number
    assert property_text(value) == text


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"aggregation": "MEDIAN"}, "aggregation.type"),
        ({"aggregation": "SUM"}, "aggregation.field"),
        ({"aggregation": "SUM_WITH_MULTIPLIER", "field": "n"}, "aggregation.multiplier"),
        (
            {"aggregation": "SUM_WITH_MULTIPLIER", "field": "n", "multiplier": D(0)},
            "aggregation.multiplier",
        ),
        ({"aggregation": "SUM", "field": "n", "multiplier": D(2)}, "aggregation.multiplier"),
        ({"aggregation": "AVG", "field": "n", "bucket_size": "HOUR"}, "aggregation.bucket_size"),
        ({"aggregation": "SUM", "field": "n", "bucket_size": "YEAR"}, "aggregation.bucket_size"),
        ({"aggregation": "COUNT", "event_name": ""}, "event_name"),
        ({"aggregation": "COUNT", "filters": ("region",)}, "filters"),
    ],
)
def test_meter_rejects(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"event_name": "api_call"}
    args.update(kwargs)
    with pytest.raises(ValidationError) as info:
        MeterSpec(**args)
    assert info.value.field == field


def test_event_and_window_rejects() -> None:
    with pytest.raises(ValidationError) as info:
        UsageEvent("e", "n", "c", datetime(2024, 1, 1), {})  # naive timestamp
    assert info.value.field == "timestamp"
    meter = MeterSpec("api_call", AggregationType.COUNT)
    with pytest.raises(ValidationError) as info:
        aggregate_usage(meter, [], start=END, end=START)
    assert info.value.field == "end"
    with pytest.raises(ValidationError) as info:
        aggregate_usage(meter, [{"event_id": "x"}], start=START, end=END)  # type: ignore[list-item]
    assert info.value.field == "events"


METERS = [
    MeterSpec("api_call", AggregationType.COUNT),
    MeterSpec("api_call", AggregationType.SUM, field="n", filters=(MeterFilter("region", ("eu", "us")),)),
    MeterSpec("api_call", AggregationType.AVG, field="n"),
    MeterSpec("api_call", AggregationType.MAX, field="n", bucket_size=BucketSize.DAY, group_by="g"),
    MeterSpec("api_call", AggregationType.COUNT_UNIQUE, field="n"),
    MeterSpec("api_call", AggregationType.LATEST, field="n"),
    MeterSpec("api_call", AggregationType.SUM_WITH_MULTIPLIER, field="n", multiplier=D("1.5")),
    MeterSpec("api_call", AggregationType.WEIGHTED_SUM, field="n", group_by="g"),
]
WINDOW_END = datetime(2024, 2, 1, tzinfo=UTC)


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(METERS).flatmap(lambda m: st.tuples(st.just(m), bks.usage_event_streams(meter=m))),
    st.randoms(),
)
def test_order_independent_and_duplicate_proof(
    pair: tuple[MeterSpec, list[UsageEvent]], rnd: random.Random
) -> None:
    meter, events = pair
    ids: set[str] = set()
    originals = []
    for event in events:  # the first occurrence of each id
        if event.event_id not in ids:
            ids.add(event.event_id)
            originals.append(event)
    expected = aggregate_usage(meter, originals, start=START, end=WINDOW_END)
    shuffled = list(originals)
    rnd.shuffle(shuffled)
    resent = shuffled + [e for e in events if e not in originals]
    assert aggregate_usage(meter, resent, start=START, end=WINDOW_END) == expected
    assert aggregate_usage(meter, events, start=START, end=WINDOW_END) == expected
    doubled = originals + originals
    assert aggregate_usage(meter, doubled, start=START, end=WINDOW_END) == expected


@settings(max_examples=25, deadline=None)
@given(bks.usage_event_streams(meter=METERS[1], duplicates=False))
def test_sum_matches_a_plain_sum(events: list[UsageEvent]) -> None:
    total = D(0)
    for e in events:
        number = property_number(e.properties.get("n"))
        if (
            START <= e.timestamp < WINDOW_END
            and e.event_name == "api_call"
            and e.properties.get("region") in ("eu", "us")
            and number is not None
        ):
            total += number
    assert aggregate_usage(METERS[1], events, start=START, end=WINDOW_END).value == total


junk = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=6),
    st.datetimes(),
    st.datetimes(timezones=st.just(UTC)),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=100, deadline=None)
@given(junk, junk, junk, junk, junk)
def test_aggregation_is_total(name: Any, kind: Any, field: Any, start: Any, end: Any) -> None:
    try:
        meter = MeterSpec(name, kind, field=field)
        result = aggregate_usage(meter, EVENTS, start=start, end=end)
    except ValidationError:
        return
    assert result.event_count >= 0
