"""``scoped.usage``: usage reports over stored events, and batch aggregation for billing runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from billingkit.domain.usage import UsageQuery, UsageResult
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import usage as svc

__all__ = ["Usage"]


class Usage:
    """Usage of one environment's events. Needs ``event`` read (``event_reader``)."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def report(self, request: svc.UsageRequest | None = None, /, **fields: Any) -> svc.UsageReport:
        """Aggregate ``event_name`` events ad hoc. Fields: ``aggregation_type`` (COUNT, SUM, ...),
        ``property_name``, ``external_customer_id`` or ``customer_id``, ``start_time``/``end_time``
        (default: the last 7 days), ``window_size`` (buckets, SUM/MAX), ``filters``
        ({key: [values]}), ``group_by`` (["properties.<name>"]), ``multiplier``. Example:
        ``report(event_name="api_call", aggregation_type="SUM", property_name="tokens",
        external_customer_id="acme").result.value``."""
        data = request or parse_input(svc.UsageRequest, fields)
        return self._s.run(svc.usage_report, request=data)

    def for_meter(
        self, meter_id: str, request: svc.MeterUsageRequest | None = None, /, **fields: Any
    ) -> svc.UsageReport:
        """What the stored meter counts for a customer and window (same window fields as
        :meth:`report`; extra ``filters`` narrow the meter's own)."""
        data = request or parse_input(svc.MeterUsageRequest, {"meter_id": meter_id, **fields})
        return self._s.run(svc.usage_by_meter, request=data)

    def aggregate(self, queries: Sequence[UsageQuery]) -> list[UsageResult]:
        """Answer many (meter, customers, window) questions at once, one result per query, in a
        few statements on SQL stores. Example:
        ``aggregate([UsageQuery(meter.to_spec(), start, end, frozenset({"acme"}))])``."""
        return self._s.run(svc.aggregate_usage_batch, queries=queries)
