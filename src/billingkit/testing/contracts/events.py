"""The storage contract, part three: usage events and event queries."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billingkit.domain.event_queries import EventFilter, EventPage, filter_events
from billingkit.domain.usage import MeterFilter, UsageEvent, property_text
from billingkit.ports import Storage
from billingkit.testing.contracts.samples import T0, unique_number

__all__ = ["EventStoreContract"]


# -- event streams and queries for the event query contract ------------------------------------
_EVENT_NAMES = ("api.call", "Api.call", "éclair", "z")
_EVENT_CUSTOMERS = ("c1", "c2", "C1")
_EVENT_KEYS = ("region", "n", "flag")
_event_values = st.one_of(
    st.sampled_from(["eu", "us", "EU", "1.5", "2", "true", "", "é"]),
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=10**19, max_value=10**20),
    st.sampled_from([1.5, 2.0, -0.0, 0.1, 1e16, 2.5e-07]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.just({"a": 1}),
    st.just([1]),
)


@st.composite
def _event_stream(draw: Any) -> list[UsageEvent]:
    """Up to 30 events with unique ids (mixed case and non-ASCII, to prove code point order),
    few distinct instants (ties broken by id) and mixed property values."""
    size = draw(st.integers(0, 30))
    alphabet = "aAbZ_é€\U0001d11e0"
    ids = draw(st.lists(st.text(alphabet, min_size=1, max_size=3), min_size=size, max_size=size, unique=True))
    instants = draw(st.lists(st.integers(0, 3600), min_size=1, max_size=5))
    events = []
    for event_id in ids:
        keys = draw(st.lists(st.sampled_from(_EVENT_KEYS), max_size=3, unique=True))
        events.append(
            UsageEvent(
                event_id=event_id,
                event_name=draw(st.sampled_from(_EVENT_NAMES)),
                external_customer_id=draw(st.sampled_from(_EVENT_CUSTOMERS)),
                timestamp=T0
                + timedelta(
                    seconds=draw(st.sampled_from(instants)),
                    microseconds=draw(st.sampled_from([0, 1, 999_999])),
                ),
                properties={key: draw(_event_values) for key in keys},
                customer_id=draw(st.sampled_from([None, "cust_1"])),
                source=draw(st.sampled_from([None, "api", "sdk"])),
            )
        )
    return events


@st.composite
def _event_filter(draw: Any, events: list[UsageEvent]) -> EventFilter:
    """A random query over ``events``: window, exact filters, property filters on the texts the
    stream holds, sort, order, offset, limit and keys (from the stream or made up)."""
    start = T0 + timedelta(seconds=draw(st.sampled_from([0, -1, 1, 600, 1800])))
    end = start + timedelta(seconds=draw(st.sampled_from([7200, 1, 600, 1800])))

    def sometimes(options: list[Any]) -> Any:  # None (no filter) three times in four
        return draw(st.sampled_from(options)) if draw(st.integers(0, 3)) == 0 else None

    texts = sorted({t for e in events for v in e.properties.values() if (t := property_text(v)) is not None})
    property_filters = tuple(
        MeterFilter(
            key,
            tuple(draw(st.lists(st.sampled_from([*texts, "eu", "2"]), min_size=1, max_size=3, unique=True))),
        )
        for key in (sometimes([_EVENT_KEYS[:1], _EVENT_KEYS[1:2], _EVENT_KEYS[:2]]) or ())
    )
    sort = draw(st.sampled_from(["timestamp", "timestamp", "event_name"]))
    after = before = None
    if sort == "timestamp" and draw(st.booleans()):
        if events and draw(st.integers(0, 3)):
            chosen = draw(st.sampled_from(events))
            key = (chosen.timestamp, chosen.event_id)
        else:
            key = (T0 + timedelta(seconds=draw(st.integers(0, 3600))), draw(st.sampled_from(["", "a", "é"])))
        if draw(st.booleans()):
            after = key
        else:
            before = key
    return EventFilter(
        start=start,
        end=end,
        external_customer_id=sometimes(list(_EVENT_CUSTOMERS)),
        event_name=sometimes(list(_EVENT_NAMES)),
        event_id=sometimes([e.event_id for e in events[:3]] or ["a"]),
        source=sometimes(["api", "sdk"]),
        property_filters=property_filters,
        sort=sort,
        descending=draw(st.booleans()),
        after=after,
        before=before,
        offset=draw(st.sampled_from([0, 0, 1, 3])),
        limit=draw(st.sampled_from([5, 1, 2, 50])),
    )


def _page_view(page: EventPage) -> tuple[Any, ...]:
    """A page with properties compared by their text (PostgreSQL's JSONB prints some floats as
    plain integers: the same JSON number, another Python type)."""
    rows = [
        (
            e.event_id,
            e.event_name,
            e.external_customer_id,
            e.customer_id,
            e.timestamp,
            e.source,
            {key: property_text(value) for key, value in e.properties.items()},
        )
        for e in page.events
    ]
    return rows, page.has_more, page.total_count


class EventStoreContract:
    """Usage events: stored once per id, rolled back with their unit of work, and queried exactly
    like the domain reference (:func:`billingkit.domain.event_queries.filter_events`)."""

    # -- usage events --------------------------------------------------------------------------
    def test_events_are_stored_once_per_id(self, storage: Storage) -> None:
        from billingkit.domain.usage import UsageEvent

        def event(event_id: str, tokens: str = "1.10") -> UsageEvent:
            return UsageEvent(
                event_id, "llm.call", "cust-1", T0, {"tokens": tokens, "model": "m1"}, source="api"
            )

        with storage.unit_of_work("tenant_a", "env_a") as uow:
            # a repeated id inside one batch: the first occurrence wins
            assert uow.events.insert_new([event("e1"), event("e2"), event("e1", "9")], T0) == {"e1", "e2"}
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.events.insert_new([event("e2", "5"), event("e3")], T0) == {"e3"}
            assert uow.events.insert_new([], T0) == set()
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = uow.events.find("e1")
            assert stored == event("e1") and stored is not None and stored.properties["tokens"] == "1.10"
            assert uow.events.find("e2") == event("e2")
            assert uow.events.find("missing") is None
        # the same id in another scope is another event
        with storage.unit_of_work("tenant_a", "env_b") as uow:
            assert uow.events.find("e1") is None
            assert uow.events.insert_new([event("e1")], T0) == {"e1"}
            uow.commit()

    def test_event_inserts_roll_back(self, storage: Storage) -> None:
        from billingkit.domain.usage import UsageEvent

        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.events.insert_new([UsageEvent("e1", "n", "c", T0, {})], T0)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.events.find("e1") is None
            assert uow.events.insert_new([UsageEvent("e1", "n", "c", T0, {})], T0) == {"e1"}

    def test_a_lazy_batch_of_many_parts_is_stored_once_per_id(self, storage: Storage) -> None:
        """1,200 events from a generator (a SQL store writes them in several statements, on
        PostgreSQL several parts in flight at once): repeats across parts and of ids stored before
        are not stored again, and the generator is read once."""

        def event(number: int, tokens: int) -> UsageEvent:
            return UsageEvent(f"e{number}", "llm.call", "cust-1", T0, {"tokens": tokens})

        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.events.insert_new([event(5, 0), event(1100, 0)], T0) == {"e5", "e1100"}
            uow.commit()
        pulled: list[int] = []

        def batch() -> Any:
            for number in range(1200):
                pulled.append(number)
                yield event(number, 1)
            for number in (3, 700, 1199):  # repeats of the first, a middle and the last part
                pulled.append(number)
                yield event(number, 2)

        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = uow.events.insert_new(batch(), T0)
            uow.commit()
        assert stored == {f"e{n}" for n in range(1200)} - {"e5", "e1100"}
        assert len(pulled) == 1203
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            kept = {n: uow.events.find(f"e{n}") for n in (3, 5, 700, 1100, 1199)}
        assert {n: e.properties["tokens"] for n, e in kept.items() if e} == {
            3: 1,
            5: 0,
            700: 1,
            1100: 0,
            1199: 1,
        }

    def test_a_batch_that_fails_midway_leaves_nothing_and_the_store_works_on(self, storage: Storage) -> None:
        """The iterable raises after 700 events (an invalid event, as ingestion's validation would):
        the error comes out as it was, the parts already written roll back with the unit of work,
        and the next unit of work on the same store ingests normally."""

        class Invalid(Exception):
            pass

        def batch() -> Any:
            for number in range(700):
                yield UsageEvent(f"f{number}", "llm.call", "cust-1", T0, {"tokens": 1})
            raise Invalid("event 700 is invalid")

        with pytest.raises(Invalid), storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.events.insert_new(batch(), T0)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.events.find("f0") is None and uow.events.find("f699") is None
            assert uow.events.insert_new([UsageEvent("f1", "llm.call", "cust-1", T0, {})], T0) == {"f1"}
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.events.find("f1") is not None

    # -- event queries ---------------------------------------------------------------------------
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(data=st.data())
    def test_event_queries_match_the_domain_reference(self, storage: Storage, data: st.DataObject) -> None:
        events = data.draw(_event_stream(), label="events")
        scope = (f"tenant_eq{unique_number()}", "env_eq")
        with storage.unit_of_work(*scope) as uow:
            assert uow.events.insert_new(events, T0) == {e.event_id for e in events}
            uow.commit()
        queries = data.draw(st.lists(_event_filter(events), min_size=1, max_size=8), label="queries")
        with storage.unit_of_work(*scope) as uow:
            for query in queries:
                assert _page_view(uow.events.query(query)) == _page_view(filter_events(events, query)), query

    def _store_events(self, storage: Storage, events: list[UsageEvent], scope: tuple[str, str]) -> None:
        with storage.unit_of_work(*scope) as uow:
            uow.events.insert_new(events, T0)
            uow.commit()

    @pytest.mark.parametrize("descending", [True, False])
    def test_event_pages_by_after_key_visit_each_event_once_in_order(
        self, storage: Storage, descending: bool
    ) -> None:
        # 120 events on 40 instants: every page boundary may fall inside a tie
        events = [
            UsageEvent(f"e{n:03d}", "api.call", "c1", T0 + timedelta(seconds=n // 3), {"n": n})
            for n in range(120)
        ]
        self._store_events(storage, events, ("tenant_a", "env_a"))
        window = {"start": T0, "end": T0 + timedelta(hours=1), "descending": descending, "limit": 50}
        seen: list[str] = []
        after = None
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            for _ in range(4):
                page = uow.events.query(EventFilter(**window, after=after))  # type: ignore[arg-type]
                assert page.total_count == 120
                seen += [e.event_id for e in page.events]
                if not page.has_more:
                    break
                after = (page.events[-1].timestamp, page.events[-1].event_id)
        expected = sorted((e.event_id for e in events), reverse=descending)
        assert seen == expected
        assert len(page.events) == 20

    def test_polling_with_a_before_key_returns_only_newer_events(self, storage: Storage) -> None:
        def event(n: int) -> UsageEvent:
            return UsageEvent(f"e{n:02d}", "api.call", "c1", T0 + timedelta(seconds=n), {})

        self._store_events(storage, [event(n) for n in range(10)], ("tenant_a", "env_a"))
        window = {"start": T0, "end": T0 + timedelta(hours=1), "limit": 5}
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            newest = uow.events.query(EventFilter(**window))  # type: ignore[arg-type]
        assert [e.event_id for e in newest.events] == ["e09", "e08", "e07", "e06", "e05"]
        first = (newest.events[0].timestamp, newest.events[0].event_id)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            nothing = uow.events.query(EventFilter(**window, before=first))  # type: ignore[arg-type]
        assert nothing == EventPage((), False, 10)
        self._store_events(storage, [event(n) for n in range(10, 17)], ("tenant_a", "env_a"))
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            # the 5 newer events nearest the key, newest first; has_more: even newer ones exist
            poll = uow.events.query(EventFilter(**window, before=first))  # type: ignore[arg-type]
            assert [e.event_id for e in poll.events] == ["e14", "e13", "e12", "e11", "e10"]
            assert (poll.has_more, poll.total_count) == (True, 17)
            first = (poll.events[0].timestamp, poll.events[0].event_id)
            rest = uow.events.query(EventFilter(**window, before=first))  # type: ignore[arg-type]
            assert [e.event_id for e in rest.events] == ["e16", "e15"] and not rest.has_more

    def test_event_total_count_ignores_paging(self, storage: Storage) -> None:
        events = [
            UsageEvent(
                f"e{n}",
                "api.call",
                f"c{n % 2}",
                T0 + timedelta(seconds=n),
                {"region": ["eu", "us"][n % 3 == 0]},
            )
            for n in range(30)
        ]
        self._store_events(storage, events, ("tenant_a", "env_a"))
        matching = [e for e in events if e.external_customer_id == "c0" and e.properties["region"] == "eu"]
        base: dict[str, Any] = {
            "start": T0,
            "end": T0 + timedelta(hours=1),
            "external_customer_id": "c0",
            "property_filters": (MeterFilter("region", ("eu",)),),
        }
        key = (events[10].timestamp, events[10].event_id)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            for paging in ({}, {"limit": 1}, {"offset": 7, "limit": 2}, {"after": key}, {"before": key}):
                page = uow.events.query(EventFilter(**base, **paging))
                assert page.total_count == len(matching) == 10, paging
            assert uow.events.query(EventFilter(**base, offset=50)) == EventPage((), False, 10)
        # another scope sees none of them
        with storage.unit_of_work("tenant_a", "env_b") as uow:
            assert uow.events.query(EventFilter(T0, T0 + timedelta(hours=1))) == EventPage((), False, 0)
