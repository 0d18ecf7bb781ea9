"""What a meter counts (:class:`MeterSpec`: event name, aggregation, field, filters, buckets,
groups) and which event properties pass its filters."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from billingkit.domain.money import parse_decimal
from billingkit.domain.usage_buckets import BucketSize
from billingkit.domain.usage_properties import check_property_key, check_text, property_text
from billingkit.domain.validation import parse_enum
from billingkit.errors import ValidationError

__all__ = ["AggregationType", "MeterFilter", "MeterSpec", "filters_match", "meter_matches"]


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


_NEEDS_FIELD = {
    AggregationType.SUM,
    AggregationType.AVG,
    AggregationType.MAX,
    AggregationType.COUNT_UNIQUE,
    AggregationType.LATEST,
    AggregationType.SUM_WITH_MULTIPLIER,
    AggregationType.WEIGHTED_SUM,
}


@dataclass(frozen=True, slots=True)
class MeterFilter:
    """Events match when ``properties[key]`` (as text) is one of ``values``."""

    key: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        check_property_key(self.key, "filters.key")
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
    ``sources`` (not empty) keeps only events whose ``source`` is one of them; ``group_by_source``
    splits the result by the event's ``source`` instead of a property (not with ``group_by``;
    events without a source fall in group ``None``). Usage analytics sets both; stored meters
    never do.
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
    sources: tuple[str, ...] = ()
    group_by_source: bool = False

    @property
    def grouped(self) -> bool:
        """Whether results are split into groups (by a property or by source)."""
        return self.group_by is not None or self.group_by_source

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        check_text(self.event_name, "event_name")
        aggregation = parse_enum(AggregationType, self.aggregation, field="aggregation.type")
        set_(self, "aggregation", aggregation)
        if aggregation in _NEEDS_FIELD or self.field is not None:
            check_property_key(self.field, "aggregation.field")
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
            check_property_key(self.group_by, "aggregation.group_by")
            if self.group_by_source:
                raise ValidationError("group by a property or by source, not both", field="group_by")
        sources = self.sources
        if isinstance(sources, list | frozenset | set):
            sources = tuple(sorted(sources))
        if not isinstance(sources, tuple) or not all(isinstance(s, str) and s for s in sources):
            raise ValidationError("sources must be a list of non-empty strings", field="sources")
        set_(self, "sources", sources)
        filters = self.filters
        if isinstance(filters, list):
            filters = tuple(filters)
        if not isinstance(filters, tuple) or not all(isinstance(f, MeterFilter) for f in filters):
            raise ValidationError("filters must be a list of MeterFilter", field="filters")
        set_(self, "filters", filters)


def filters_match(filters: Iterable[MeterFilter], properties: Mapping[str, Any]) -> bool:
    """Whether properties pass every filter: each key present, its text one of the values."""
    return all(f.key in properties and property_text(properties[f.key]) in f.values for f in filters)


def meter_matches(meter: MeterSpec, properties: Mapping[str, Any]) -> bool:
    """Whether properties pass every filter of ``meter`` (the event name is checked elsewhere)."""
    return filters_match(meter.filters, properties)
