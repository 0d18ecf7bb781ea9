"""Meters: create, read, update, archive, list and search.

Rules: every meter passes :func:`~billingkit.domain.catalog.check_meter`, so it is exactly what the
usage core can aggregate. Once created, a meter's ``event_name``, ``aggregation`` and
``reset_usage`` never change (usage already billed through it must stay explainable); only its
``name`` changes, and ``filters`` can only be added to (new keys, or new values of a key), never
removed. A meter used by a live feature or a live price cannot be deleted.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import Meter, MeterAggregation, MeterFilterValue, ResetUsage, check_meter
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.usage import AggregationType, BucketSize
from billingkit.domain.validation import DecimalText, InputModel, Name, NonEmptyStr
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import archive, build, get_live, new_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "AggregationInput",
    "MeterCreate",
    "MeterFilterInput",
    "MeterSearch",
    "MeterUpdate",
    "create_meter",
    "delete_meter",
    "get_meter",
    "list_meters",
    "list_meters_for_event",
    "merge_filters",
    "meters_for_event",
    "meters_for_events",
    "new_meter",
    "require_meter",
    "update_meter",
]

ENTITY = "meter"
LABEL = "meter"


class AggregationInput(InputModel):
    """``type`` plus what it needs: ``field`` (all but COUNT), ``multiplier`` (SUM_WITH_MULTIPLIER,
    a decimal string > 0), ``bucket_size`` (SUM or MAX), ``group_by`` (bucketed MAX). An empty
    string means "not set", as reference clients send it."""

    type: AggregationType
    field: Annotated[str, Field(max_length=255)] | None = None
    expression: str | None = None
    group_by: Annotated[str, Field(max_length=255)] | None = None
    multiplier: DecimalText | None = None
    bucket_size: BucketSize | None = None

    @field_validator("field", "expression", "group_by", "multiplier", "bucket_size", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


class MeterFilterInput(InputModel):
    """An event matches when ``properties[key]`` (as text) is one of ``values``."""

    key: Annotated[NonEmptyStr, Field(max_length=255)]
    values: Annotated[list[str], Field(min_length=1, max_length=1000)]


class MeterCreate(InputModel):
    name: Name
    event_name: Name
    aggregation: AggregationInput
    filters: Annotated[list[MeterFilterInput], Field(max_length=100)] = []
    reset_usage: ResetUsage = ResetUsage.BILLING_PERIOD


class MeterUpdate(InputModel):
    """``name`` changes; ``filters`` are merged into the existing ones (add-only). ``event_name``,
    ``aggregation`` and ``reset_usage`` may be sent only with their current values."""

    name: Name | None = None
    filters: Annotated[list[MeterFilterInput], Field(max_length=100)] | None = None
    event_name: str | None = None
    aggregation: AggregationInput | None = None
    reset_usage: ResetUsage | None = None


class MeterSearch(SearchRequest):
    kind: ClassVar[str] = "meters"

    meter_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    event_name: Annotated[str | None, Searches("event_name", Op.EQ)] = None


def _unique(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def merge_filters(
    current: Sequence[MeterFilterValue], added: Sequence[MeterFilterInput]
) -> tuple[MeterFilterValue, ...]:
    """``current`` with ``added`` merged in: a new key is appended, new values of a known key are
    appended to it; nothing is ever removed or reordered."""
    merged: dict[str, tuple[str, ...]] = {f.key: f.values for f in current}
    for item in added:
        merged[item.key] = _unique([*merged.get(item.key, ()), *item.values])
    return tuple(MeterFilterValue(key=key, values=values) for key, values in merged.items())


def new_meter(ctx: Context, data: MeterCreate, *, field_prefix: str = "") -> Meter:
    """A new (unsaved) meter from ``data``, checked by ``check_meter``; errors name the field with
    ``field_prefix`` in front (``meter.`` for a feature's inline meter)."""
    fields = data.model_dump()
    fields["filters"] = [{"key": f["key"], "values": _unique(f["values"])} for f in fields["filters"]]
    try:
        return build(Meter, {**new_fields(ctx, "meter"), **fields}, check_meter)
    except ValidationError as exc:
        if not field_prefix:
            raise
        field = f"{field_prefix}{exc.field}" if exc.field else field_prefix.rstrip(".")
        raise ValidationError(f"{field_prefix}{exc.message}", field=field) from None


def require_meter(uow: UnitOfWork, meter_id: str, *, field: str = "meter_id") -> Meter:
    """The live meter ``meter_id`` for something that references it; else ``ValidationError`` on
    ``field``."""
    meter = uow.meters.find(meter_id)
    if meter is None or meter.status.value != "published":
        raise ValidationError(f"meter {meter_id} not found", field=field)
    return meter


def create_meter(uow: UnitOfWork, ctx: Context, *, data: MeterCreate) -> Meter:
    """Create a meter (see the module rules)."""
    ctx.require(ENTITY, Action.WRITE)
    return uow.meters.add(new_meter(ctx, data))


def get_meter(uow: UnitOfWork, ctx: Context, *, meter_id: str) -> Meter:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.meters, LABEL, meter_id)


def _refuse_change(field: str, sent: object, current: object) -> None:
    if sent is not None and sent != current:
        raise ValidationError(
            f"{field} cannot be changed: usage already billed through this meter must stay explainable;"
            " create a new meter instead",
            field=field,
        )


def update_meter(uow: UnitOfWork, ctx: Context, *, meter_id: str, data: MeterUpdate) -> Meter:
    """Rename the meter and/or add filters. Filters sent are merged into the existing ones (new
    keys appended, new values added to a key); existing keys and values are never removed.
    A different ``event_name``, ``aggregation`` or ``reset_usage`` is a ``ValidationError``."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.meters, LABEL, meter_id)
    sent = data.model_fields_set
    if "name" in sent and data.name is None:
        raise ValidationError("name cannot be cleared", field="name")
    _refuse_change("event_name", data.event_name, current.event_name)
    if data.aggregation is not None:
        aggregation = MeterAggregation.model_validate(data.aggregation.model_dump())
        _refuse_change("aggregation", aggregation, current.aggregation)
    _refuse_change("reset_usage", data.reset_usage, current.reset_usage)
    changes: dict[str, Any] = {}
    if data.name is not None and data.name != current.name:
        changes["name"] = data.name
    if data.filters:
        filters = merge_filters(current.filters, data.filters)
        if filters != current.filters:
            changes["filters"] = filters
    if not changes:
        return current
    updated = current.model_copy(update={**changes, **ctx.touch()})
    check_meter(updated)
    return uow.meters.update(updated)


def delete_meter(uow: UnitOfWork, ctx: Context, *, meter_id: str) -> Meter:
    """Archive the meter; ``InvalidOperation`` while a live feature or live price uses it."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.meters, LABEL, meter_id)
    feature = uow.features.find_one(meter_id=meter_id)
    if feature is not None:
        raise InvalidOperation(
            f"meter {meter_id} is used by feature {feature.id}; delete the feature first",
            details={"feature_id": feature.id},
        )
    price = uow.prices.find_one(meter_id=meter_id)
    if price is not None:
        raise InvalidOperation(
            f"meter {meter_id} is used by price {price.id}; delete the price first",
            details={"price_id": price.id},
        )
    return archive(uow.meters, current, ctx)


def list_meters(uow: UnitOfWork, ctx: Context, *, search: MeterSearch) -> Page[Meter]:
    ctx.require(ENTITY, Action.READ)
    return uow.meters.list(search.to_query())


def meters_for_events(uow: UnitOfWork, event_names: Collection[str]) -> dict[str, list[Meter]]:
    """Every live meter counting events with one of ``event_names``, by name, oldest first; one
    query per page of meters however many names. No permission check: for services that checked
    their own (ingestion needs only ``event`` write)."""
    found: dict[str, list[Meter]] = {name: [] for name in event_names}
    seen = 0
    while found:
        page = uow.meters.list(
            ListQuery(
                filters=(Filter("event_name", Op.IN, sorted(found)),),
                sort=(Sort("created_at", descending=False),),
                limit=MAX_LIMIT,
                offset=seen,
            )
        )
        for meter in page.items:
            found[meter.event_name].append(meter)
        seen += len(page.items)
        if not page.items or seen >= page.total:
            break
    return found


def meters_for_event(uow: UnitOfWork, event_name: str) -> list[Meter]:
    """Every live meter counting events named ``event_name``, oldest first (no permission check)."""
    return meters_for_events(uow, (event_name,))[event_name]


def list_meters_for_event(uow: UnitOfWork, ctx: Context, *, event_name: str) -> list[Meter]:
    """Every live meter counting events named ``event_name``, oldest first (needs meter read)."""
    ctx.require(ENTITY, Action.READ)
    return meters_for_event(uow, event_name)
