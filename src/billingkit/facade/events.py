"""``scoped.events``: usage event ingestion and lookup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from billingkit.domain.usage import UsageEvent
from billingkit.facade.scoped import Scoped
from billingkit.services import events as svc

__all__ = ["Events"]


class Events:
    """Usage events of one environment. Writing needs ``event`` write (``event_ingestor``), reading
    ``event`` read (``event_reader``)."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def ingest(self, event: Mapping[str, Any] | None = None, /, **fields: Any) -> svc.IngestResult:
        """Store one event given as a mapping or keyword arguments: ``event_name`` and
        ``external_customer_id`` (required), ``event_id`` (generated when absent), ``timestamp``
        (aware datetime or ISO string; default now), ``properties``, ``source``, ``customer_id``.
        Sending an id again stores nothing and reports it in ``duplicate_ids``."""
        return self.ingest_bulk([dict(event or {}, **fields)])

    def ingest_bulk(self, events: Sequence[Mapping[str, Any]]) -> svc.IngestResult:
        """Validate every event, then store the new ones in one write; all or nothing on invalid
        input (``ValidationError`` on ``events[i].<field>``). At most ``billing.max_bulk_events``."""
        return self._s.run(svc.ingest_events, events=events, max_events=self._s.billing.max_bulk_events)

    def get(self, event_id: str) -> UsageEvent:
        """The stored event with this id, or ``NotFound``."""
        return self._s.run(svc.get_event, event_id=event_id)
