"""Features: create, read, update, archive, clone, list and search.

Rules: every feature passes :func:`~billingkit.domain.catalog.check_feature` (a ``metered`` feature
has a meter, other types none; ``reporting_unit.conversion_rate`` > 0; alert thresholds escalate
from info to warning to critical under one condition). ``lookup_key`` is unique among live features
of an environment. A metered feature names a live meter by ``meter_id`` or brings an inline ``meter``
created in the same unit of work. ``group_id`` names a live group of entity type ``feature``. The
type and meter never change; an update's ``filters`` are added to the meter's filters (add-only, as
for meters). ``feature.created``, ``feature.updated`` and ``feature.deleted`` notifications are
recorded with the change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import (
    AlertCondition,
    Feature,
    FeatureType,
    Group,
    GroupEntityType,
    Meter,
    check_feature,
    check_meter,
)
from billingkit.domain.queries import Filter, ListQuery, Op, Page
from billingkit.domain.validation import (
    DecimalText,
    Description,
    InputModel,
    Key,
    Metadata,
    Name,
)
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.groups import group_details, require_group
from billingkit.services.meters import MeterCreate, MeterFilterInput, merge_filters, new_meter, require_meter
from billingkit.services.notifications import notify
from billingkit.services.records import PartialUpdate, archive, build, get_live, new_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "AlertSettingsInput",
    "AlertThresholdInput",
    "FeatureClone",
    "FeatureCreate",
    "FeatureDetail",
    "FeatureSearch",
    "FeatureUpdate",
    "ReportingUnitInput",
    "clone_feature",
    "create_feature",
    "delete_feature",
    "describe_features",
    "get_feature",
    "get_feature_detail",
    "list_feature_details",
    "list_features",
    "parse_expand",
    "update_feature",
]

ENTITY = "feature"
LABEL = "feature"
LookupKey = Key
Unit = Annotated[str, Field(max_length=255)]
Filters = Annotated[list[MeterFilterInput], Field(max_length=100)]


class ReportingUnitInput(InputModel):
    """``reported = quantity * conversion_rate`` (a decimal string or integer, > 0; default 1)."""

    unit_singular: Name
    unit_plural: Name
    conversion_rate: DecimalText = Decimal(1)


class AlertThresholdInput(InputModel):
    threshold: DecimalText
    condition: AlertCondition = AlertCondition.ABOVE


class AlertSettingsInput(InputModel):
    alert_enabled: bool = False
    critical: AlertThresholdInput | None = None
    warning: AlertThresholdInput | None = None
    info: AlertThresholdInput | None = None


class FeatureCreate(InputModel):
    """A metered feature needs ``meter_id`` (a live meter) or an inline ``meter``, not both."""

    name: Name
    type: FeatureType
    description: Description | None = None
    lookup_key: LookupKey | None = None
    meter_id: str | None = None
    meter: MeterCreate | None = None
    group_id: str | None = None
    metadata: Metadata = {}
    unit_singular: Unit | None = None
    unit_plural: Unit | None = None
    reporting_unit: ReportingUnitInput | None = None
    alert_settings: AlertSettingsInput | None = None


class FeatureUpdate(PartialUpdate):
    """Only the fields sent change; ``None`` clears an optional field and ``group_id=""`` leaves
    the group. ``filters`` are added to the feature's meter filters (never removed)."""

    required = frozenset({"name", "metadata"})

    name: Name | None = None
    description: Description | None = None
    metadata: Metadata | None = None
    unit_singular: Unit | None = None
    unit_plural: Unit | None = None
    reporting_unit: ReportingUnitInput | None = None
    alert_settings: AlertSettingsInput | None = None
    group_id: str | None = None
    filters: Filters | None = None


class FeatureClone(InputModel):
    """``name`` (different from the source's) and ``lookup_key`` are required; ``description`` and
    ``metadata`` override the source's when sent; everything else, the meter included, is copied."""

    name: Name
    lookup_key: LookupKey
    description: Description | None = None
    metadata: Metadata | None = None


class FeatureSearch(SearchRequest):
    """``name_contains`` matches case-insensitively; ``expand`` may hold ``meters`` and ``groups``."""

    kind: ClassVar[str] = "features"

    feature_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    lookup_key: Annotated[str | None, Searches("lookup_key", Op.EQ)] = None
    lookup_keys: Annotated[list[str] | None, Searches("lookup_key", Op.IN)] = None
    meter_ids: Annotated[list[str] | None, Searches("meter_id", Op.IN)] = None
    name_contains: Annotated[str | None, Searches("name", Op.CONTAINS)] = None


@dataclass(frozen=True, slots=True)
class FeatureDetail:
    """A feature with its expanded ``meter`` and ``group`` (``None`` when not expanded or absent);
    ``to_dict`` adds the keys ``meter`` / ``group`` only when expanded."""

    feature: Feature
    meter: Meter | None = None
    group: dict[str, Any] | None = None
    with_meter: bool = False
    with_group: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = self.feature.to_dict()
        if self.with_meter:
            data["meter"] = self.meter.to_dict() if self.meter is not None else None
        if self.with_group:
            data["group"] = self.group
        return data


def parse_expand(expand: str | None) -> frozenset[str]:
    """``"meters,groups"`` -> ``{"meters", "groups"}`` (other names are ignored)."""
    parts = {part.strip().lower() for part in (expand or "").split(",")}
    return frozenset(parts & {"meters", "groups"})


def _group_id(uow: UnitOfWork, group_id: str | None) -> str | None:
    if not group_id:
        return None
    return require_group(uow, group_id, GroupEntityType.FEATURE).id


def create_feature(uow: UnitOfWork, ctx: Context, *, data: FeatureCreate) -> Feature:
    """Create a feature (and its inline meter); ``AlreadyExists`` when a live feature has the
    lookup key."""
    ctx.require(ENTITY, Action.WRITE)
    fields = data.model_dump(exclude={"meter"})
    meter: Meter | None = None
    if data.meter is not None:
        if data.meter_id:
            raise ValidationError("give meter_id or an inline meter, not both", field="meter")
        if data.type is not FeatureType.METERED:
            raise ValidationError(f"a {data.type.value} feature has no meter", field="meter")
        ctx.require("meter", Action.WRITE)
        meter = new_meter(ctx, data.meter, field_prefix="meter.")
        fields["meter_id"] = meter.id
    elif data.meter_id:
        require_meter(uow, data.meter_id)
    else:
        fields["meter_id"] = None
    fields["group_id"] = _group_id(uow, data.group_id)
    feature = build(Feature, {**new_fields(ctx, "feat"), **fields}, check_feature)
    if meter is not None:
        uow.meters.add(meter)
    uow.features.add(feature)
    notify(uow, ctx, "feature.created", feature)
    return feature


def get_feature(uow: UnitOfWork, ctx: Context, *, feature_id: str) -> Feature:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.features, LABEL, feature_id)


def describe_features(
    uow: UnitOfWork, features: Sequence[Feature], expand: frozenset[str]
) -> list[FeatureDetail]:
    """``features`` with their meters (``"meters"`` in ``expand``) and groups (``"groups"``)."""
    meters: dict[str, Meter] = {}
    groups: dict[str, dict[str, Any]] = {}
    with_meter = "meters" in expand
    with_group = "groups" in expand
    if with_meter:
        meter_ids = sorted({f.meter_id for f in features if f.meter_id})
        if meter_ids:
            found = uow.meters.list(
                ListQuery(filters=(Filter("id", Op.IN, meter_ids),), limit=len(meter_ids), status=None)
            )
            meters = {m.id: m for m in found.items}
    if with_group:
        group_ids = sorted({f.group_id for f in features if f.group_id})
        if group_ids:
            found_groups: Page[Group] = uow.groups.list(
                ListQuery(filters=(Filter("id", Op.IN, group_ids),), limit=len(group_ids))
            )
            groups = {d.group.id: d.to_dict() for d in group_details(uow, found_groups.items)}
    return [
        FeatureDetail(
            feature=f,
            meter=meters.get(f.meter_id) if f.meter_id else None,
            group=groups.get(f.group_id) if f.group_id else None,
            with_meter=with_meter,
            with_group=with_group,
        )
        for f in features
    ]


def get_feature_detail(
    uow: UnitOfWork, ctx: Context, *, feature_id: str, expand: frozenset[str] = frozenset()
) -> FeatureDetail:
    """The feature; a metered feature always carries its ``meter``, ``"groups"`` adds ``group``."""
    feature = get_feature(uow, ctx, feature_id=feature_id)
    if feature.type is FeatureType.METERED:
        expand = expand | {"meters"}
    return describe_features(uow, [feature], expand)[0]


def _feature_filters(
    uow: UnitOfWork, ctx: Context, feature: Feature, filters: Sequence[MeterFilterInput]
) -> bool:
    """Add ``filters`` to the feature's meter; whether anything was added."""
    if feature.meter_id is None:
        raise ValidationError(f"a {feature.type.value} feature has no meter to filter", field="filters")
    ctx.require("meter", Action.WRITE)
    meter = get_live(uow.meters, "meter", feature.meter_id)
    merged = merge_filters(meter.filters, filters)
    if merged == meter.filters:
        return False
    updated = meter.model_copy(update={"filters": merged, **ctx.touch()})
    check_meter(updated)
    uow.meters.update(updated)
    return True


def update_feature(uow: UnitOfWork, ctx: Context, *, feature_id: str, data: FeatureUpdate) -> Feature:
    """Change the fields sent (see :class:`FeatureUpdate`); records ``feature.updated``."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.features, LABEL, feature_id)
    changes = data.changes()
    filters = changes.pop("filters", None)
    if "group_id" in changes:
        changes["group_id"] = _group_id(uow, changes["group_id"])
    for key in ("reporting_unit", "alert_settings"):
        if changes.get(key) is not None:
            changes[key] = changes[key].model_dump()
    meter_changed = bool(filters) and _feature_filters(uow, ctx, current, filters)
    fields = {**current.model_dump(), **changes}
    if fields == current.model_dump() and not meter_changed:
        return current
    updated = build(Feature, {**fields, **ctx.touch()}, check_feature)
    uow.features.update(updated)
    notify(uow, ctx, "feature.updated", updated)
    return updated


def delete_feature(uow: UnitOfWork, ctx: Context, *, feature_id: str) -> Feature:
    """Archive the feature (it reads as not found afterwards); records ``feature.deleted``.
    ``InvalidOperation`` while a live entitlement grants it: delete those first."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.features, LABEL, feature_id)
    entitlement = uow.entitlements.find_one(feature_id=feature_id)
    if entitlement is not None:
        raise InvalidOperation(
            f"feature {feature_id} is granted by entitlement {entitlement.id}; delete the entitlement first",
            details={"entitlement_id": entitlement.id},
        )
    archived = archive(uow.features, current, ctx)
    notify(uow, ctx, "feature.deleted", archived)
    return archived


def clone_feature(uow: UnitOfWork, ctx: Context, *, feature_id: str, data: FeatureClone) -> Feature:
    """A new feature copying the source (meter and group references included) under a new
    ``name`` and ``lookup_key``; records ``feature.created``."""
    ctx.require(ENTITY, Action.WRITE)
    source = get_live(uow.features, LABEL, feature_id)
    if data.name == source.name:
        raise ValidationError("name must differ from the source feature's name", field="name")
    fields = source.model_dump(exclude={"id", "created_at", "updated_at", "created_by", "updated_by"})
    fields.update(name=data.name, lookup_key=data.lookup_key)
    if "description" in data.model_fields_set:
        fields["description"] = data.description
    if data.metadata is not None:
        fields["metadata"] = data.metadata
    if source.meter_id is not None:
        require_meter(uow, source.meter_id)
    if source.group_id is not None:
        require_group(uow, source.group_id, GroupEntityType.FEATURE)
    clone = build(Feature, {**fields, **new_fields(ctx, "feat")}, check_feature)
    uow.features.add(clone)
    notify(uow, ctx, "feature.created", clone)
    return clone


def list_features(uow: UnitOfWork, ctx: Context, *, search: FeatureSearch) -> Page[Feature]:
    ctx.require(ENTITY, Action.READ)
    return uow.features.list(search.to_query())


def list_feature_details(uow: UnitOfWork, ctx: Context, *, search: FeatureSearch) -> Page[FeatureDetail]:
    """A page of features expanded as ``search.expand`` asks (``meters``, ``groups``)."""
    page = list_features(uow, ctx, search=search)
    items = describe_features(uow, page.items, parse_expand(search.expand))
    return Page(items, page.total, page.limit, page.offset)
