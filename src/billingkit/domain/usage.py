"""Usage aggregation over in-memory events: the reference every usage store must agree with.

Which events count, for a meter, a window ``[start, end)`` and optionally some customers:

1. events are collapsed by ``event_id`` first: the **first occurrence in the input wins** and
   later events with the same id are ignored whatever they contain (this mirrors ingestion, where
   the first stored event wins and duplicates are dropped); collapsing happens before any other
   filter;
2. then only events with the meter's ``event_name``, a timestamp in the window and (if given) one of
   the customers' ``external_customer_id`` remain;
3. then the meter's filters apply: every filter key must be present in ``properties`` and its value,
   as text, must be one of the filter's values (AND across keys, OR within one key's values).

Property values as text (filters, ``COUNT_UNIQUE``, ``group_by``): strings as they are, booleans
as ``true``/``false``, ints and Decimals by ``str`` (``2``, ``2.50``), floats by ``repr`` (``2.5``,
``2.0``), other JSON values as compact JSON with sorted keys.
Property values as numbers (SUM, AVG, MAX, LATEST, SUM_WITH_MULTIPLIER, WEIGHTED_SUM): ints and
``Decimal`` exactly, floats through their shortest repr (``Decimal(str(0.1)) == 0.1``), strings
that are decimal literals (``" 2.50 "``); booleans, ``None``, other strings and objects are not
numeric and the event is skipped for the value (it still counts in ``event_count``).

Aggregations (example events with values 2, 3, 3): COUNT = 3 events; SUM = 8; AVG = 8/3 (to 28
significant digits); MAX = 3; COUNT_UNIQUE = 2 distinct texts; LATEST = value of the event with the
latest timestamp (ties: greatest event id); SUM_WITH_MULTIPLIER = SUM * multiplier; WEIGHTED_SUM =
sum of value * (seconds from the event to the window end) / window seconds, e.g. 10 seats added
halfway through the window weigh 5. Nothing to aggregate gives 0.

Buckets (SUM and MAX only): one value per bucket, buckets aligned in UTC (minutes/hours/days on the
epoch grid, weeks on Monday 00:00, months on the 1st); only buckets with matching events are
listed, and the total is the sum of bucket values (for MAX: the sum of per-bucket maxima).
``group_by`` splits the result by the text of a property (events without it fall in group
``None``); with buckets, each bucket's value is the sum over its groups. A meter spec may also keep
only some event ``sources`` and group by source instead (usage analytics asks so).

This module holds events, questions and the reference itself; :mod:`.usage_properties` (property
text and numbers), :mod:`.usage_meters` (what a meter counts), :mod:`.usage_buckets` (time buckets)
and :mod:`.usage_results` (partials and results) hold the pieces, re-exported here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from billingkit.domain.periods import ensure_utc
from billingkit.domain.usage_buckets import BucketSize, bucket_end, bucket_start
from billingkit.domain.usage_meters import (
    AggregationType,
    MeterFilter,
    MeterSpec,
    filters_match,
    meter_matches,
)
from billingkit.domain.usage_properties import (
    NUMERIC_STRING_PATTERN,
    check_text,
    property_number,
    property_text,
)
from billingkit.domain.usage_results import (
    EXACT,
    Cell,
    GroupValue,
    UsageBucketValue,
    UsagePartial,
    UsageResult,
    finish_value,
    partial_of,
    usage_from_partials,
)
from billingkit.errors import ValidationError

__all__ = [
    "EXACT",
    "NUMERIC_STRING_PATTERN",
    "AggregationType",
    "BucketSize",
    "Cell",
    "GroupValue",
    "MeterFilter",
    "MeterSpec",
    "UsageBucketValue",
    "UsageEvent",
    "UsagePartial",
    "UsageQuery",
    "UsageResult",
    "aggregate_usage",
    "bucket_end",
    "bucket_start",
    "filters_match",
    "finish_value",
    "meter_matches",
    "partial_of",
    "property_number",
    "property_text",
    "usage_from_partials",
]


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """One usage event. ``timestamp`` must be timezone-aware (stored as UTC); ``properties`` is a
    JSON-like mapping. Raises ``ValidationError`` on ``event_id``, ``event_name``,
    ``external_customer_id``, ``timestamp``, ``properties``.
    """

    event_id: str
    event_name: str
    external_customer_id: str
    timestamp: datetime
    properties: Mapping[str, Any]
    customer_id: str | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        check_text(self.event_id, "event_id")
        check_text(self.event_name, "event_name")
        check_text(self.external_customer_id, "external_customer_id")
        object.__setattr__(self, "timestamp", ensure_utc(self.timestamp, "timestamp"))
        if not isinstance(self.properties, Mapping):
            raise ValidationError("properties must be an object", field="properties")
        if self.customer_id is not None and not isinstance(self.customer_id, str):
            raise ValidationError("customer_id must be a string", field="customer_id")
        if self.source is not None and not isinstance(self.source, str):
            raise ValidationError("source must be a string", field="source")


def _customers(value: str | Collection[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset((value,))
    if not isinstance(value, Collection) or not all(isinstance(v, str) for v in value):
        raise ValidationError(
            "external_customer_ids must be a string or a list of strings",
            field="external_customer_ids",
        )
    return frozenset(value)


@dataclass(frozen=True, slots=True)
class UsageQuery:
    """One usage question: ``meter`` over ``[start, end)`` for some customers (``None``: all).

    A billing run asks many at once (``uow.usage.aggregate([...])``). Raises ``ValidationError``
    (fields ``meter``, ``start``, ``end``, ``external_customer_ids``).
    """

    meter: MeterSpec
    start: datetime
    end: datetime
    external_customer_ids: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.meter, MeterSpec):
            raise ValidationError("meter must be a MeterSpec", field="meter")
        start = ensure_utc(self.start, "start")
        end = ensure_utc(self.end, "end")
        if end <= start:
            raise ValidationError("end must be after start", field="end")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "external_customer_ids", _customers(self.external_customer_ids))


def aggregate_usage(
    meter: MeterSpec,
    events: Iterable[UsageEvent],
    *,
    start: datetime,
    end: datetime,
    external_customer_ids: str | Collection[str] | None = None,
) -> UsageResult:
    """Aggregate ``events`` for ``meter`` over ``[start, end)`` (see the module docs for the rules).

    ``external_customer_ids``: one id, several ids, or ``None`` for every customer.
    Example: SUM of ``tokens`` over events 5, 7 and a duplicate id of the 5 → 12.
    Raises ``ValidationError`` (fields ``meter``, ``events``, ``start``, ``end``,
    ``external_customer_ids``).
    """
    if not isinstance(meter, MeterSpec):
        raise ValidationError("meter must be a MeterSpec", field="meter")
    start = ensure_utc(start, "start")
    end = ensure_utc(end, "end")
    if end <= start:
        raise ValidationError("end must be after start", field="end")
    customers = _customers(external_customer_ids)
    if isinstance(events, str | bytes | Mapping) or not isinstance(events, Iterable):
        raise ValidationError("events must be a list of UsageEvent", field="events")
    seen: set[str] = set()
    matched: list[UsageEvent] = []
    for event in events:
        if not isinstance(event, UsageEvent):
            raise ValidationError("events must be a list of UsageEvent", field="events")
        if event.event_id in seen:
            continue
        seen.add(event.event_id)
        if event.event_name != meter.event_name or not start <= event.timestamp < end:
            continue
        if customers is not None and event.external_customer_id not in customers:
            continue
        if meter.sources and event.source not in meter.sources:
            continue
        if meter_matches(meter, event.properties):
            matched.append(event)

    size = meter.bucket_size
    cells: dict[Cell, list[UsageEvent]] = {}
    for event in matched:
        bucket = None if size is None else bucket_start(event.timestamp, size)
        if meter.group_by_source:
            group = event.source
        else:
            group = None if meter.group_by is None else property_text(event.properties.get(meter.group_by))
        cells.setdefault((bucket, group), []).append(event)
    partials = {
        cell: partial_of(meter, found, end if size is None or cell[0] is None else bucket_end(cell[0], size))
        for cell, found in cells.items()
    }
    overall = None
    if size is None and meter.grouped and meter.aggregation is AggregationType.COUNT_UNIQUE:
        overall = partial_of(meter, matched, end)
    return usage_from_partials(meter, start, end, partials, overall)
