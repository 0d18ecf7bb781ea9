"""Usage reports: aggregate stored events ad hoc, by meter, or for many questions at once.

Rules:
- Reading usage needs ``event`` read (``event_reader``), like reading events.
- The window is ``[start_time, end_time)``; ``end_time`` defaults to now and ``start_time`` to seven
  days before it (as event queries do). Both must carry a time zone.
- The customer is ``customer_id`` (billingkit's id; it wins) or ``external_customer_id``; with
  neither, every customer's events count.
- ``window_size`` (or its synonym ``bucket_size``) splits the report into time buckets aligned in
  UTC; the total is the sum of the bucket values, exactly as billing prices a bucketed meter, so it
  is allowed with SUM and MAX only. ``timezone`` may only be UTC and ``billing_anchor`` is refused:
  buckets are not aligned to local time or anchors.
- ``filters`` ``{key: [values]}`` narrow the events further (AND with a meter's own filters);
  ``group_by`` ``["properties.<name>"]`` (or ``group_by_property``) splits the value by a property.
- :func:`aggregate_usage_batch` answers many (meter, customers, window) questions in a few
  statements; billing runs use it instead of one query per line item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field, field_validator

from billingkit.display.layout import Display
from billingkit.display.reports import usage_report_display
from billingkit.domain.access import Action
from billingkit.domain.display import Displayed
from billingkit.domain.resources import Status, iso
from billingkit.domain.usage import (
    AggregationType,
    BucketSize,
    MeterFilter,
    MeterSpec,
    UsageQuery,
    UsageResult,
)
from billingkit.domain.validation import DecimalText, InputModel, UtcDatetime
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import get_live

__all__ = [
    "MeterUsageRequest",
    "UsageReport",
    "UsageRequest",
    "UsageWindow",
    "aggregate_usage_batch",
    "usage_by_meter",
    "usage_report",
]

ENTITY = "event"
DEFAULT_WINDOW = timedelta(days=7)
Key = Annotated[str, Field(min_length=1, max_length=255)]


class _Window(InputModel):
    external_customer_id: Key | None = None
    customer_id: Key | None = None
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None
    window_size: BucketSize | None = None
    bucket_size: BucketSize | None = None
    filters: dict[Key, Annotated[list[str], Field(min_length=1, max_length=1000)]] | None = None
    timezone: str | None = None
    billing_anchor: UtcDatetime | None = None

    @field_validator(
        "window_size", "bucket_size", "timezone", "customer_id", "external_customer_id", mode="before"
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class UsageRequest(_Window):
    """``POST /events/usage``: an ad-hoc aggregation over ``event_name``."""

    event_name: Key
    aggregation_type: AggregationType
    property_name: Annotated[str, Field(max_length=255)] | None = None
    multiplier: DecimalText | None = None
    group_by: Annotated[list[str], Field(max_length=1)] | None = None
    group_by_property: Annotated[str, Field(max_length=255)] | None = None


class MeterUsageRequest(_Window):
    """``POST /events/usage/meter``: the usage a stored meter counts."""

    meter_id: Key


@dataclass(frozen=True, slots=True)
class UsageWindow:
    """One time bucket of a usage report: ``[window_start, window_end)`` and its value.

    Over REST this is an item of ``results``, where ``window_start`` travels as ``window_size``
    (the reference's name for it: it holds the bucket's start instant, not a size).
    """

    window_start: datetime
    window_end: datetime
    value: Decimal
    event_count: int


class UsageReport(Displayed):
    """A usage result with what it was computed for; ``to_dict()`` is the REST shape.

    ``value``, ``event_count``: the window's total; ``results``: its buckets as
    :class:`UsageWindow` (``window_size`` buckets only, else empty); ``result``: the full
    :class:`~billingkit.domain.usage.UsageResult` (groups too).
    """

    __slots__ = ("aggregation", "event_name", "meter_id", "result")

    def __init__(
        self, result: UsageResult, event_name: str, aggregation: AggregationType, meter_id: str | None = None
    ) -> None:
        self.result = result
        self.event_name = event_name
        self.aggregation = aggregation
        self.meter_id = meter_id

    @property
    def value(self) -> Decimal:
        return self.result.value

    @property
    def event_count(self) -> int:
        return self.result.event_count

    @property
    def results(self) -> tuple[UsageWindow, ...]:
        return tuple(
            UsageWindow(bucket.start, bucket.end, bucket.value, bucket.event_count)
            for bucket in self.result.buckets
        )

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``{event_name, type, value, results: [{window_size, value}]}`` plus
        ``event_count``, ``groups`` and (by meter) ``meter_id``. Values are decimal strings.

        Wire names: ``type`` is :attr:`aggregation`; ``results[].window_size`` is
        :attr:`UsageWindow.window_start` (an instant, named as the reference names it) and
        ``results[].window_end`` is :attr:`UsageWindow.window_end`."""
        body: dict[str, Any] = {
            "event_name": self.event_name,
            "type": str(self.aggregation),
            "value": str(self.result.value),
            "event_count": self.result.event_count,
            "results": [
                {
                    "window_size": iso(window.window_start),
                    "window_end": iso(window.window_end),
                    "value": str(window.value),
                    "event_count": window.event_count,
                }
                for window in self.results
            ],
            "groups": [
                {"group": group.key, "value": str(group.value), "event_count": group.event_count}
                for group in self.result.groups
            ],
        }
        if self.meter_id is not None:
            body["meter_id"] = self.meter_id
        return body

    def __repr__(self) -> str:
        return f"UsageReport({self.event_name} {self.aggregation}: {self.result.value})"

    def _display_(self) -> Display:
        """What ``str()``, ``show()`` and ``_repr_html_()`` show: the total, buckets, groups."""
        return usage_report_display(
            event_name=self.event_name,
            aggregation=str(self.aggregation),
            meter_id=self.meter_id,
            result=self.result,
        )

    def to_pandas(self, *, money: str = "decimal") -> Any:
        """This report as a DataFrame (the ``notebook`` extra): one row per time bucket (per
        group and bucket for a grouping meter), else per group, else one row with the total;
        ``value`` is ``Decimal`` unless ``money="float"``."""
        from billingkit.display.frames import usage_frame

        return usage_frame(
            self.result,
            event_name=self.event_name,
            aggregation=str(self.aggregation),
            meter_id=self.meter_id,
            money=money,
        )


def _window(
    uow: UnitOfWork, ctx: Context, request: _Window
) -> tuple[datetime, datetime, frozenset[str] | None]:
    if request.timezone is not None and request.timezone.upper() not in ("UTC", "ETC/UTC", "Z"):
        raise ValidationError("only UTC buckets are supported; omit timezone or send UTC", field="timezone")
    if request.billing_anchor is not None:
        raise ValidationError(
            "billing_anchor is not supported: buckets align to UTC calendar boundaries",
            field="billing_anchor",
        )
    end = request.end_time or ctx.now
    start = request.start_time or end - DEFAULT_WINDOW
    if end <= start:
        raise ValidationError("end_time must be after start_time", field="end_time")
    customers: frozenset[str] | None = None
    if request.customer_id is not None:
        customer = uow.customers.find(request.customer_id)
        if customer is None or customer.status is not Status.PUBLISHED:
            raise ValidationError(f"customer {request.customer_id} not found", field="customer_id")
        customers = frozenset((customer.external_id,))
    elif request.external_customer_id is not None:
        customers = frozenset((request.external_customer_id,))
    return start, end, customers


def _bucket(request: _Window) -> BucketSize | None:
    if request.window_size and request.bucket_size and request.window_size != request.bucket_size:
        raise ValidationError("give window_size or bucket_size, not two different sizes", field="bucket_size")
    return request.window_size or request.bucket_size


def _extra_filters(request: _Window) -> tuple[MeterFilter, ...]:
    return tuple(MeterFilter(key, tuple(values)) for key, values in (request.filters or {}).items())


def _spec(build: Mapping[str, Any], bucket_field: str) -> MeterSpec:
    try:
        return MeterSpec(**build)
    except ValidationError as exc:
        field = {
            "aggregation.field": "property_name",
            "aggregation.multiplier": "multiplier",
            "aggregation.bucket_size": bucket_field,
            "aggregation.group_by": "group_by",
            "aggregation.type": "aggregation_type",
            "filters.key": "filters",
            "filters.values": "filters",
        }.get(exc.field or "", exc.field)
        raise ValidationError(exc.message, field=field) from None


def _bucket_field(request: _Window) -> str:
    return "window_size" if request.window_size else "bucket_size"


def usage_report(uow: UnitOfWork, ctx: Context, *, request: UsageRequest) -> UsageReport:
    """``POST /events/usage``."""
    ctx.require(ENTITY, Action.READ)
    group = request.group_by_property or None
    for item in request.group_by or ():
        name = item.removeprefix("properties.")
        if name == item or not name:
            raise ValidationError("group_by supports one property, as properties.<name>", field="group_by")
        group = name
    kind = request.aggregation_type
    spec = _spec(
        {
            "event_name": request.event_name,
            "aggregation": kind,
            "field": None if kind is AggregationType.COUNT else request.property_name or None,
            "filters": _extra_filters(request),
            "multiplier": request.multiplier,
            "bucket_size": _bucket(request),
            "group_by": group,
        },
        _bucket_field(request),
    )
    start, end, customers = _window(uow, ctx, request)
    (result,) = uow.usage.aggregate([UsageQuery(spec, start, end, customers)])
    return UsageReport(result, spec.event_name, spec.aggregation)


def usage_by_meter(uow: UnitOfWork, ctx: Context, *, request: MeterUsageRequest) -> UsageReport:
    """``POST /events/usage/meter``: the meter's aggregation and filters, plus the request's."""
    ctx.require(ENTITY, Action.READ)
    meter = get_live(uow.meters, "meter", request.meter_id)
    base = meter.to_spec()
    spec = _spec(
        {
            "event_name": base.event_name,
            "aggregation": base.aggregation,
            "field": base.field,
            "filters": base.filters + _extra_filters(request),
            "multiplier": base.multiplier,
            "bucket_size": _bucket(request) or base.bucket_size,
            "group_by": base.group_by,
        },
        _bucket_field(request),
    )
    start, end, customers = _window(uow, ctx, request)
    (result,) = uow.usage.aggregate([UsageQuery(spec, start, end, customers)])
    return UsageReport(result, spec.event_name, spec.aggregation, meter.id)


def aggregate_usage_batch(
    uow: UnitOfWork, ctx: Context, *, queries: Sequence[UsageQuery]
) -> list[UsageResult]:
    """One result per question, in order (see :class:`~billingkit.ports.UsageStore`)."""
    ctx.require(ENTITY, Action.READ)
    if not all(isinstance(q, UsageQuery) for q in queries):
        raise ValidationError("queries must be UsageQuery objects", field="queries")
    return uow.usage.aggregate(list(queries))
