"""Entitlements: what a plan or add-on grants of a feature (a usage limit, a switch, a value).

Rules: the feature must exist and be live, and the entitlement takes its type from it (a
``feature_type`` sent by the caller must match); fields must fit that type (``check_entitlement``);
an owner grants a live feature at most once (``AlreadyExists``); ``grant_quota`` is a whole number
>= 0 (``100``, ``"100"`` and ``"100.0"`` are 100, ``"1.5"`` is refused). The owner is a live plan or
add-on; subscription owners arrive with subscriptions. Every change records an
``entitlement.created`` / ``entitlement.updated`` / ``entitlement.deleted`` notification.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import (
    Entitlement,
    EntitlementAggregationMode,
    EntitlementEntityType,
    EntitlementGrantAllocation,
    EntitlementGrantDurationUnit,
    EntitlementGrantMeasure,
    FeatureType,
    UsageResetPeriod,
    check_entitlement,
)
from billingkit.domain.money import parse_decimal
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import Record, Status
from billingkit.domain.validation import INT32_MAX, InputModel, NonEmptyStr, UtcDatetime
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.notifications import notify
from billingkit.services.records import PartialUpdate, archive, build, get_live, new_fields, update_fields
from billingkit.services.search import Present, Searches, SearchRequest

__all__ = [
    "EntitlementBulkCreate",
    "EntitlementCreate",
    "EntitlementInput",
    "EntitlementSearch",
    "EntitlementUpdate",
    "add_owned_entitlement",
    "copy_entitlement",
    "create_entitlement",
    "create_entitlements_bulk",
    "delete_entitlement",
    "entitlements_of",
    "expand_entitlements",
    "get_entitlement",
    "list_entitlements",
    "update_entitlement",
]

ENTITY = "entitlement"
LABEL = "entitlement"
MAX_BULK_ITEMS = 1000
GRANT_FIELDS = (
    "grant_measure",
    "grant_quota",
    "grant_duration_unit",
    "grant_duration_value",
    "grant_allocation_behavior",
)

Id = Annotated[NonEmptyStr, Field(max_length=64)]
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]
Order = Annotated[int, Field(ge=-INT32_MAX, le=INT32_MAX)]


def _whole_quota(value: Any) -> Any:
    """An int, or a decimal string holding a whole number ("100", "100.0"); never a float."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str, Decimal)):
        raise ValueError("must be a whole number or a decimal string")
    try:
        number = parse_decimal(value, field="value")
    except ValidationError as exc:
        raise ValueError(exc.message.removeprefix("value ")) from None
    if number != number.to_integral_value():
        raise ValueError("must be a whole number")
    if number < 0:
        raise ValueError("must not be negative")
    if number > INT32_MAX:
        raise ValueError(f"must be at most {INT32_MAX}")
    return int(number)


#: A whole, non-negative grant quota from an int or a decimal string.
GrantQuota = Annotated[int, BeforeValidator(_whole_quota)]


class EntitlementInput(InputModel):
    """The fields of one entitlement, without its owner."""

    feature_id: Id
    feature_type: FeatureType | None = None
    is_enabled: bool = True
    usage_limit: Count | None = None
    usage_reset_period: UsageResetPeriod | None = None
    is_soft_limit: bool = False
    static_value: str | None = None
    config_value: dict[str, Any] | None = None
    aggregation_mode: EntitlementAggregationMode | None = None
    grant_measure: EntitlementGrantMeasure | None = None
    grant_quota: GrantQuota | None = None
    grant_duration_unit: EntitlementGrantDurationUnit | None = None
    grant_duration_value: Count | None = None
    grant_allocation_behavior: EntitlementGrantAllocation | None = None
    parent_entitlement_id: Id | None = None
    display_order: Order = 0
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None


class EntitlementCreate(EntitlementInput):
    """An entitlement with its owner: ``entity_type`` (``PLAN`` default) and ``entity_id``; the
    reference form ``plan_id`` alone means a plan owner."""

    entity_type: EntitlementEntityType = EntitlementEntityType.PLAN
    entity_id: Id | None = None
    plan_id: Id | None = None

    def owner(self) -> tuple[EntitlementEntityType, str]:
        """The owner as ``(entity_type, entity_id)``; ``ValidationError`` when none is named or
        ``plan_id`` contradicts the owner."""
        if self.entity_id is None:
            if self.plan_id is None:
                raise ValidationError("entity_id (or plan_id) is required", field="entity_id")
            if "entity_type" in self.model_fields_set and self.entity_type is not EntitlementEntityType.PLAN:
                raise ValidationError(
                    f"entity_id is required for {self.entity_type.value} owners", field="entity_id"
                )
            return EntitlementEntityType.PLAN, self.plan_id
        if self.plan_id is not None and (
            self.entity_type is not EntitlementEntityType.PLAN or self.plan_id != self.entity_id
        ):
            raise ValidationError("plan_id must equal entity_id of a PLAN owner", field="plan_id")
        return self.entity_type, self.entity_id


class EntitlementBulkCreate(InputModel):
    """``{"items": [...]}``: created together or not at all."""

    items: Annotated[list[EntitlementCreate], Field(min_length=1, max_length=MAX_BULK_ITEMS)]


class EntitlementUpdate(PartialUpdate):
    """Only the fields sent change. ``clear_grant_config: true`` clears every ``grant_*`` field
    (and cannot be combined with grant fields in the same request)."""

    required = frozenset({"is_enabled", "is_soft_limit"})

    is_enabled: bool | None = None
    is_soft_limit: bool | None = None
    usage_limit: Count | None = None
    usage_reset_period: UsageResetPeriod | None = None
    static_value: str | None = None
    config_value: dict[str, Any] | None = None
    aggregation_mode: EntitlementAggregationMode | None = None
    grant_measure: EntitlementGrantMeasure | None = None
    grant_quota: GrantQuota | None = None
    grant_duration_unit: EntitlementGrantDurationUnit | None = None
    grant_duration_value: Count | None = None
    grant_allocation_behavior: EntitlementGrantAllocation | None = None
    clear_grant_config: bool = False

    def changes(self) -> dict[str, Any]:
        out = super().changes()
        clear = out.pop("clear_grant_config", False)
        if clear:
            sent = [name for name in GRANT_FIELDS if name in out]
            if sent:
                raise ValidationError(
                    f"clear_grant_config cannot be combined with {sent[0]}", field="clear_grant_config"
                )
            out.update(dict.fromkeys(GRANT_FIELDS))
        return out


class EntitlementSearch(SearchRequest):
    """The reference's ``types.EntitlementFilter``; ``has_grant_config`` keeps the entitlements
    with (true) or without (false) a usage grant."""

    kind: ClassVar[str] = "entitlements"

    entitlement_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    feature_ids: Annotated[list[str] | None, Searches("feature_id", Op.IN)] = None
    plan_ids: Annotated[list[str] | None, Searches("plan_id", Op.IN)] = None
    entity_type: Annotated[EntitlementEntityType | None, Searches("entity_type", Op.EQ)] = None
    entity_ids: Annotated[list[str] | None, Searches("entity_id", Op.IN)] = None
    feature_type: Annotated[FeatureType | None, Searches("feature_type", Op.EQ)] = None
    is_enabled: Annotated[bool | None, Searches("is_enabled", Op.EQ)] = None
    has_grant_config: Annotated[bool | None, Present("grant_quota")] = None


# -- shared with plans and add-ons ---------------------------------------------------------------


def _prefixed(exc: ValidationError, prefix: str) -> ValidationError:
    """``exc`` with ``prefix`` put before its field (``feature_id`` -> ``entitlements[1].feature_id``)."""
    field = f"{prefix}{exc.field}" if exc.field else (prefix.rstrip(".") or None)
    return ValidationError(exc.message, field=field, details={**exc.details, "field": field})


def _build_owned(
    uow: UnitOfWork,
    ctx: Context,
    data: EntitlementInput,
    entity_type: EntitlementEntityType,
    entity_id: str,
) -> Entitlement:
    """A checked, not yet stored entitlement of ``data`` for the owner."""
    feature = uow.features.find(data.feature_id)
    if feature is None or feature.status is not Status.PUBLISHED:
        raise ValidationError(f"feature {data.feature_id} not found", field="feature_id")
    if data.feature_type is not None and data.feature_type is not feature.type:
        raise ValidationError(
            f"feature_type {data.feature_type.value} does not match the feature's type {feature.type.value}",
            field="feature_type",
        )
    fields = data.model_dump(include=set(EntitlementInput.model_fields))
    fields.update(
        new_fields(ctx, "ent"),
        feature_type=feature.type,
        entity_type=entity_type,
        entity_id=entity_id,
        plan_id=entity_id if entity_type is EntitlementEntityType.PLAN else None,
    )
    return build(Entitlement, fields, check_entitlement)


def _store(uow: UnitOfWork, ctx: Context, entitlement: Entitlement) -> Entitlement:
    uow.entitlements.add(entitlement)
    notify(uow, ctx, "entitlement.created", entitlement)
    return entitlement


def add_owned_entitlement(
    uow: UnitOfWork,
    ctx: Context,
    data: EntitlementInput,
    *,
    entity_type: EntitlementEntityType,
    entity_id: str,
    field_prefix: str = "",
) -> Entitlement:
    """Add an entitlement of ``data`` to the owner (the caller checks the owner exists and the
    caller's permissions). The feature must be live; the type comes from it. ``ValidationError``
    fields carry ``field_prefix``; a second live entitlement of the feature on the owner raises
    ``AlreadyExists``. Records ``entitlement.created``."""
    try:
        entitlement = _build_owned(uow, ctx, data, entity_type, entity_id)
    except ValidationError as exc:
        if not field_prefix:
            raise
        raise _prefixed(exc, field_prefix) from None
    return _store(uow, ctx, entitlement)


def _all(uow: UnitOfWork, filters: tuple[Filter, ...], sort: tuple[Sort, ...]) -> list[Entitlement]:
    out: list[Entitlement] = []
    while True:
        page = uow.entitlements.list(ListQuery(filters=filters, sort=sort, limit=MAX_LIMIT, offset=len(out)))
        out.extend(page.items)
        if not page.items or len(out) >= page.total:
            return out


def entitlements_of(uow: UnitOfWork, entity_type: EntitlementEntityType, entity_id: str) -> list[Entitlement]:
    """The owner's live entitlements, by ``display_order`` then creation."""
    filters = (
        Filter("entity_type", Op.EQ, entity_type.value),
        Filter("entity_id", Op.EQ, entity_id),
    )
    sort = (Sort("display_order", descending=False), Sort("created_at", descending=False), Sort("id", False))
    return _all(uow, filters, sort)


def copy_entitlement(
    uow: UnitOfWork,
    ctx: Context,
    entitlement: Entitlement,
    *,
    entity_type: EntitlementEntityType,
    entity_id: str,
) -> Entitlement:
    """The same grant under a new id for another owner. Records ``entitlement.created``."""
    fields = entitlement.model_dump(exclude=set(Record.model_fields) | {"tenant_id", "environment_id"})
    fields.update(
        new_fields(ctx, "ent"),
        entity_type=entity_type,
        entity_id=entity_id,
        plan_id=entity_id if entity_type is EntitlementEntityType.PLAN else None,
    )
    return _store(uow, ctx, build(Entitlement, fields, check_entitlement))


# -- the entitlements API ------------------------------------------------------------------------


def _check_owner(uow: UnitOfWork, entity_type: EntitlementEntityType, entity_id: str, prefix: str) -> None:
    if entity_type is EntitlementEntityType.SUBSCRIPTION:
        raise ValidationError(
            "entitlements of subscriptions cannot be created yet", field=f"{prefix}entity_type"
        )
    repo: Any = uow.plans if entity_type is EntitlementEntityType.PLAN else uow.addons
    owner = repo.find(entity_id)
    if owner is None or owner.status is not Status.PUBLISHED:
        label = "plan" if entity_type is EntitlementEntityType.PLAN else "add-on"
        raise ValidationError(f"{label} {entity_id} not found", field=f"{prefix}entity_id")


def _prepare(uow: UnitOfWork, ctx: Context, data: EntitlementCreate, prefix: str) -> Entitlement:
    try:
        entity_type, entity_id = data.owner()
        _check_owner(uow, entity_type, entity_id, "")
        return _build_owned(uow, ctx, data, entity_type, entity_id)
    except ValidationError as exc:
        if not prefix:
            raise
        raise _prefixed(exc, prefix) from None


def create_entitlement(uow: UnitOfWork, ctx: Context, *, data: EntitlementCreate) -> Entitlement:
    """Create an entitlement on a live plan or add-on (``ValidationError`` on ``entity_id``
    otherwise); ``AlreadyExists`` when the owner already grants the feature."""
    ctx.require(ENTITY, Action.WRITE)
    return _store(uow, ctx, _prepare(uow, ctx, data, ""))


def create_entitlements_bulk(
    uow: UnitOfWork, ctx: Context, *, data: EntitlementBulkCreate
) -> list[Entitlement]:
    """Create every item or none: all items are checked first (errors name ``items[i].<field>``),
    then stored."""
    ctx.require(ENTITY, Action.WRITE)
    prepared = [_prepare(uow, ctx, item, f"items[{i}].") for i, item in enumerate(data.items)]
    return [_store(uow, ctx, entitlement) for entitlement in prepared]


def get_entitlement(uow: UnitOfWork, ctx: Context, *, entitlement_id: str) -> Entitlement:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.entitlements, LABEL, entitlement_id)


def update_entitlement(
    uow: UnitOfWork, ctx: Context, *, entitlement_id: str, data: EntitlementUpdate
) -> Entitlement:
    """Apply the sent fields, re-check against the feature type; records ``entitlement.updated``."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.entitlements, LABEL, entitlement_id)
    changes = data.changes()
    if not changes:
        return current
    updated = uow.entitlements.update(update_fields(current, changes, ctx, check_entitlement))
    notify(uow, ctx, "entitlement.updated", updated)
    return updated


def delete_entitlement(uow: UnitOfWork, ctx: Context, *, entitlement_id: str) -> Entitlement:
    """Archive the entitlement; records ``entitlement.deleted``."""
    ctx.require(ENTITY, Action.WRITE)
    archived = archive(uow.entitlements, get_live(uow.entitlements, LABEL, entitlement_id), ctx)
    notify(uow, ctx, "entitlement.deleted", archived)
    return archived


def list_entitlements(uow: UnitOfWork, ctx: Context, *, search: EntitlementSearch) -> Page[Entitlement]:
    ctx.require(ENTITY, Action.READ)
    return uow.entitlements.list(search.to_query())


def expand_entitlements(
    uow: UnitOfWork, ctx: Context, *, entitlements: Sequence[Entitlement], expand: str | None
) -> list[dict[str, Any]]:
    """``to_dict()`` of each entitlement plus what ``expand`` names (comma separated):
    ``features`` adds ``feature``, ``plans`` adds ``plan``, ``addons`` adds ``addon`` (``None``
    when the owner is of another type or no longer exists)."""
    ctx.require(ENTITY, Action.READ)
    wanted = {part.strip().lower() for part in (expand or "").split(",") if part.strip()}
    out: list[dict[str, Any]] = []
    cache: dict[tuple[str, str], dict[str, Any] | None] = {}

    def load(kind: str, item_id: str) -> dict[str, Any] | None:
        key = (kind, item_id)
        if key not in cache:
            found = getattr(uow, kind).find(item_id)
            cache[key] = None if found is None else found.to_dict()
        return cache[key]

    for e in entitlements:
        body = e.to_dict()
        if wanted & {"feature", "features"}:
            body["feature"] = load("features", e.feature_id)
        if wanted & {"plan", "plans"}:
            body["plan"] = load("plans", e.entity_id) if e.entity_type is EntitlementEntityType.PLAN else None
        if wanted & {"addon", "addons"}:
            body["addon"] = (
                load("addons", e.entity_id) if e.entity_type is EntitlementEntityType.ADDON else None
            )
        out.append(body)
    return out
