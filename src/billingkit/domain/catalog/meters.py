"""Meters: which usage events count, and how they are aggregated into a billable quantity."""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.usage import AggregationType, BucketSize, MeterFilter, MeterSpec
from billingkit.errors import ValidationError

__all__ = ["Meter", "MeterAggregation", "MeterFilterValue", "ResetUsage", "check_meter"]


class ResetUsage(StrEnum):
    """``BILLING_PERIOD``: usage counts per period; ``NEVER``: cumulative since the start."""

    BILLING_PERIOD = "BILLING_PERIOD"
    NEVER = "NEVER"


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MeterFilterValue(_Value):
    """An event matches when ``properties[key]``, as text, is one of ``values``."""

    key: str
    values: tuple[str, ...]


class MeterAggregation(_Value):
    type: AggregationType
    field: str | None = None
    expression: str | None = None
    group_by: str | None = None
    multiplier: Decimal | None = None
    bucket_size: BucketSize | None = None


class Meter(EnvironmentResource):
    """Counts events named ``event_name`` that pass every filter (AND across keys, OR within)."""

    name: str
    event_name: str
    aggregation: MeterAggregation
    filters: tuple[MeterFilterValue, ...] = ()
    reset_usage: ResetUsage = ResetUsage.BILLING_PERIOD

    def __repr__(self) -> str:
        return f"<Meter {self.id} {self.name!r} {self.aggregation.type.value}({self.event_name})>"

    def to_spec(self) -> MeterSpec:
        """The core's view of this meter, for :func:`~billingkit.domain.usage.aggregate_usage`."""
        agg = self.aggregation
        return MeterSpec(
            event_name=self.event_name,
            aggregation=agg.type,
            field=agg.field,
            filters=tuple(MeterFilter(key=f.key, values=f.values) for f in self.filters),
            multiplier=agg.multiplier,
            bucket_size=agg.bucket_size,
            group_by=agg.group_by,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def check_meter(meter: Meter) -> MeterSpec:
    """Reject a meter the usage core cannot aggregate; return its spec.

    The core's rules apply (``aggregation.field`` for every type but COUNT, ``multiplier`` > 0 only for
    SUM_WITH_MULTIPLIER, ``bucket_size`` only for SUM and MAX); in addition ``group_by`` needs a
    bucketed MAX, filter keys are distinct, and ``expression`` (a CEL formula) is refused because
    billingkit does not evaluate CEL: storing it would bill something other than what it says.
    """
    agg = meter.aggregation
    if agg.expression is not None:
        raise ValidationError(
            "aggregation.expression is not supported; use aggregation.field", field="aggregation.expression"
        )
    if agg.group_by is not None and not (agg.type is AggregationType.MAX and agg.bucket_size is not None):
        raise ValidationError(
            "aggregation.group_by is only allowed with a bucketed MAX", field="aggregation.group_by"
        )
    keys = [f.key for f in meter.filters]
    if len(set(keys)) != len(keys):
        raise ValidationError("filters keys must be distinct", field="filters")
    for index, item in enumerate(meter.filters):
        if not item.key:
            raise ValidationError("filter key must not be empty", field=f"filters[{index}].key")
        if not item.values:
            raise ValidationError("filter values must not be empty", field=f"filters[{index}].values")
    return meter.to_spec()
