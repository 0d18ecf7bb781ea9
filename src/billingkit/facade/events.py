"""``scoped.events``: usage event ingestion, lookup and queries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from billingkit.domain.event_queries import EventPage, EventSort
from billingkit.domain.usage import UsageEvent
from billingkit.facade.scoped import Scoped
from billingkit.services import event_queries as queries
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

    def ingest_bulk(
        self, events: Sequence[Mapping[str, Any]], *, evaluate_alerts_immediately: bool = False
    ) -> svc.IngestResult:
        """Validate every event, then store the new ones in one write; all or nothing on invalid
        input (``ValidationError`` on ``events[i].<field>``). At most ``billing.max_bulk_events``.
        ``evaluate_alerts_immediately`` is recorded on the result (alert evaluation itself
        arrives with usage alerts)."""
        result = self._s.run(
            svc.ingest_events,
            events=events,
            max_events=self._s.billing.max_bulk_events,
            evaluate_alerts_immediately=evaluate_alerts_immediately,
        )
        self._s.billing._ingested(result)
        return result

    def get(self, event_id: str) -> UsageEvent:
        """The stored event with this id, or ``NotFound``."""
        return self._s.run(svc.get_event, event_id=event_id)

    def query(
        self,
        *,
        external_customer_id: str | None = None,
        event_name: str | None = None,
        event_id: str | None = None,
        source: str | None = None,
        start_time: datetime | str | None = None,
        end_time: datetime | str | None = None,
        property_filters: Mapping[str, Sequence[str]] | str | None = None,
        iter_first_key: str | None = None,
        iter_last_key: str | None = None,
        sort: EventSort | None = None,
        order: Literal["asc", "desc"] | None = None,
        page_size: int | None = None,
        offset: int | None = None,
    ) -> EventPage:
        """One page of stored events, newest first by default (needs ``event`` read).

        Filters are exact matches; the window is ``[start_time, end_time)`` (default: the 7 days
        before now); ``property_filters`` ``{key: [values]}`` (or ``"k1:v1,v2;k2:v3"``) as meter
        filters. Page with ``page_size`` (1..1000, default 50) and ``offset``, or by key: pass
        ``iter_last_key=format_key(page.events[-1])`` for the next page, or
        ``iter_first_key=format_key(page.events[0])`` for the newer events (polling).
        ``ValidationError`` names the field. See :mod:`billingkit.services.event_queries`.

        Example (every event of a customer in the last 7 days, newest first)::

            from billingkit.domain.event_queries import format_key

            page = scoped.events.query(external_customer_id="cust-1", page_size=500)
            seen = list(page.events)
            while page.has_more:
                key = format_key(page.events[-1])
                page = scoped.events.query(external_customer_id="cust-1", page_size=500, iter_last_key=key)
                seen += page.events
        """
        return self._s.run(
            queries.query_events,
            external_customer_id=external_customer_id,
            event_name=event_name,
            event_id=event_id,
            source=source,
            start_time=start_time,
            end_time=end_time,
            property_filters=property_filters,
            iter_first_key=iter_first_key,
            iter_last_key=iter_last_key,
            sort=sort,
            order=order,
            page_size=page_size,
            offset=offset,
        )
