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
``None``); with buckets, each bucket's value is the sum over its groups.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Context, Decimal, DivisionByZero, InvalidOperation, Overflow
from enum import StrEnum
from typing import Any

from billingkit.domain.money import ZERO, parse_decimal
from billingkit.domain.periods import ensure_utc, epoch_seconds
from billingkit.domain.validation import parse_enum
from billingkit.errors import ValidationError

__all__ = [
    "AggregationType",
    "BucketSize",
    "GroupValue",
    "MeterFilter",
    "MeterSpec",
    "UsageBucketValue",
    "UsageEvent",
    "UsageResult",
    "aggregate_usage",
    "bucket_start",
    "property_number",
    "property_text",
]

_CTX = Context(prec=80, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation, DivisionByZero, Overflow])
_AVG = Context(prec=28, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation, DivisionByZero, Overflow])


class AggregationType(StrEnum):
    """How a meter turns events into one number."""

    COUNT = "COUNT"
    SUM = "SUM"
    AVG = "AVG"
    MAX = "MAX"
    COUNT_UNIQUE = "COUNT_UNIQUE"
    LATEST = "LATEST"
    SUM_WITH_MULTIPLIER = "SUM_WITH_MULTIPLIER"
    WEIGHTED_SUM = "WEIGHTED_SUM"


class BucketSize(StrEnum):
    """Time bucket of a bucketed meter (wire values as in the reference API)."""

    MINUTE = "MINUTE"
    FIFTEEN_MINUTES = "15MIN"
    THIRTY_MINUTES = "30MIN"
    HOUR = "HOUR"
    THREE_HOURS = "3HOUR"
    SIX_HOURS = "6HOUR"
    TWELVE_HOURS = "12HOUR"
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"


_BUCKET_SECONDS = {
    BucketSize.MINUTE: 60,
    BucketSize.FIFTEEN_MINUTES: 15 * 60,
    BucketSize.THIRTY_MINUTES: 30 * 60,
    BucketSize.HOUR: 3600,
    BucketSize.THREE_HOURS: 3 * 3600,
    BucketSize.SIX_HOURS: 6 * 3600,
    BucketSize.TWELVE_HOURS: 12 * 3600,
    BucketSize.DAY: 86400,
}
_NEEDS_FIELD = {
    AggregationType.SUM,
    AggregationType.AVG,
    AggregationType.MAX,
    AggregationType.COUNT_UNIQUE,
    AggregationType.LATEST,
    AggregationType.SUM_WITH_MULTIPLIER,
    AggregationType.WEIGHTED_SUM,
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MONDAY_EPOCH = datetime(1970, 1, 5, tzinfo=UTC)


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{field} must be a non-empty string", field=field)
    return value


def property_text(value: Any) -> str | None:
    """A property value as text for filters, COUNT_UNIQUE and group_by; ``None`` for JSON null.

    Examples: ``"eu"`` → ``eu``; ``True`` → ``true``; ``2`` → ``2``; ``2.50`` (float) → ``2.5``.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


def property_number(value: Any) -> Decimal | None:
    """A property value as an exact Decimal, or ``None`` when it is not numeric.

    ints and finite Decimals as they are; finite floats via ``Decimal(str(x))``; decimal-literal
    strings parsed exactly; booleans and everything else → ``None``. Example: ``"2.50"`` → 2.50.
    """
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return None
            return parse_decimal(str(value), field="value")
        if isinstance(value, int | str | Decimal):
            return parse_decimal(value, field="value")
    except ValidationError:
        return None
    return None


@dataclass(frozen=True, slots=True)
class MeterFilter:
    """Events match when ``properties[key]`` (as text) is one of ``values``."""

    key: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        _text(self.key, "filters.key")
        values = self.values
        if isinstance(values, list):
            values = tuple(values)
        if not isinstance(values, tuple) or not values or not all(isinstance(v, str) for v in values):
            raise ValidationError(
                "filters.values must be a non-empty list of strings", field="filters.values"
            )
        object.__setattr__(self, "values", values)


@dataclass(frozen=True, slots=True)
class MeterSpec:
    """What a meter counts.

    ``field`` is required for every aggregation but COUNT; ``multiplier`` (> 0) is required for
    SUM_WITH_MULTIPLIER and not allowed otherwise; ``bucket_size`` only with SUM or MAX.
    Raises ``ValidationError`` on the offending field (``event_name``, ``aggregation.type``,
    ``aggregation.field``, ``aggregation.multiplier``, ``aggregation.bucket_size``,
    ``aggregation.group_by``, ``filters``).
    """

    event_name: str
    aggregation: AggregationType
    field: str | None = None
    filters: tuple[MeterFilter, ...] = ()
    multiplier: Decimal | None = None
    bucket_size: BucketSize | None = None
    group_by: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        _text(self.event_name, "event_name")
        aggregation = parse_enum(AggregationType, self.aggregation, field="aggregation.type")
        set_(self, "aggregation", aggregation)
        if aggregation in _NEEDS_FIELD or self.field is not None:
            _text(self.field, "aggregation.field")
        if aggregation is AggregationType.SUM_WITH_MULTIPLIER:
            if self.multiplier is None:
                raise ValidationError(
                    "aggregation.multiplier is required for SUM_WITH_MULTIPLIER",
                    field="aggregation.multiplier",
                )
            multiplier = parse_decimal(self.multiplier, field="aggregation.multiplier")
            if multiplier <= 0:
                raise ValidationError(
                    "aggregation.multiplier must be greater than 0", field="aggregation.multiplier"
                )
            set_(self, "multiplier", multiplier)
        elif self.multiplier is not None:
            raise ValidationError(
                "aggregation.multiplier is only allowed with SUM_WITH_MULTIPLIER",
                field="aggregation.multiplier",
            )
        if self.bucket_size is not None:
            bucket = parse_enum(BucketSize, self.bucket_size, field="aggregation.bucket_size")
            if aggregation not in (AggregationType.SUM, AggregationType.MAX):
                raise ValidationError(
                    "aggregation.bucket_size is only allowed with SUM or MAX",
                    field="aggregation.bucket_size",
                )
            set_(self, "bucket_size", bucket)
        if self.group_by is not None:
            _text(self.group_by, "aggregation.group_by")
        filters = self.filters
        if isinstance(filters, list):
            filters = tuple(filters)
        if not isinstance(filters, tuple) or not all(isinstance(f, MeterFilter) for f in filters):
            raise ValidationError("filters must be a list of MeterFilter", field="filters")
        set_(self, "filters", filters)


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
        _text(self.event_id, "event_id")
        _text(self.event_name, "event_name")
        _text(self.external_customer_id, "external_customer_id")
        object.__setattr__(self, "timestamp", ensure_utc(self.timestamp, "timestamp"))
        if not isinstance(self.properties, Mapping):
            raise ValidationError("properties must be an object", field="properties")
        if self.customer_id is not None and not isinstance(self.customer_id, str):
            raise ValidationError("customer_id must be a string", field="customer_id")
        if self.source is not None and not isinstance(self.source, str):
            raise ValidationError("source must be a string", field="source")


@dataclass(frozen=True, slots=True)
class GroupValue:
    """The value of one ``group_by`` group (``key`` None: events without the property)."""

    key: str | None
    value: Decimal
    event_count: int


@dataclass(frozen=True, slots=True)
class UsageBucketValue:
    """The value of one time bucket ``[start, end)``, with its groups when the meter groups."""

    start: datetime
    end: datetime
    value: Decimal
    event_count: int
    groups: tuple[GroupValue, ...] = ()


@dataclass(frozen=True, slots=True)
class UsageResult:
    """The usage of a meter over a window: total ``value``, ``event_count`` (matching events after
    de-duplication), ``buckets`` (bucketed meters, in time order) and ``groups`` (``group_by``
    meters, sorted by key with ``None`` first)."""

    value: Decimal
    event_count: int
    buckets: tuple[UsageBucketValue, ...] = ()
    groups: tuple[GroupValue, ...] = ()

    def group_values(self) -> dict[str | None, Decimal]:
        """``groups`` as a plain dict."""
        return {group.key: group.value for group in self.groups}


def bucket_start(instant: datetime, size: BucketSize) -> datetime:
    """Start of the UTC-aligned bucket holding ``instant``.

    Example: HOUR, 10:42:07 → 10:00:00; WEEK → the Monday 00:00 before; MONTH → the 1st 00:00.
    Raises ``ValidationError`` (fields ``timestamp``, ``bucket_size``).
    """
    instant = ensure_utc(instant, "timestamp")
    try:
        size = BucketSize(size)
    except (ValueError, TypeError):
        raise ValidationError("unknown bucket_size", field="bucket_size") from None
    if size is BucketSize.MONTH:
        return datetime(instant.year, instant.month, 1, tzinfo=UTC)
    if size is BucketSize.WEEK:
        days = (instant - _MONDAY_EPOCH).days // 7 * 7
        return _MONDAY_EPOCH + timedelta(days=days)
    step = _BUCKET_SECONDS[size]
    return _EPOCH + timedelta(seconds=epoch_seconds(instant) // step * step)


def _bucket_end(start: datetime, size: BucketSize) -> datetime:
    if size is BucketSize.MONTH:
        year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
        try:
            return datetime(year, month, 1, tzinfo=UTC)
        except ValueError:
            raise ValidationError("timestamp is out of range", field="timestamp") from None
    if size is BucketSize.WEEK:
        return start + timedelta(days=7)
    return start + timedelta(seconds=_BUCKET_SECONDS[size])


def _micros(delta: timedelta) -> int:
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _aggregate(meter: MeterSpec, events: list[UsageEvent], start: datetime, end: datetime) -> Decimal:
    """One aggregated value for ``events`` (already matched) of window ``[start, end)``."""
    kind = meter.aggregation
    if kind is AggregationType.COUNT:
        return Decimal(len(events))
    field = meter.field
    assert field is not None  # MeterSpec guarantees a field for every other aggregation
    if kind is AggregationType.COUNT_UNIQUE:
        seen = {property_text(e.properties[field]) for e in events if field in e.properties}
        seen.discard(None)
        return Decimal(len(seen))
    numbers: list[tuple[UsageEvent, Decimal]] = []
    for event in events:
        number = property_number(event.properties.get(field))
        if number is not None:
            numbers.append((event, number))
    if not numbers:
        return ZERO
    add = _CTX.add
    if kind is AggregationType.SUM or kind is AggregationType.SUM_WITH_MULTIPLIER:
        total = ZERO
        for _, number in numbers:
            total = add(total, number)
        if kind is AggregationType.SUM_WITH_MULTIPLIER:
            assert meter.multiplier is not None
            total = _CTX.multiply(total, meter.multiplier)
        return total
    if kind is AggregationType.AVG:
        total = ZERO
        for _, number in numbers:
            total = add(total, number)
        return _AVG.divide(total, Decimal(len(numbers)))
    if kind is AggregationType.MAX:
        return max(number for _, number in numbers)
    if kind is AggregationType.LATEST:
        return max(numbers, key=lambda pair: (pair[0].timestamp, pair[0].event_id))[1]
    # WEIGHTED_SUM: each value weighs the share of the window left after it arrived.
    window = _micros(end - start)
    weighted = ZERO
    for event, number in numbers:
        weighted = add(weighted, _CTX.multiply(number, Decimal(_micros(end - event.timestamp))))
    return _CTX.divide(weighted, Decimal(window))


def _group_key(meter: MeterSpec, event: UsageEvent) -> str | None:
    assert meter.group_by is not None
    return property_text(event.properties.get(meter.group_by))


def _grouped(
    meter: MeterSpec, events: list[UsageEvent], start: datetime, end: datetime
) -> tuple[GroupValue, ...]:
    groups: dict[str | None, list[UsageEvent]] = {}
    for event in events:
        groups.setdefault(_group_key(meter, event), []).append(event)
    ordered = sorted(groups, key=lambda key: (key is not None, key or ""))
    return tuple(
        GroupValue(key, _aggregate(meter, groups[key], start, end), len(groups[key])) for key in ordered
    )


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
        properties = event.properties
        if all(f.key in properties and property_text(properties[f.key]) in f.values for f in meter.filters):
            matched.append(event)

    size = meter.bucket_size
    if size is None:
        groups = () if meter.group_by is None else _grouped(meter, matched, start, end)
        return UsageResult(_aggregate(meter, matched, start, end), len(matched), (), groups)

    by_bucket: dict[datetime, list[UsageEvent]] = {}
    for event in matched:
        by_bucket.setdefault(bucket_start(event.timestamp, size), []).append(event)
    buckets: list[UsageBucketValue] = []
    group_totals: dict[str | None, tuple[Decimal, int]] = {}
    total = ZERO
    for bucket in sorted(by_bucket):
        bucket_events = by_bucket[bucket]
        bucket_end = _bucket_end(bucket, size)
        if meter.group_by is None:
            value = _aggregate(meter, bucket_events, bucket, bucket_end)
            bucket_groups: tuple[GroupValue, ...] = ()
        else:
            bucket_groups = _grouped(meter, bucket_events, bucket, bucket_end)
            value = ZERO
            for group in bucket_groups:
                value = _CTX.add(value, group.value)
                old_value, old_count = group_totals.get(group.key, (ZERO, 0))
                group_totals[group.key] = (
                    _CTX.add(old_value, group.value),
                    old_count + group.event_count,
                )
        buckets.append(UsageBucketValue(bucket, bucket_end, value, len(bucket_events), bucket_groups))
        total = _CTX.add(total, value)
    ordered = sorted(group_totals, key=lambda key: (key is not None, key or ""))
    groups = tuple(GroupValue(key, *group_totals[key]) for key in ordered)
    return UsageResult(total, len(matched), tuple(buckets), groups)
