"""Usage events in memory: rows keyed by scope and event id, plus an index by customer stream.

The stream index (scope, event name, external customer id) → events lets usage aggregation read one
customer's events without scanning the whole store, as the SQL index ``ix_events_usage`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from billingkit.domain.event_queries import EventFilter, EventPage, filter_events
from billingkit.domain.usage import UsageEvent, UsageQuery, UsageResult, aggregate_usage

__all__ = ["EventRows", "MemoryEventStore", "MemoryUsageStore"]

Undo = Callable[[dict[Any, Any], Any, Any], None]
Scope = tuple[str | None, str | None]


class EventRows:
    """The memory store's events: ``rows[(tenant, env, id)] = (event, ingested_at)`` and
    ``streams[(tenant, env, event_name, customer)] = {id: event}``."""

    def __init__(self) -> None:
        self.rows: dict[tuple[Any, ...], tuple[UsageEvent, datetime]] = {}
        self.streams: dict[tuple[Any, ...], dict[str, UsageEvent]] = {}

    def of_scope(self, scope: Scope) -> Iterable[UsageEvent]:
        return (event for key, (event, _) in self.rows.items() if key[:2] == scope)


class MemoryEventStore:
    """The memory adapter of :class:`billingkit.ports.EventStore`. Writes go through the unit of
    work's undo log, so a rolled-back ingestion leaves nothing behind."""

    def __init__(self, events: EventRows, scope: Scope, undo: Undo) -> None:
        self._events = events
        self._scope = scope
        self._undo = undo

    def insert_new(self, events: Iterable[UsageEvent], ingested_at: datetime) -> set[str]:
        rows, streams = self._events.rows, self._events.streams
        inserted: set[str] = set()
        for event in events:
            key = (*self._scope, event.event_id)
            if key in rows:
                continue
            self._undo(rows, key, None)
            rows[key] = (event, ingested_at)
            stream_key = (*self._scope, event.event_name, event.external_customer_id)
            stream = streams.get(stream_key)
            if stream is None:
                self._undo(streams, stream_key, None)
                stream = streams[stream_key] = {}
            self._undo(stream, event.event_id, None)
            stream[event.event_id] = event
            inserted.add(event.event_id)
        return inserted

    def find(self, event_id: str) -> UsageEvent | None:
        found = self._events.rows.get((*self._scope, event_id))
        return None if found is None else found[0]

    def query(self, query: EventFilter) -> EventPage:
        return filter_events(self._events.of_scope(self._scope), query)


class MemoryUsageStore:
    """The memory adapter of :class:`billingkit.ports.UsageStore`: the domain reference over the
    customer streams each query names (or every stream of the meter's event name)."""

    def __init__(self, events: EventRows, scope: Scope) -> None:
        self._events = events
        self._scope = scope

    def _stream_events(self, query: UsageQuery) -> list[UsageEvent]:
        streams = self._events.streams
        name = query.meter.event_name
        if query.external_customer_ids is None:
            keys = [k for k in streams if k[:3] == (*self._scope, name)]
        else:
            keys = [(*self._scope, name, customer) for customer in query.external_customer_ids]
        return [event for key in keys for event in streams.get(key, {}).values()]

    def aggregate(self, queries: Sequence[UsageQuery]) -> list[UsageResult]:
        return [
            aggregate_usage(
                q.meter,
                self._stream_events(q),
                start=q.start,
                end=q.end,
                external_customer_ids=q.external_customer_ids,
            )
            for q in queries
        ]
