"""Prices: create (one or in bulk), read (with expansions), version, end, archive, list and search.

Rules:

- every price belongs to a live plan or add-on (``entity_type`` / ``entity_id``); subscription
  prices are created through subscriptions, never through ``POST /prices``;
- the domain's :func:`~billingkit.domain.catalog.check_price` rules hold (USAGE needs a meter and
  ARREAR, TIERED needs ``tier_mode`` and ordered tiers, PACKAGE needs ``divide_by``, no negative
  amounts, ...); the meter and the group must be live; a FIAT price needs ``amount`` unless TIERED;
- a CUSTOM price names a live pricing unit by code in ``price_unit_config``; its ``currency`` is the
  unit's base currency, and ``amount`` / ``tiers`` are the unit values times the unit's
  ``conversion_rate`` (exact, unrounded);
- ``lookup_key`` is unique among live prices of the environment;
- ``sequence``: every price added to an owner, and every version or end of one, takes
  ``1 + the highest sequence among all the owner's prices``, so the owner's highest sequence
  changes whenever its set of prices does;
- updating descriptive fields changes the price in place; changing what it charges (amount,
  billing model, tiers, transform, unit amounts) ends it at ``effective_from`` and starts a
  successor there (``parent_price_id`` links the versions, the lookup key moves to the successor);
- every validation failure is a ``ValidationError`` naming the field, raised before anything is
  written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Context as DecimalContext
from decimal import Decimal
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, Field, PrivateAttr

from billingkit.domain.access import Action
from billingkit.domain.catalog import (
    Addon,
    BillingCadence,
    Group,
    GroupEntityType,
    Meter,
    Plan,
    Price,
    PriceEntityType,
    PriceTier,
    PriceTransform,
    PriceType,
    PriceUnit,
    PriceUnitType,
    check_price,
)
from billingkit.domain.periods import MAX_PERIOD_COUNT, BillingPeriod, InvoiceCadence
from billingkit.domain.pricing import BillingModel, QuantityRounding, TierMode
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import Status
from billingkit.domain.validation import (
    INT32_MAX,
    CurrencyCode,
    DecimalText,
    Description,
    InputModel,
    Key,
    Metadata,
    NonEmptyStr,
    UtcDatetime,
    ensure_utc,
)
from billingkit.errors import AlreadyExists, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.groups import require_group
from billingkit.services.price_units import find_live_unit_by_code
from billingkit.services.records import PartialUpdate, build, get_live, new_fields, update_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "DEFAULT_GET_EXPAND",
    "PriceBulkCreate",
    "PriceCreate",
    "PriceDelete",
    "PriceDetail",
    "PriceInput",
    "PriceSearch",
    "PriceTierInput",
    "PriceUnitConfigInput",
    "PriceUpdate",
    "TransformQuantityInput",
    "add_owned_price",
    "copy_price",
    "create_price",
    "create_prices_bulk",
    "delete_price",
    "expand_price",
    "get_price",
    "get_price_by_lookup_key",
    "list_prices",
    "next_sequence",
    "parse_expand",
    "price_to_dict",
    "prices_of",
    "update_price",
]

ENTITY = "price"
LABEL = "price"
_EXACT = DecimalContext(prec=80)  # unit amount x conversion rate, never rounded
#: What ``GET /prices/{id}`` always expands.
DEFAULT_GET_EXPAND = frozenset({"meters", "pricing_unit"})
_EXPANSIONS = frozenset({"meters", "pricing_unit", "groups", "plan", "addon"})
_EXPAND_ALIASES = {
    "meter": "meters",
    "price_unit": "pricing_unit",
    "price_units": "pricing_unit",
    "pricing_units": "pricing_unit",
    "group": "groups",
    "plans": "plan",
    "addons": "addon",
}
_DESCRIPTIVE = ("description", "display_name", "lookup_key", "metadata", "group_id")
_COMMON = frozenset(
    {"id", "tenant_id", "environment_id", "created_at", "updated_at", "created_by", "updated_by"}
)


def _not_negative(value: Decimal) -> Decimal:
    if value < 0:
        raise ValueError("must not be negative")
    return value


Amount = Annotated[DecimalText, AfterValidator(_not_negative)]
Text = Annotated[str, Field(max_length=255)]
LookupKey = Key


class PriceTierInput(InputModel):
    """One tier: quantities up to ``up_to`` (inclusive; ``None`` on the last, open tier)."""

    up_to: Annotated[int, Field(ge=1)] | None = None
    unit_amount: Amount
    flat_amount: Amount | None = None

    def to_tier(self) -> PriceTier:
        return PriceTier(up_to=self.up_to, unit_amount=self.unit_amount, flat_amount=self.flat_amount)


class TransformQuantityInput(InputModel):
    """PACKAGE size: ``divide_by`` >= 1, packages rounded ``up`` (default) or ``down``."""

    divide_by: Annotated[int, Field(ge=1)]
    round: QuantityRounding = QuantityRounding.UP

    def to_transform(self) -> PriceTransform:
        return PriceTransform(divide_by=self.divide_by, round=self.round.value)


class PriceUnitConfigInput(InputModel):
    """A CUSTOM price's values in its pricing unit (named by ``price_unit``, the unit's code)."""

    price_unit: Annotated[NonEmptyStr, Field(max_length=32)]
    amount: Amount | None = None
    price_unit_tiers: list[PriceTierInput] | None = None


class PriceInput(InputModel):
    """A price's fields without its owner (plans and add-ons embed these)."""

    amount: Amount | None = None
    currency: CurrencyCode
    type: PriceType
    billing_model: BillingModel
    billing_cadence: BillingCadence = BillingCadence.RECURRING
    billing_period: BillingPeriod
    billing_period_count: Annotated[int, Field(ge=1, le=MAX_PERIOD_COUNT)] = 1
    invoice_cadence: InvoiceCadence
    tier_mode: TierMode | None = None
    tiers: list[PriceTierInput] | None = None
    transform_quantity: TransformQuantityInput | None = None
    meter_id: Annotated[str, Field(max_length=64)] | None = None
    min_quantity: Amount | None = None
    display_name: Text | None = None
    description: Description | None = None
    lookup_key: LookupKey | None = None
    group_id: Annotated[str, Field(max_length=64)] | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    trial_period_days: Annotated[int, Field(ge=0, le=INT32_MAX)] = 0
    price_unit_type: PriceUnitType = PriceUnitType.FIAT
    price_unit_config: PriceUnitConfigInput | None = None
    metadata: Metadata = {}


class PriceCreate(PriceInput):
    """``POST /prices``: a price and its owner (``PLAN`` or ``ADDON``)."""

    entity_type: PriceEntityType
    entity_id: Annotated[NonEmptyStr, Field(max_length=64)]


class PriceBulkCreate(InputModel):
    items: Annotated[list[PriceCreate], Field(min_length=1, max_length=100)]


class PriceUpdate(PartialUpdate):
    """``PUT /prices/{id}``. Descriptive fields change in place (``group_id`` ``""`` or ``None``
    ungroups, ``lookup_key`` ``""`` or ``None`` clears); the others make a new version from
    ``effective_from`` (default now)."""

    required = frozenset({"metadata", "amount", "billing_model"})

    amount: Amount | None = None
    billing_model: BillingModel | None = None
    tier_mode: TierMode | None = None
    tiers: list[PriceTierInput] | None = None
    transform_quantity: TransformQuantityInput | None = None
    price_unit_amount: Amount | None = None
    price_unit_tiers: list[PriceTierInput] | None = None
    effective_from: UtcDatetime | None = None
    description: Description | None = None
    display_name: Text | None = None
    lookup_key: Text | None = None
    group_id: Annotated[str, Field(max_length=64)] | None = None
    metadata: Metadata | None = None


class PriceDelete(InputModel):
    """``DELETE /prices/{id}`` body: a future ``end_date`` ends the price then; none archives it now."""

    end_date: UtcDatetime | None = None


class PriceSearch(SearchRequest):
    """The reference's ``PriceFilter``. Prices ended at or before now are left out unless
    ``allow_expired_prices``."""

    kind: ClassVar[str] = "prices"

    price_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    plan_ids: Annotated[
        list[str] | None,
        Searches("entity_type", Op.EQ, value=PriceEntityType.PLAN),
        Searches("entity_id", Op.IN),
    ] = None
    subscription_id: Annotated[
        str | None,
        Searches("entity_type", Op.EQ, value=PriceEntityType.SUBSCRIPTION),
        Searches("entity_id", Op.EQ),
    ] = None
    entity_type: Annotated[PriceEntityType | None, Searches("entity_type", Op.EQ)] = None
    entity_ids: Annotated[list[str] | None, Searches("entity_id", Op.IN)] = None
    meter_ids: Annotated[list[str] | None, Searches("meter_id", Op.IN)] = None
    billing_periods: Annotated[list[BillingPeriod] | None, Searches("billing_period", Op.IN)] = None
    parent_price_id: Annotated[str | None, Searches("parent_price_id", Op.EQ)] = None
    allow_expired_prices: bool = False


class PriceDetail(Price):
    """A price as reads return it: with the related resources named in ``expand`` (``meter``,
    ``pricing_unit``, ``group``, ``plan``, ``addon``); only expanded ones appear in ``to_dict``."""

    meter: Meter | None = None
    pricing_unit: PriceUnit | None = None
    group: Group | None = None
    plan: Plan | None = None
    addon: Addon | None = None
    _group_members: list[str] = PrivateAttr(default_factory=list)

    def price(self) -> Price:
        """The stored price without its expansions."""
        return Price.model_validate(self.model_dump(include=set(Price.model_fields)))

    def to_dict(self) -> dict[str, Any]:
        data = self.price().to_dict()
        for name in ("meter", "pricing_unit", "plan", "addon"):
            if name in self.model_fields_set:
                value = getattr(self, name)
                data[name] = value.to_dict() if value is not None else None
        if "group" in self.model_fields_set:
            data["group"] = self.group.to_dict(self._group_members) if self.group is not None else None
        return data


# -- helpers shared with plans and add-ons -------------------------------------------------------


def _owner_filters(entity_type: PriceEntityType | str, entity_id: str) -> tuple[Filter, ...]:
    return (
        Filter("entity_type", Op.EQ, PriceEntityType(entity_type).value),
        Filter("entity_id", Op.EQ, entity_id),
    )


def _all(uow: UnitOfWork, filters: tuple[Filter, ...], *, status: Status | None) -> list[Price]:
    """Every matching price, oldest first (ids break ties in creation order)."""
    out: list[Price] = []
    offset = 0
    while True:
        page = uow.prices.list(
            ListQuery(
                filters=filters,
                sort=(Sort("created_at", False),),
                limit=MAX_LIMIT,
                offset=offset,
                status=status,
            )
        )
        out.extend(page.items)
        offset += len(page.items)
        if not page.items or offset >= page.total:
            return out


def prices_of(
    uow: UnitOfWork, entity_type: PriceEntityType, entity_id: str, *, at: datetime | None = None
) -> list[Price]:
    """The owner's live prices, oldest first; with ``at``, only those active at that instant."""
    prices = _all(uow, _owner_filters(entity_type, entity_id), status=Status.PUBLISHED)
    if at is not None:
        prices = [p for p in prices if p.active_at(at)]
    return prices


def next_sequence(uow: UnitOfWork, entity_type: PriceEntityType, entity_id: str) -> int:
    """1 + the highest ``sequence`` among all the owner's prices (any status); 1 for the first."""
    page = uow.prices.list(
        ListQuery(
            filters=_owner_filters(entity_type, entity_id),
            sort=(Sort("sequence", True),),
            limit=1,
            status=None,
        )
    )
    return page.items[0].sequence + 1 if page.items else 1


def _prefixed(exc: ValidationError, prefix: str) -> ValidationError:
    if not prefix:
        return exc
    field = prefix + exc.field if exc.field else prefix.rstrip(".")
    return ValidationError(exc.message, field=field, details={**exc.details, "field": field})


def _convert(value: Decimal, rate: Decimal) -> Decimal:
    return _EXACT.multiply(value, rate)


def _convert_tiers(tiers: tuple[PriceTier, ...] | None, rate: Decimal) -> tuple[PriceTier, ...] | None:
    if tiers is None:
        return None
    return tuple(
        PriceTier(
            up_to=t.up_to,
            unit_amount=_convert(t.unit_amount, rate),
            flat_amount=_convert(t.flat_amount, rate) if t.flat_amount is not None else None,
        )
        for t in tiers
    )


def _tiers(values: Sequence[PriceTierInput] | None) -> tuple[PriceTier, ...] | None:
    return tuple(t.to_tier() for t in values) if values is not None else None


def _value_fields(uow: UnitOfWork, data: PriceInput) -> dict[str, Any]:
    """The stored fields of ``data`` (custom unit resolved and converted); no cross-field checks."""
    fields = data.model_dump(
        exclude={"amount", "tiers", "transform_quantity", "price_unit_config", "entity_type", "entity_id"}
    )
    fields["meter_id"] = data.meter_id or None
    fields["group_id"] = data.group_id or None
    fields["transform_quantity"] = data.transform_quantity.to_transform() if data.transform_quantity else None
    config = data.price_unit_config
    if data.price_unit_type is PriceUnitType.CUSTOM:
        if config is None:
            raise ValidationError(
                "price_unit_config is required for CUSTOM prices", field="price_unit_config"
            )
        if data.amount is not None:
            raise ValidationError(
                "a CUSTOM price's amount is derived from price_unit_config.amount", field="amount"
            )
        if data.tiers is not None:
            raise ValidationError(
                "a CUSTOM price's tiers are derived from price_unit_config.price_unit_tiers", field="tiers"
            )
        unit = find_live_unit_by_code(uow, config.price_unit)
        if unit is None:
            raise ValidationError(
                f"price unit {config.price_unit!r} not found", field="price_unit_config.price_unit"
            )
        if data.currency != unit.base_currency:
            raise ValidationError(
                f"currency must be the price unit's base currency {unit.base_currency}", field="currency"
            )
        unit_tiers = _tiers(config.price_unit_tiers)
        fields.update(
            price_unit_id=unit.id,
            price_unit=unit.code,
            conversion_rate=unit.conversion_rate,
            price_unit_amount=config.amount,
            price_unit_tiers=unit_tiers,
            amount=_convert(config.amount, unit.conversion_rate) if config.amount is not None else Decimal(0),
            tiers=_convert_tiers(unit_tiers, unit.conversion_rate),
        )
        return fields
    if config is not None:
        raise ValidationError("price_unit_config is only allowed on CUSTOM prices", field="price_unit_config")
    amount = data.amount
    if amount is None:
        if data.billing_model is not BillingModel.TIERED:
            raise ValidationError(f"amount is required for {data.billing_model.value} prices", field="amount")
        amount = Decimal(0)
    fields.update(amount=amount, tiers=_tiers(data.tiers))
    return fields


def _check_references(uow: UnitOfWork, price: Price) -> None:
    """The price's meter and group exist and are live."""
    if price.meter_id:
        meter = uow.meters.find(price.meter_id)
        if meter is None or meter.status is not Status.PUBLISHED:
            raise ValidationError(f"meter {price.meter_id} not found", field="meter_id")
    if price.group_id:
        require_group(uow, price.group_id, GroupEntityType.PRICE)


def _prepare(
    uow: UnitOfWork, ctx: Context, data: PriceInput, *, entity_type: PriceEntityType, entity_id: str
) -> Price:
    """A new, validated price for the owner (``sequence`` not yet assigned); writes nothing."""
    fields = {
        **_value_fields(uow, data),
        **new_fields(ctx, "price"),
        "entity_type": entity_type,
        "entity_id": entity_id,
    }
    price = build(Price, fields, check_price)
    _check_references(uow, price)
    return price


def _add(uow: UnitOfWork, price: Price, prefix: str) -> Price:
    """Store ``price`` with the owner's next sequence; a taken lookup key names ``prefix`` too."""
    price = price.model_copy(update={"sequence": next_sequence(uow, price.entity_type, price.entity_id)})
    try:
        return uow.prices.add(price)
    except AlreadyExists as exc:
        if not prefix:
            raise
        field = prefix + str(exc.details.get("field", "lookup_key"))
        raise AlreadyExists(exc.message, details={**exc.details, "field": field}) from None


def add_owned_price(
    uow: UnitOfWork,
    ctx: Context,
    data: PriceInput,
    *,
    entity_type: PriceEntityType,
    entity_id: str,
    field_prefix: str = "",
) -> Price:
    """Validate and add a price owned by ``entity_type``/``entity_id`` (the caller checks that the
    owner exists). Errors name ``field_prefix + field``, e.g. ``prices[2].meter_id``."""
    try:
        price = _prepare(uow, ctx, data, entity_type=entity_type, entity_id=entity_id)
    except ValidationError as exc:
        raise _prefixed(exc, field_prefix) from None
    return _add(uow, price, field_prefix)


def copy_price(
    uow: UnitOfWork, ctx: Context, price: Price, *, entity_type: PriceEntityType, entity_id: str
) -> Price:
    """A copy of ``price`` for another owner: new id, same values, no lookup key (they are
    unique), no parent, the new owner's next sequence."""
    fields = price.model_dump(include=set(Price.model_fields) - _COMMON - {"status"})
    fields.update(
        new_fields(ctx, "price"),
        entity_type=entity_type,
        entity_id=entity_id,
        lookup_key=None,
        parent_price_id=None,
    )
    return _add(uow, Price.model_validate(fields), "")


def parse_expand(expand: str | Iterable[str] | None) -> set[str]:
    """``"meters,pricing_unit"`` (or a list) as the set of known expansions; aliases such as
    ``meter``, ``price_unit``, ``group``, ``plans`` are accepted, unknown names ignored."""
    if expand is None:
        return set()
    parts = expand.split(",") if isinstance(expand, str) else list(expand)
    names = {_EXPAND_ALIASES.get(p.strip(), p.strip()) for p in parts}
    return names & _EXPANSIONS


def expand_price(uow: UnitOfWork, price: Price, expand: Iterable[str]) -> PriceDetail:
    """``price`` with the resources named in ``expand`` (see :func:`parse_expand`); a reference
    that is missing or archived expands to ``None``."""
    wanted = parse_expand(list(expand))
    extra: dict[str, Any] = {}
    members: list[str] = []
    if "meters" in wanted:
        extra["meter"] = _live(uow.meters.find(price.meter_id)) if price.meter_id else None
    if "pricing_unit" in wanted:
        extra["pricing_unit"] = (
            _live(uow.price_units.find(price.price_unit_id)) if price.price_unit_id else None
        )
    if "groups" in wanted:
        group = _live(uow.groups.find(price.group_id)) if price.group_id else None
        extra["group"] = group
        if group is not None:
            members = [
                p.id for p in _all(uow, (Filter("group_id", Op.EQ, group.id),), status=Status.PUBLISHED)
            ]
    if "plan" in wanted:
        extra["plan"] = (
            _live(uow.plans.find(price.entity_id)) if price.entity_type is PriceEntityType.PLAN else None
        )
    if "addon" in wanted:
        extra["addon"] = (
            _live(uow.addons.find(price.entity_id)) if price.entity_type is PriceEntityType.ADDON else None
        )
    base = price.price() if isinstance(price, PriceDetail) else price
    detail = PriceDetail.model_validate({**dict(base), **extra})
    detail._group_members = members
    return detail


def _live(item: Any) -> Any:
    return item if item is not None and item.status is Status.PUBLISHED else None


def price_to_dict(uow: UnitOfWork, price: Price, *, expand: set[str]) -> dict[str, Any]:
    """The wire form of ``price`` with ``meter`` ("meters"), ``pricing_unit`` ("pricing_unit"),
    ``group`` ("groups") and ``plan`` / ``addon`` ("plan" / "addon") added when expanded."""
    return expand_price(uow, price, expand).to_dict()


# -- services ---------------------------------------------------------------------------------------


def _check_owner(uow: UnitOfWork, entity_type: PriceEntityType, entity_id: str) -> None:
    if entity_type is PriceEntityType.SUBSCRIPTION:
        raise ValidationError(
            "subscription prices are created through subscriptions (price overrides), not POST /prices",
            field="entity_type",
        )
    repo: Any = uow.plans if entity_type is PriceEntityType.PLAN else uow.addons
    owner: Plan | Addon | None = repo.find(entity_id)
    if owner is None or owner.status is not Status.PUBLISHED:
        raise ValidationError(f"{entity_type.value.lower()} {entity_id} not found", field="entity_id")


def create_price(uow: UnitOfWork, ctx: Context, *, data: PriceCreate) -> Price:
    """Create a price for a live plan or add-on; ``AlreadyExists`` on a taken lookup key."""
    ctx.require(ENTITY, Action.WRITE)
    _check_owner(uow, data.entity_type, data.entity_id)
    return add_owned_price(uow, ctx, data, entity_type=data.entity_type, entity_id=data.entity_id)


def create_prices_bulk(uow: UnitOfWork, ctx: Context, *, data: PriceBulkCreate) -> list[Price]:
    """Create every item or none: all items are validated before the first is written, and an
    error names ``items[i].<field>``."""
    ctx.require(ENTITY, Action.WRITE)
    prepared: list[Price] = []
    for index, item in enumerate(data.items):
        try:
            _check_owner(uow, item.entity_type, item.entity_id)
            prepared.append(_prepare(uow, ctx, item, entity_type=item.entity_type, entity_id=item.entity_id))
        except ValidationError as exc:
            raise _prefixed(exc, f"items[{index}].") from None
    return [_add(uow, price, f"items[{index}].") for index, price in enumerate(prepared)]


def get_price(
    uow: UnitOfWork, ctx: Context, *, price_id: str, expand: str | Iterable[str] | None = None
) -> PriceDetail:
    """The live price with its meter and pricing unit expanded, plus anything in ``expand``."""
    ctx.require(ENTITY, Action.READ)
    price = get_live(uow.prices, LABEL, price_id)
    return expand_price(uow, price, DEFAULT_GET_EXPAND | parse_expand(expand))


def get_price_by_lookup_key(
    uow: UnitOfWork, ctx: Context, *, lookup_key: str, expand: str | Iterable[str] | None = None
) -> PriceDetail:
    """The live price with this lookup key, expanded like :func:`get_price`."""
    ctx.require(ENTITY, Action.READ)
    price = uow.prices.find_one(lookup_key=lookup_key)
    if price is None:
        raise NotFound(f"price with lookup_key {lookup_key!r} not found")
    return expand_price(uow, price, DEFAULT_GET_EXPAND | parse_expand(expand))


def _descriptive(uow: UnitOfWork, changes: dict[str, Any]) -> dict[str, Any]:
    out = {k: changes[k] for k in _DESCRIPTIVE if k in changes}
    if "group_id" in out:
        out["group_id"] = out["group_id"] or None
        if out["group_id"]:
            require_group(uow, out["group_id"], GroupEntityType.PRICE)
    if "lookup_key" in out:
        out["lookup_key"] = out["lookup_key"] or None
    return out


def _value_changes(current: Price, changes: dict[str, Any]) -> dict[str, Any]:
    """The changes to what the price charges that differ from its current values (stored form)."""
    custom = current.price_unit_type is PriceUnitType.CUSTOM
    out: dict[str, Any] = {}
    for name in ("amount", "tiers"):
        if name in changes and custom:
            raise ValidationError(
                f"a CUSTOM price's {name} is derived from price_unit_{name if name == 'tiers' else 'amount'}",
                field=name,
            )
    for name in ("price_unit_amount", "price_unit_tiers"):
        if name in changes and not custom:
            raise ValidationError(f"{name} is only allowed on CUSTOM prices", field=name)
    if "amount" in changes:
        out["amount"] = changes["amount"]
    if "tiers" in changes:
        out["tiers"] = _tiers(changes["tiers"])
    if custom:
        rate = current.conversion_rate or Decimal(1)
        if "price_unit_amount" in changes:
            unit_amount = changes["price_unit_amount"]
            out["price_unit_amount"] = unit_amount
            out["amount"] = _convert(unit_amount, rate) if unit_amount is not None else Decimal(0)
        if "price_unit_tiers" in changes:
            out["price_unit_tiers"] = _tiers(changes["price_unit_tiers"])
            out["tiers"] = _convert_tiers(out["price_unit_tiers"], rate)
    for name in ("billing_model", "tier_mode"):
        if name in changes:
            out[name] = changes[name]
    if "transform_quantity" in changes:
        value = changes["transform_quantity"]
        out["transform_quantity"] = value.to_transform() if value is not None else None
    differing = {k: v for k, v in out.items() if getattr(current, k) != v}
    model = differing.get("billing_model")
    if model is not None:
        # A new billing model drops the settings only the old one used, unless they were sent.
        if model is not BillingModel.TIERED:
            for name in ("tier_mode", "tiers", "price_unit_tiers"):
                if name not in changes:
                    differing[name] = None
        if model is not BillingModel.PACKAGE and "transform_quantity" not in changes:
            differing["transform_quantity"] = None
    return differing


def _update_field_name(exc: ValidationError) -> ValidationError:
    """Name a custom unit's values as ``PUT`` takes them (not as ``price_unit_config``)."""
    field = exc.field or ""
    for old, new in (("price_unit_config.amount", "price_unit_amount"), ("price_unit_config.", "")):
        if field.startswith(old):
            field = new + field.removeprefix(old)
            return ValidationError(exc.message, field=field, details={**exc.details, "field": field})
    return exc


def update_price(uow: UnitOfWork, ctx: Context, *, price_id: str, data: PriceUpdate) -> Price:
    """Change descriptive fields in place, or version the price when what it charges changes:
    the current price ends at ``effective_from`` (default now; not in the past, not before the
    price starts, before it ends) and loses its lookup key, and the returned successor starts
    there with the merged fields. Both take the owner's next ``sequence``."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.prices, LABEL, price_id)
    changes = data.changes()
    effective_from = changes.pop("effective_from", None)
    descriptive = _descriptive(uow, changes)
    values = _value_changes(current, changes)
    try:
        if not values:
            if not descriptive:
                return current
            return uow.prices.update(update_fields(current, descriptive, ctx, check_price))
        start = effective_from or ctx.now
        if start < ctx.now:
            raise ValidationError("effective_from must not be in the past", field="effective_from")
        if current.start_date is not None and start < current.start_date:
            raise ValidationError(
                "effective_from must not be before the price's start_date", field="effective_from"
            )
        if current.end_date is not None and start >= current.end_date:
            raise ValidationError(
                "effective_from must be before the price's end_date", field="effective_from"
            )
        sequence = next_sequence(uow, current.entity_type, current.entity_id)
        fields = {
            **current.model_dump(exclude=set(_COMMON | {"status"})),
            **values,
            **descriptive,
            **new_fields(ctx, "price"),
            "start_date": start,
            "end_date": current.end_date,
            "parent_price_id": current.parent_price_id or current.id,
            "sequence": sequence,
        }
        successor = build(Price, fields, check_price)
    except ValidationError as exc:
        raise _update_field_name(exc) from None
    uow.prices.update(
        current.model_copy(
            update={"end_date": start, "lookup_key": None, "sequence": sequence, **ctx.touch()}
        )
    )
    return uow.prices.add(successor)


def delete_price(uow: UnitOfWork, ctx: Context, *, price_id: str, end_date: datetime | None = None) -> Price:
    """End the price: with a future ``end_date`` it stays published until then; without one (or
    with ``end_date`` = now) it is archived and ends now. ``end_date`` must not be in the past nor
    after an end the price already has. Either way the price takes the owner's next sequence."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.prices, LABEL, price_id)
    sequence = next_sequence(uow, current.entity_type, current.entity_id)
    if end_date is not None:
        end_date = ensure_utc(end_date, "end_date")
        if end_date < ctx.now:
            raise ValidationError("end_date must not be in the past", field="end_date")
        if current.end_date is not None and end_date > current.end_date:
            raise ValidationError(
                f"end_date must not be after the price's current end_date {current.end_date.isoformat()}",
                field="end_date",
            )
        if end_date > ctx.now:
            if current.start_date is not None and end_date <= current.start_date:
                raise ValidationError("end_date must be after the price's start_date", field="end_date")
            return uow.prices.update(
                current.model_copy(update={"end_date": end_date, "sequence": sequence, **ctx.touch()})
            )
    end = current.end_date if current.end_date is not None and current.end_date <= ctx.now else ctx.now
    archived = current.model_copy(
        update={"status": Status.ARCHIVED, "end_date": end, "sequence": sequence, **ctx.touch()}
    )
    return uow.prices.update(archived)


def list_prices(uow: UnitOfWork, ctx: Context, *, search: PriceSearch) -> Page[PriceDetail]:
    """A page of prices with the expansions named in ``search.expand``.

    Without ``allow_expired_prices``, prices whose ``end_date`` is at or before now are excluded.
    The stores' filters cannot say "end_date is null or after now", so the ids of the expired
    prices that match the other filters are read first and excluded with ``id not in``: totals and
    pages stay exact, at the cost of one extra query sized by the number of expired prices.
    """
    ctx.require(ENTITY, Action.READ)
    query = search.to_query()
    if not search.allow_expired_prices:
        expired = _all(uow, (*query.filters, Filter("end_date", Op.LTE, ctx.now)), status=query.status)
        if expired:
            query = replace(query, filters=(*query.filters, Filter("id", Op.NOT_IN, [p.id for p in expired])))
    page = uow.prices.list(query)
    wanted = parse_expand(search.expand)
    items = [expand_price(uow, price, wanted) for price in page.items]
    return Page(items=items, total=page.total, limit=page.limit, offset=page.offset)
