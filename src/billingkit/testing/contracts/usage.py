"""The usage store contract: every store aggregates exactly like the domain reference.

``uow.usage.aggregate(queries)`` must equal :func:`billingkit.domain.usage.aggregate_usage` over
the events the store holds, for every aggregation, filter, bucket and group, on random event
streams whose property values mix integers, floats (plain and exponent forms), numeric and other
strings, booleans, nulls, objects and lists. Subclass it with a ``storage`` fixture, as
``tests/contract/test_usage_store.py`` does.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billingkit.domain.usage import (
    AggregationType,
    BucketSize,
    MeterFilter,
    MeterSpec,
    UsageEvent,
    UsageQuery,
    aggregate_usage,
)
from billingkit.ports import Storage

__all__ = ["UsageStoreContract", "meters", "property_values", "usage_streams"]

T0 = datetime(2026, 3, 1, tzinfo=UTC)
SPAN = timedelta(days=40)
CUSTOMERS = ("c1", "c2", "c3")
_scopes = itertools.count()

property_values = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.integers(min_value=10**19, max_value=10**25),  # beyond 64-bit integers
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from([0.1, 0.2, 2.0, -0.0, 1e16, 1.5e-07, 2.5]),
    st.sampled_from(["2.50", "0.1", "1e3", ".5", "+5.", "-7", " 2", "1_0", "1e99999", "abc", "", "\u0661"]),
    st.decimals(min_value=-1000, max_value=1000, places=3).map(lambda d: format(d, "f")),
    st.booleans(),
    st.none(),
    st.just({"a": 1}),
    st.just([1, 2]),
)
"""Property values as they arrive in JSON (Decimals arrive as their plain text, see ingestion)."""

_filter_values = ["eu", "us", "1", "2.0", "true", "0.1"]
_region = st.sampled_from(["eu", "us", "apac", 1, 2.0, True, 0.1, None, {"x": 1}])


@st.composite
def meters(draw: Any) -> MeterSpec:
    """A random meter over property ``v`` with optional filters on ``region``, buckets, groups
    (by property ``g`` or by source) and a filter on sources (as usage analytics asks)."""
    kind = draw(st.sampled_from(list(AggregationType)))
    bucket = None
    if kind in (AggregationType.SUM, AggregationType.MAX) and draw(st.booleans()):
        bucket = draw(st.sampled_from(list(BucketSize)))
    filters: tuple[MeterFilter, ...] = ()
    if draw(st.booleans()):
        values = draw(st.lists(st.sampled_from(_filter_values), min_size=1, max_size=3, unique=True))
        filters = (MeterFilter("region", tuple(values)),)
    return MeterSpec(
        event_name="api.call",
        aggregation=kind,
        field=None if kind is AggregationType.COUNT else "v",
        filters=filters,
        multiplier=Decimal("1.5") if kind is AggregationType.SUM_WITH_MULTIPLIER else None,
        bucket_size=bucket,
        **draw(
            st.sampled_from(
                [{}, {}, {"group_by": "g"}, {"group_by_source": True}],
            )
        ),
        sources=draw(st.sampled_from([(), (), ("api",), ("api", "batch")])),
    )


@st.composite
def usage_streams(draw: Any, max_size: int = 25) -> list[UsageEvent]:
    """Events around ``[T0, T0 + 40 days)``: several customers and names, shared timestamps (to
    exercise LATEST's tie-break), re-sent ids, and mixed property values."""
    size = draw(st.integers(0, max_size))
    instants = draw(st.lists(st.integers(-86400, int(SPAN.total_seconds()) + 86400), min_size=1, max_size=6))
    events: list[UsageEvent] = []
    for index in range(size):
        properties: dict[str, Any] = {}
        if draw(st.integers(0, 5)):
            properties["v"] = draw(property_values)
        if draw(st.integers(0, 4)):
            properties["region"] = draw(_region)
        if draw(st.booleans()):
            properties["g"] = draw(st.sampled_from(["a", "b", 1, 2.0, True, None, [1]]))
        micros = draw(st.sampled_from([0, 1, 500_000, 999_999]))
        events.append(
            UsageEvent(
                event_id=f"e{draw(st.integers(0, size + 2))}"
                if draw(st.integers(0, 9)) == 0
                else f"e{index}",
                event_name="api.call" if draw(st.integers(0, 7)) else "other",
                external_customer_id=draw(st.sampled_from(CUSTOMERS)),
                timestamp=T0 + timedelta(seconds=draw(st.sampled_from(instants)), microseconds=micros),
                properties=properties,
                source=draw(st.sampled_from([None, "api", "batch", "sdk"])),
            )
        )
    return events


@st.composite
def usage_queries(draw: Any) -> list[UsageQuery]:
    """One to four questions, sometimes for several customers or all of them."""
    queries = []
    for _ in range(draw(st.integers(1, 4))):
        start = T0 + timedelta(seconds=draw(st.integers(-3600, 20 * 86400)))
        length = timedelta(seconds=draw(st.integers(1, 45 * 86400)))
        customers = draw(
            st.one_of(
                st.none(),
                st.lists(st.sampled_from(CUSTOMERS), min_size=1, max_size=3).map(frozenset),
            )
        )
        queries.append(UsageQuery(draw(meters()), start, start + length, customers))
    return queries


class UsageStoreContract:
    """Run against a ``storage`` fixture (memory, SQLite, PostgreSQL...)."""

    def _load(self, storage: Storage, events: list[UsageEvent]) -> tuple[str, str]:
        scope = (f"tenant_u{next(_scopes)}", "env_u")
        with storage.unit_of_work(*scope) as uow:
            uow.events.insert_new(events, T0)
            uow.commit()
        return scope

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(events=usage_streams(), queries=usage_queries())
    def test_aggregates_like_the_domain_reference(
        self, storage: Storage, events: list[UsageEvent], queries: list[UsageQuery]
    ) -> None:
        scope = self._load(storage, events)
        with storage.unit_of_work(*scope) as uow:
            got = uow.usage.aggregate(queries)
        expected = [
            aggregate_usage(
                q.meter, events, start=q.start, end=q.end, external_customer_ids=q.external_customer_ids
            )
            for q in queries
        ]
        assert got == expected

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(events=usage_streams(), queries=usage_queries())
    def test_a_question_asked_alone_aggregates_like_the_domain_reference(
        self, storage: Storage, events: list[UsageEvent], queries: list[UsageQuery]
    ) -> None:
        # One question per call: the path entitlement checks and single reports take (SQL stores
        # answer it with one plain statement instead of a table of questions).
        scope = self._load(storage, events)
        for q in queries:
            with storage.unit_of_work(*scope) as uow:
                (got,) = uow.usage.aggregate([q])
            expected = aggregate_usage(
                q.meter, events, start=q.start, end=q.end, external_customer_ids=q.external_customer_ids
            )
            assert got == expected

    def test_decimal_sums_are_exact(self, storage: Storage) -> None:
        events = [
            UsageEvent("a", "api.call", "c1", T0, {"v": 0.1}),
            UsageEvent("b", "api.call", "c1", T0, {"v": 0.2}),
            UsageEvent("c", "api.call", "c1", T0, {"v": "0.000000000000000000000000000001"}),
            UsageEvent("d", "api.call", "c1", T0, {"v": 10**25}),
        ]
        scope = self._load(storage, events)
        meter = MeterSpec("api.call", AggregationType.SUM, "v")
        with storage.unit_of_work(*scope) as uow:
            (result,) = uow.usage.aggregate([UsageQuery(meter, T0, T0 + SPAN)])
        assert result.value == Decimal("10000000000000000000000000.300000000000000000000000000001")
        assert result.event_count == 4

    @pytest.mark.parametrize(
        "values",
        [
            [2**62, 2**62, 2**62, -1],  # each fits 64 bits, their sum does not
            [10**20, 1, 2],  # an integer beyond 64 bits among small ones
            [True, False, 3, "4", 0.5, None, {"n": 1}, [1], "x", -(2**63)],  # only numbers count
        ],
    )
    @pytest.mark.parametrize(
        "aggregation", [AggregationType.SUM, AggregationType.AVG, AggregationType.SUM_WITH_MULTIPLIER]
    )
    def test_integer_sums_stay_exact(self, storage: Storage, values: list[Any], aggregation: Any) -> None:
        events = [
            UsageEvent(f"e{n}", "api.call", f"c{n % 2}", T0 + timedelta(seconds=n), {"v": value})
            for n, value in enumerate(values)
        ]
        scope = self._load(storage, events)
        multiplier = Decimal("0.5") if aggregation is AggregationType.SUM_WITH_MULTIPLIER else None
        meter = MeterSpec("api.call", aggregation, "v", multiplier=multiplier)
        customers: list[frozenset[str] | None] = [None, frozenset({"c0"}), frozenset({"c0", "c1"})]
        queries = [UsageQuery(meter, T0, T0 + SPAN, ids) for ids in customers]
        with storage.unit_of_work(*scope) as uow:
            got = uow.usage.aggregate(queries)
        expected = [
            aggregate_usage(meter, events, start=T0, end=T0 + SPAN, external_customer_ids=ids)
            for ids in customers
        ]
        assert got == expected
        assert got[0].value != 0  # the sums really were taken

    def test_a_batch_answers_each_customer_window(self, storage: Storage) -> None:
        events = [
            UsageEvent(f"e{n}", "api.call", f"c{n % 10}", T0 + timedelta(hours=n), {"v": n})
            for n in range(200)
        ]
        scope = self._load(storage, events)
        meter = MeterSpec("api.call", AggregationType.SUM, "v")
        queries = [
            UsageQuery(meter, T0, T0 + timedelta(hours=100 + c), frozenset({f"c{c}"})) for c in range(12)
        ]
        with storage.unit_of_work(*scope) as uow:
            results = uow.usage.aggregate(queries)
        for c, result in enumerate(results):
            expected = [n for n in range(200) if n % 10 == c and n < 100 + c]
            assert result.value == sum(expected) and result.event_count == len(expected)

    def test_usage_is_scoped(self, storage: Storage) -> None:
        event = UsageEvent("e1", "api.call", "c1", T0, {"v": 5})
        self._load(storage, [event])
        other = self._load(storage, [])
        meter = MeterSpec("api.call", AggregationType.SUM, "v")
        with storage.unit_of_work(*other) as uow:
            (result,) = uow.usage.aggregate([UsageQuery(meter, T0, T0 + SPAN)])
        assert result.value == 0 and result.event_count == 0

    def test_the_same_question_in_two_scopes_reads_each_scope(self, storage: Storage) -> None:
        # SQL stores reuse one statement per meter: the scope must be bound on every call.
        first = self._load(storage, [UsageEvent("e1", "api.call", "c1", T0, {"v": 5})])
        second = self._load(storage, [UsageEvent("e1", "api.call", "c1", T0, {"v": 7})])
        meter = MeterSpec("api.call", AggregationType.SUM, "v")
        for customers in (None, frozenset({"c1"}), frozenset({"c1", "c2"})):
            query = UsageQuery(meter, T0, T0 + SPAN, customers)
            for scope, value in ((first, Decimal(5)), (second, Decimal(7)), (first, Decimal(5))):
                with storage.unit_of_work(*scope) as uow:
                    (result,) = uow.usage.aggregate([query])
                assert (result.value, result.event_count) == (value, 1)

    @pytest.mark.parametrize("size", list(BucketSize))
    def test_bucket_boundaries(self, storage: Storage, size: BucketSize) -> None:
        # Instants on and next to bucket edges, across a month and a week boundary.
        edges = [
            datetime(2026, 3, 29, 23, 59, 59, 999_999, tzinfo=UTC),
            datetime(2026, 3, 30, 0, 0, tzinfo=UTC),  # a Monday
            datetime(2026, 3, 31, 23, 59, 59, tzinfo=UTC),
            datetime(2026, 4, 1, 0, 0, tzinfo=UTC),
            datetime(2026, 4, 1, 0, 14, 59, tzinfo=UTC),
            datetime(2026, 4, 1, 0, 15, tzinfo=UTC),
        ]
        events = [UsageEvent(f"e{n}", "api.call", "c1", t, {"v": n + 1}) for n, t in enumerate(edges)]
        scope = self._load(storage, events)
        meter = MeterSpec("api.call", AggregationType.SUM, "v", bucket_size=size)
        start, end = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC)
        with storage.unit_of_work(*scope) as uow:
            (result,) = uow.usage.aggregate([UsageQuery(meter, start, end)])
        assert result == aggregate_usage(meter, events, start=start, end=end)

    def test_sources_filter_and_group(self, storage: Storage) -> None:
        # Usage analytics keeps some sources and groups by source (events without one: None).
        events = [
            UsageEvent(f"e{n}", "api.call", "c1", T0 + timedelta(hours=n), {"v": n}, source=source)
            for n, source in enumerate(["api", "api", "batch", None, "sdk"], start=1)
        ]
        scope = self._load(storage, events)
        for kind in (AggregationType.SUM, AggregationType.COUNT_UNIQUE):
            meter = MeterSpec("api.call", kind, "v", sources=("api", "batch"), group_by_source=True)
            with storage.unit_of_work(*scope) as uow:
                (result,) = uow.usage.aggregate([UsageQuery(meter, T0, T0 + SPAN)])
            assert result == aggregate_usage(meter, events, start=T0, end=T0 + SPAN)
            assert [g.key for g in result.groups] == ["api", "batch"]
        every = MeterSpec("api.call", AggregationType.SUM, "v", group_by_source=True)
        with storage.unit_of_work(*scope) as uow:
            (result,) = uow.usage.aggregate([UsageQuery(every, T0, T0 + SPAN)])
        assert result.group_values() == {None: 4, "api": 3, "batch": 3, "sdk": 5}
