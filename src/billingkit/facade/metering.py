"""The metering areas of ``Scoped``: ``scoped.events`` (ingestion, lookup, queries) and
``scoped.usage`` (usage reports over stored events, batch aggregation for billing runs).

Ingestion stays a written-out method: it is the hot path, it takes events in their wire form (a
mapping each), and it reports to the ``Billing``'s observers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from billingkit.domain.event_queries import EventPage, EventSort
from billingkit.domain.usage import UsageQuery, UsageResult
from billingkit.domain.validation import parse_input
from billingkit.errors import AlreadyExists, ValidationError, VersionConflict
from billingkit.facade.operations import Area, IdOp, RequestOp
from billingkit.services import event_queries, usage, usage_analytics, usage_records
from billingkit.services.alert_runs import evaluate_customers
from billingkit.services.events import IngestResult, get_event, ingest_events

__all__ = ["Events", "Usage"]


class Events(Area):
    """Usage events of one environment. Writing needs ``event`` write (``event_ingestor``), reading
    ``event`` read (``event_reader``)."""

    def ingest(self, event: Mapping[str, Any] | None = None, /, **fields: Any) -> IngestResult:
        """Store one event given as a mapping or keyword arguments: ``event_name`` and
        ``external_customer_id`` (required), ``event_id`` (generated when absent), ``timestamp``
        (aware datetime or ISO string; default now), ``properties``, ``source``, ``customer_id``.
        Sending an id again stores nothing and reports it in ``duplicate_ids``."""
        return self.ingest_bulk([dict(event or {}, **fields)])

    def ingest_bulk(
        self, events: Sequence[Mapping[str, Any]], *, evaluate_alerts_immediately: bool = False
    ) -> IngestResult:
        """Validate every event, then store the new ones in one write; all or nothing on invalid
        input (``ValidationError`` on ``events[i].<field>``). At most ``billing.max_bulk_events``.
        With ``evaluate_alerts_immediately``, the alerts of the customers the batch touched are
        evaluated once the events are stored (:func:`billingkit.services.alert_runs.evaluate_customers`),
        before this returns; otherwise the worker evaluates them at its next run."""
        result = self._s.run(
            ingest_events,
            events=events,
            max_events=self._s.billing.max_bulk_events,
            evaluate_alerts_immediately=evaluate_alerts_immediately,
        )
        if evaluate_alerts_immediately and result.accepted_ids:
            self._evaluate_alerts({str(e.get("external_customer_id")) for e in events})
        self._s.billing._ingested(result)
        return result

    def _evaluate_alerts(self, external_customer_ids: set[str]) -> None:
        """Evaluate the alerts of the customers a stored batch touched, as the system (the
        ingesting key may only write events), once more when another evaluator wrote first."""
        system = self._s.billing.scope(self._s.tenant_id, self._s.environment_id)
        for attempt in range(2):
            try:
                system.run(evaluate_customers, external_customer_ids=external_customer_ids)
                return
            except (AlreadyExists, VersionConflict):
                if attempt:
                    raise

    get = IdOp(get_event, read_only=True)

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
        return self._s.read(
            event_queries.query_events,
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


class Usage(Area):
    """Usage of this environment's events (needs ``event`` read, e.g. ``event_reader``).
    ``report`` aggregates events of one ``event_name`` ad hoc (window default: the last 7 days)."""

    report = RequestOp(usage.usage_report, usage.UsageRequest, read_only=True)
    #: Billed usage, one record per finalized subscription invoice with usage lines:
    #: ``records(subscription_id=..., plan_id=..., period_start=..., limit=...)`` -> a page of
    #: ``UsageRecord`` (a read view; nothing is stored or synced).
    records = RequestOp(usage_records.search_usage_records, usage_records.UsageRecordSearch, read_only=True)
    #: Usage, cost and points per feature (and group) over a range (``POST /events/analytics``).
    analytics = RequestOp(
        usage_analytics.usage_analytics, usage_analytics.UsageAnalyticsRequest, read_only=True
    )

    def for_meter(
        self, meter_id: str, request: usage.MeterUsageRequest | None = None, /, **fields: Any
    ) -> usage.UsageReport:
        """What the stored meter counts for a customer and window: a ``MeterUsageRequest`` or its
        window fields (``external_customer_id`` or ``customer_id``, ``start_time``, ``end_time``,
        ``window_size``, ``filters`` narrowing the meter's own...)."""
        if request is not None:
            if fields:
                raise TypeError("pass a MeterUsageRequest or its fields as keyword arguments, not both")
            if request.meter_id != meter_id:
                raise ValidationError(
                    f"meter_id {meter_id!r} differs from the request's {request.meter_id!r}", field="meter_id"
                )
            data = request
        else:
            data = parse_input(usage.MeterUsageRequest, {"meter_id": meter_id, **fields})
        return self._s.read(usage.usage_by_meter, request=data)

    def aggregate(self, queries: Sequence[UsageQuery]) -> list[UsageResult]:
        """Answer many (meter, customers, window) questions at once, one result per query, in a
        few statements on SQL stores. Example:
        ``aggregate([UsageQuery(meter.to_spec(), start, end, frozenset({"acme"}))])``."""
        return self._s.read(usage.aggregate_usage_batch, queries=queries)
