"""Usage events in memory: one dict per store, keyed by scope and event id."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from billingkit.domain.usage import UsageEvent

__all__ = ["MemoryEventStore"]

Undo = Callable[[dict[Any, Any], Any, Any], None]


class MemoryEventStore:
    """The memory adapter of :class:`billingkit.ports.EventStore`. Writes go through the unit of
    work's undo log, so a rolled-back ingestion leaves nothing behind."""

    def __init__(self, rows: dict[Any, Any], scope: tuple[str | None, str | None], undo: Undo) -> None:
        self._rows = rows
        self._scope = scope
        self._undo = undo

    def insert_new(self, events: Sequence[UsageEvent], ingested_at: datetime) -> set[str]:
        inserted: set[str] = set()
        for event in events:
            key = (*self._scope, event.event_id)
            if key in self._rows:
                continue
            self._undo(self._rows, key, None)
            self._rows[key] = (event, ingested_at)
            inserted.add(event.event_id)
        return inserted

    def find(self, event_id: str) -> UsageEvent | None:
        found = self._rows.get((*self._scope, event_id))
        return None if found is None else found[0]
