"""Prices: create (one or in bulk), read (with expansions), version, end, archive, list and search.

Rules:

- every price belongs to a live plan, add-on or costsheet (``entity_type`` / ``entity_id``);
  subscription prices are created through subscriptions, never through ``POST /prices``; a
  costsheet's prices are USAGE prices (what the seller pays per unit of a meter), never billed;
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

This module holds the requests and the operations; :mod:`~billingkit.services.owned_prices` adds
a price to its owner (shared with plans and add-ons), :mod:`~billingkit.services.price_values`
turns input into what a price charges, :mod:`~billingkit.services.price_details` expands reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Self

from pydantic import AfterValidator, Field, ModelWrapValidatorHandler, model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import (
    Addon,
    BillingCadence,
    GroupEntityType,
    Plan,
    Price,
    PriceEntityType,
    PriceTier,
    PriceTransform,
    PriceType,
    PriceUnitType,
    check_price,
)
from billingkit.domain.catalog.prices import check_price_terms
from billingkit.domain.costsheets import Costsheet
from billingkit.domain.input_rules import prefixed, validate_naming_items
from billingkit.domain.periods import MAX_PERIOD_COUNT, BillingPeriod, InvoiceCadence
from billingkit.domain.pricing import BillingModel, QuantityRounding, TierMode
from billingkit.domain.queries import Filter, Op, Page
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
from billingkit.errors import NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.groups import require_group
from billingkit.services.owned_prices import (
    add_owned_price,
    add_price,
    all_prices,
    copy_price,
    next_sequence,
    prepare_price,
    prices_of,
)
from billingkit.services.price_details import (
    DEFAULT_GET_EXPAND,
    PriceDetail,
    expand_price,
    parse_expand,
    price_to_dict,
)
from billingkit.services.price_values import update_field_name, value_changes
from billingkit.services.records import (
    COMMON_FIELDS,
    PartialUpdate,
    build,
    get_live,
    new_fields,
    update_fields,
)
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
_DESCRIPTIVE = ("description", "display_name", "lookup_key", "metadata", "group_id")


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

    not_supported = frozenset({"filter_values"})  # per-price event filters: refused when given
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

    @model_validator(mode="after")
    def _fields_agree(self) -> Self:
        """The rules that compare this price's fields with each other (the meter, group and
        pricing unit it names are looked up by the service)."""
        config = self.price_unit_config
        custom = self.price_unit_type is PriceUnitType.CUSTOM
        if custom:
            if config is None:
                raise ValidationError(
                    "price_unit_config is required for CUSTOM prices", field="price_unit_config"
                )
            if self.amount is not None:
                raise ValidationError(
                    "a CUSTOM price's amount is derived from price_unit_config.amount", field="amount"
                )
            if self.tiers is not None:
                raise ValidationError(
                    "a CUSTOM price's tiers are derived from price_unit_config.price_unit_tiers",
                    field="tiers",
                )
        elif config is not None:
            raise ValidationError(
                "price_unit_config is only allowed on CUSTOM prices", field="price_unit_config"
            )
        elif self.amount is None and self.billing_model is not BillingModel.TIERED:
            raise ValidationError(f"amount is required for {self.billing_model.value} prices", field="amount")
        check_price_terms(
            type=self.type,
            meter_id=self.meter_id,
            invoice_cadence=self.invoice_cadence,
            billing_cadence=self.billing_cadence,
            billing_period=self.billing_period,
            billing_period_count=self.billing_period_count,
            trial_period_days=self.trial_period_days,
            start_date=self.start_date,
            end_date=self.end_date,
            billing_model=self.billing_model,
            tier_mode=self.tier_mode,
            has_tiers=bool(config.price_unit_tiers if config is not None and custom else self.tiers),
            tiers_field="price_unit_config.price_unit_tiers" if custom else "tiers",
            has_transform_quantity=self.transform_quantity is not None,
        )
        if (
            custom
            and config is not None
            and self.billing_model is not BillingModel.TIERED
            and config.amount is None
        ):
            raise ValidationError("price_unit_config.amount is required", field="price_unit_config.amount")
        return self


class PriceCreate(PriceInput):
    """``POST /prices``: a price and its owner (``PLAN`` or ``ADDON``)."""

    entity_type: PriceEntityType
    entity_id: Annotated[NonEmptyStr, Field(max_length=64)]


class PriceBulkCreate(InputModel):
    items: Annotated[list[PriceCreate], Field(min_length=1, max_length=100)]

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_item(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return validate_naming_items(data, handler, field="items", item_model=PriceCreate)


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
    not_supported = frozenset({"start_date_lt"})

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


def _check_owner(uow: UnitOfWork, entity_type: PriceEntityType, entity_id: str) -> None:
    if entity_type is PriceEntityType.SUBSCRIPTION:
        raise ValidationError(
            "subscription prices are created through subscriptions (price overrides), not POST /prices",
            field="entity_type",
        )
    repo: Any = {
        PriceEntityType.PLAN: uow.plans,
        PriceEntityType.ADDON: uow.addons,
        PriceEntityType.COSTSHEET: uow.costsheets,
    }[entity_type]
    owner: Plan | Addon | Costsheet | None = repo.find(entity_id)
    if owner is None or owner.status is not Status.PUBLISHED:
        raise ValidationError(f"{entity_type.value.lower()} {entity_id} not found", field="entity_id")


def _check_cost_price(data: PriceCreate) -> None:
    """A cost sheet's price is a USAGE price on a meter (what serving the meter's usage costs)."""
    if data.entity_type is PriceEntityType.COSTSHEET and data.type is not PriceType.USAGE:
        raise ValidationError("a costsheet price must be a USAGE price on a meter", field="type")


def create_price(uow: UnitOfWork, ctx: Context, *, data: PriceCreate) -> Price:
    """Create a price for a live plan, add-on or costsheet; ``AlreadyExists`` on a taken lookup key."""
    ctx.require(ENTITY, Action.WRITE)
    _check_owner(uow, data.entity_type, data.entity_id)
    _check_cost_price(data)
    return add_owned_price(uow, ctx, data, entity_type=data.entity_type, entity_id=data.entity_id)


def create_prices_bulk(uow: UnitOfWork, ctx: Context, *, data: PriceBulkCreate) -> list[Price]:
    """Create every item or none: all items are validated before the first is written, and an
    error names ``items[i].<field>``."""
    ctx.require(ENTITY, Action.WRITE)
    prepared: list[Price] = []
    for index, item in enumerate(data.items):
        try:
            _check_owner(uow, item.entity_type, item.entity_id)
            _check_cost_price(item)
            prepared.append(
                prepare_price(uow, ctx, item, entity_type=item.entity_type, entity_id=item.entity_id)
            )
        except ValidationError as exc:
            raise prefixed(exc, f"items[{index}].") from None
    return [add_price(uow, price, f"items[{index}].") for index, price in enumerate(prepared)]


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
    values = value_changes(current, changes)
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
            **current.model_dump(exclude=set(COMMON_FIELDS)),
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
        raise update_field_name(exc) from None
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
        expired = all_prices(uow, (*query.filters, Filter("end_date", Op.LTE, ctx.now)), status=query.status)
        if expired:
            query = replace(query, filters=(*query.filters, Filter("id", Op.NOT_IN, [p.id for p in expired])))
    page = uow.prices.list(query)
    wanted = parse_expand(search.expand)
    items = [expand_price(uow, price, wanted) for price in page.items]
    return Page(items=items, total=page.total, limit=page.limit, offset=page.offset)
