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

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import (
    MAX_EMAX,
    MAX_PREC,
    MIN_EMIN,
    ROUND_HALF_EVEN,
    Context,
    Decimal,
    DivisionByZero,
    InvalidOperation,
    Overflow,
)
from enum import StrEnum
from typing import Any

from billingkit.domain.money import ZERO, parse_decimal
from billingkit.domain.periods import ensure_utc, epoch_seconds
from billingkit.domain.validation import parse_enum
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

NUMERIC_STRING_PATTERN = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,4})?$"
"""Which property strings count as numbers (POSIX/Python syntax), shared with the SQL stores."""
_NUMERIC_STRING = re.compile(NUMERIC_STRING_PATTERN)
_INF = float("inf")
EXACT = Context(
    prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[InvalidOperation, DivisionByZero, Overflow]
)
"""Sums and products of usage are exact at any size; only AVG and WEIGHTED_SUM divide (rounded)."""
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


def _key(value: Any, field: str) -> str:
    # A property name: any text but double quotes and control characters, so that every store
    # can address it (SQLite JSON paths quote names in double quotes).
    _text(value, field)
    if '"' in value or any(ord(ch) < 32 for ch in value):
        raise ValidationError(f"{field} must not contain double quotes or control characters", field=field)
    return value  # type: ignore[no-any-return]


def _plain(number: Decimal) -> str:
    if number == 0:
        number = number.copy_abs()  # databases have no negative zero
    return format(number, "f")


def property_text(value: Any) -> str | None:
    """A property value as text for filters, COUNT_UNIQUE and group_by; ``None`` when it has none.

    Strings as they are; booleans ``true``/``false``; numbers in plain decimal notation of the value
    as sent (``2`` → ``2``, ``2.50`` → ``2.50``, ``2.0`` → ``2.0``, ``1e+16`` →
    ``10000000000000000``, negative zero → ``0``); JSON null, objects, lists and non-finite
    numbers have no text (they match no filter and group as ``None``).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (_INF, -_INF):
            return None
        return _plain(Decimal(repr(value)))
    if isinstance(value, Decimal):
        return _plain(value) if value.is_finite() else None
    return None


def property_number(value: Any) -> Decimal | None:
    """A property value as an exact Decimal, or ``None`` when it is not numeric.

    ints and finite Decimals as they are; finite floats via their shortest repr (``0.1`` → 0.1);
    strings that are plain decimal literals (``"2.50"``, ``"-1e3"``, ASCII digits, no spaces,
    exponent of at most 4 digits) parsed exactly; booleans and everything else → ``None``.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, str):
        return Decimal(value) if _NUMERIC_STRING.fullmatch(value) else None
    if isinstance(value, float):
        if value != value or value in (_INF, -_INF):
            return None
        return Decimal(repr(value))
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    return None


@dataclass(frozen=True, slots=True)
class MeterFilter:
    """Events match when ``properties[key]`` (as text) is one of ``values``."""

    key: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        _key(self.key, "filters.key")
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
            _key(self.field, "aggregation.field")
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
            _key(self.group_by, "aggregation.group_by")
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


def bucket_end(start: datetime, size: BucketSize) -> datetime:
    """End of the bucket that starts at ``start`` (see :func:`bucket_start`)."""
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


@dataclass(frozen=True, slots=True)
class UsagePartial:
    """Exact, mergeable pieces of one aggregation over some matching events: what a usage store
    computes (in SQL or Python) before :func:`usage_from_partials` finishes the arithmetic.

    ``events``: matching events; ``numbers``: those with a numeric value; ``total``: the sum of the
    numeric values; ``maximum``; ``latest``: the value of the latest numeric event by
    ``(timestamp, event_id)``; ``weighted``: the sum of value x microseconds from the event to the
    window end; ``distinct``: distinct value texts (the only piece that cannot be merged).
    Stores fill only the pieces the meter's aggregation needs.
    """

    events: int = 0
    numbers: int = 0
    total: Decimal = ZERO
    maximum: Decimal | None = None
    latest: Decimal | None = None
    latest_key: tuple[datetime, str] | None = None
    weighted: Decimal = ZERO
    distinct: int = 0

    def merge(self, other: UsagePartial) -> UsagePartial:
        """Both partials together (``distinct`` is not mergeable and becomes 0)."""
        maximum = self.maximum
        if other.maximum is not None and (maximum is None or other.maximum > maximum):
            maximum = other.maximum
        latest, latest_key = self.latest, self.latest_key
        if other.latest_key is not None and (latest_key is None or other.latest_key > latest_key):
            latest, latest_key = other.latest, other.latest_key
        return UsagePartial(
            self.events + other.events,
            self.numbers + other.numbers,
            EXACT.add(self.total, other.total),
            maximum,
            latest,
            latest_key,
            EXACT.add(self.weighted, other.weighted),
        )


def partial_of(meter: MeterSpec, events: Iterable[UsageEvent], end: datetime) -> UsagePartial:
    """The partial of ``events`` (already matched to ``meter``) for a window ending at ``end``."""
    count = numbers = 0
    total = weighted = ZERO
    maximum: Decimal | None = None
    latest: Decimal | None = None
    latest_key: tuple[datetime, str] | None = None
    texts: set[str] = set()
    field = meter.field
    kind = meter.aggregation
    add = EXACT.add
    for event in events:
        count += 1
        if field is None:
            continue
        raw = event.properties.get(field)
        if kind is AggregationType.COUNT_UNIQUE:
            text = property_text(raw)
            if text is not None:
                texts.add(text)
            continue
        number = property_number(raw)
        if number is None:
            continue
        numbers += 1
        total = add(total, number)
        if maximum is None or number > maximum:
            maximum = number
        key = (event.timestamp, event.event_id)
        if latest_key is None or key > latest_key:
            latest, latest_key = number, key
        if kind is AggregationType.WEIGHTED_SUM:
            weighted = add(weighted, EXACT.multiply(number, Decimal(_micros(end - event.timestamp))))
    return UsagePartial(count, numbers, total, maximum, latest, latest_key, weighted, len(texts))


def finish_value(meter: MeterSpec, partial: UsagePartial, start: datetime, end: datetime) -> Decimal:
    """The aggregated value of ``partial`` over the window ``[start, end)``."""
    kind = meter.aggregation
    if kind is AggregationType.COUNT:
        return Decimal(partial.events)
    if kind is AggregationType.COUNT_UNIQUE:
        return Decimal(partial.distinct)
    if not partial.numbers:
        return ZERO
    if kind is AggregationType.SUM:
        return partial.total
    if kind is AggregationType.SUM_WITH_MULTIPLIER:
        assert meter.multiplier is not None  # MeterSpec guarantees it
        return EXACT.multiply(partial.total, meter.multiplier)
    if kind is AggregationType.AVG:
        return _AVG.divide(partial.total, Decimal(partial.numbers))
    if kind is AggregationType.MAX:
        assert partial.maximum is not None
        return partial.maximum
    if kind is AggregationType.LATEST:
        assert partial.latest is not None
        return partial.latest
    # WEIGHTED_SUM: each value weighs the share of the window left after it arrived.
    return _CTX.divide(partial.weighted, Decimal(_micros(end - start)))


def _group_order(key: str | None) -> tuple[bool, str]:
    return (key is not None, key or "")


Cell = tuple[datetime | None, str | None]


def usage_from_partials(
    meter: MeterSpec,
    start: datetime,
    end: datetime,
    cells: Mapping[Cell, UsagePartial],
    overall: UsagePartial | None = None,
) -> UsageResult:
    """Finish a usage result from partials keyed by ``(bucket start, group key)``.

    Without buckets the bucket is ``None``; without ``group_by`` the group is ``None``. ``overall``
    is the partial of all the events, needed only for COUNT_UNIQUE with ``group_by`` (distinct
    counts cannot be merged from groups); otherwise it is merged from the cells.
    """
    size = meter.bucket_size
    if size is None:
        if meter.group_by is None:
            cell = cells.get((None, None), UsagePartial())
            return UsageResult(finish_value(meter, cell, start, end), cell.events)
        keys = sorted((key for _, key in cells), key=_group_order)
        groups = tuple(
            GroupValue(key, finish_value(meter, cells[(None, key)], start, end), cells[(None, key)].events)
            for key in keys
        )
        if overall is None:
            overall = UsagePartial()
            for key in keys:
                overall = overall.merge(cells[(None, key)])
        return UsageResult(finish_value(meter, overall, start, end), overall.events, (), groups)

    per_bucket: dict[datetime, dict[str | None, UsagePartial]] = {}
    for (bucket, group_key), cell in cells.items():
        assert bucket is not None
        per_bucket.setdefault(bucket, {})[group_key] = cell
    buckets: list[UsageBucketValue] = []
    group_totals: dict[str | None, tuple[Decimal, int]] = {}
    total = ZERO
    events = 0
    for bucket in sorted(per_bucket):
        window_end = bucket_end(bucket, size)
        bucket_cells = per_bucket[bucket]
        count = sum(cell.events for cell in bucket_cells.values())
        if meter.group_by is None:
            value = finish_value(meter, bucket_cells[None], bucket, window_end)
            bucket_groups: tuple[GroupValue, ...] = ()
        else:
            bucket_groups = tuple(
                GroupValue(
                    key, finish_value(meter, bucket_cells[key], bucket, window_end), bucket_cells[key].events
                )
                for key in sorted(bucket_cells, key=_group_order)
            )
            value = ZERO
            for group in bucket_groups:
                value = EXACT.add(value, group.value)
                old_value, old_count = group_totals.get(group.key, (ZERO, 0))
                group_totals[group.key] = (EXACT.add(old_value, group.value), old_count + group.event_count)
        buckets.append(UsageBucketValue(bucket, window_end, value, count, bucket_groups))
        total = EXACT.add(total, value)
        events += count
    ordered = sorted(group_totals, key=_group_order)
    groups = tuple(GroupValue(key, *group_totals[key]) for key in ordered)
    return UsageResult(total, events, tuple(buckets), groups)


def filters_match(filters: Iterable[MeterFilter], properties: Mapping[str, Any]) -> bool:
    """Whether properties pass every filter: each key present, its text one of the values."""
    return all(f.key in properties and property_text(properties[f.key]) in f.values for f in filters)


def meter_matches(meter: MeterSpec, properties: Mapping[str, Any]) -> bool:
    """Whether properties pass every filter of ``meter`` (the event name is checked elsewhere)."""
    return filters_match(meter.filters, properties)


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
        if meter_matches(meter, event.properties):
            matched.append(event)

    size = meter.bucket_size
    cells: dict[Cell, list[UsageEvent]] = {}
    for event in matched:
        bucket = None if size is None else bucket_start(event.timestamp, size)
        group = None if meter.group_by is None else property_text(event.properties.get(meter.group_by))
        cells.setdefault((bucket, group), []).append(event)
    partials = {
        cell: partial_of(meter, found, end if size is None or cell[0] is None else bucket_end(cell[0], size))
        for cell, found in cells.items()
    }
    overall = None
    if size is None and meter.group_by is not None and meter.aggregation is AggregationType.COUNT_UNIQUE:
        overall = partial_of(meter, matched, end)
    return usage_from_partials(meter, start, end, partials, overall)
