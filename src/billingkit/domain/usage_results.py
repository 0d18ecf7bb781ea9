"""How matched events become a :class:`UsageResult`: exact, mergeable partials (what a usage store
computes in SQL or Python), finished per window, bucket and group.

Sums and products are exact at any size; only AVG (28 significant digits) and WEIGHTED_SUM
(80) divide, rounding half to even.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
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
from typing import TYPE_CHECKING

from billingkit.domain.money import ZERO
from billingkit.domain.usage_buckets import bucket_end
from billingkit.domain.usage_meters import AggregationType, MeterSpec
from billingkit.domain.usage_properties import property_number, property_text

if TYPE_CHECKING:
    from billingkit.domain.usage import UsageEvent

__all__ = [
    "EXACT",
    "Cell",
    "GroupValue",
    "UsageBucketValue",
    "UsagePartial",
    "UsageResult",
    "finish_value",
    "partial_of",
    "usage_from_partials",
]

EXACT = Context(
    prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[InvalidOperation, DivisionByZero, Overflow]
)
"""Sums and products of usage are exact at any size; only AVG and WEIGHTED_SUM divide (rounded)."""
_CTX = Context(prec=80, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation, DivisionByZero, Overflow])
_AVG = Context(prec=28, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation, DivisionByZero, Overflow])


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
        if not meter.grouped:
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
        if not meter.grouped:
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
