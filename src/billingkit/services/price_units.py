"""Custom pricing units (credits, tokens, ...): create, read, update, archive, list and search.

Rules: ``code`` is unique among live units of an environment (stored as given, surrounding spaces
stripped, at most 32 characters); ``base_currency`` is a 3-letter code (stored lowercase);
``conversion_rate`` > 0 means one unit is worth ``conversion_rate`` of the base currency. Only
``name`` and ``metadata`` change after creation (prices were converted at the rate). A unit cannot
be deleted while a live price uses it.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import PriceUnit
from billingkit.domain.queries import Filter, ListQuery, Op, Page
from billingkit.domain.resources import Status
from billingkit.domain.validation import CurrencyCode, DecimalText, InputModel, Metadata, Name, NonEmptyStr
from billingkit.errors import InvalidOperation, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import PartialUpdate, archive, build, get_live, new_fields, update_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "PriceUnitCreate",
    "PriceUnitSearch",
    "PriceUnitUpdate",
    "check_price_unit",
    "create_price_unit",
    "delete_price_unit",
    "find_live_unit_by_code",
    "get_price_unit",
    "get_price_unit_by_code",
    "list_price_units",
    "update_price_unit",
]

ENTITY = "price_unit"
LABEL = "price unit"
Code = Annotated[NonEmptyStr, Field(max_length=32)]
Symbol = Annotated[NonEmptyStr, Field(max_length=16)]


class PriceUnitCreate(InputModel):
    code: Code
    name: Name
    symbol: Symbol
    base_currency: CurrencyCode
    conversion_rate: DecimalText
    metadata: Metadata = {}


class PriceUnitUpdate(PartialUpdate):
    required = frozenset({"name", "metadata"})

    name: Name | None = None
    metadata: Metadata | None = None


class PriceUnitSearch(SearchRequest):
    kind: ClassVar[str] = "price_units"

    price_unit_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    codes: Annotated[list[str] | None, Searches("code", Op.IN)] = None


def check_price_unit(unit: PriceUnit) -> None:
    """``conversion_rate`` must be greater than 0."""
    if unit.conversion_rate <= 0:
        raise ValidationError("conversion_rate must be greater than 0", field="conversion_rate")


def find_live_unit_by_code(uow: UnitOfWork, code: str) -> PriceUnit | None:
    """The live unit with ``code`` (exact match), if any."""
    return uow.price_units.find_one(code=code)


def create_price_unit(uow: UnitOfWork, ctx: Context, *, data: PriceUnitCreate) -> PriceUnit:
    """Create a unit; ``AlreadyExists`` when a live unit has the code."""
    ctx.require(ENTITY, Action.WRITE)
    unit = build(PriceUnit, {**new_fields(ctx, "priceunit"), **data.model_dump()}, check_price_unit)
    return uow.price_units.add(unit)


def get_price_unit(uow: UnitOfWork, ctx: Context, *, price_unit_id: str) -> PriceUnit:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.price_units, LABEL, price_unit_id)


def get_price_unit_by_code(uow: UnitOfWork, ctx: Context, *, code: str) -> PriceUnit:
    ctx.require(ENTITY, Action.READ)
    unit = find_live_unit_by_code(uow, code)
    if unit is None:
        raise NotFound(f"price unit with code {code!r} not found")
    return unit


def update_price_unit(
    uow: UnitOfWork, ctx: Context, *, price_unit_id: str, data: PriceUnitUpdate
) -> PriceUnit:
    """Change ``name`` and/or ``metadata``; neither can be cleared."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.price_units, LABEL, price_unit_id)
    changes = data.changes()
    if not changes:
        return current
    return uow.price_units.update(update_fields(current, changes, ctx, check_price_unit))


def delete_price_unit(uow: UnitOfWork, ctx: Context, *, price_unit_id: str) -> PriceUnit:
    """Archive the unit; ``InvalidOperation`` while a live price uses it."""
    ctx.require(ENTITY, Action.WRITE)
    unit = get_live(uow.price_units, LABEL, price_unit_id)
    users = uow.prices.list(
        ListQuery(filters=(Filter("price_unit_id", Op.EQ, unit.id),), limit=1, status=Status.PUBLISHED)
    )
    if users.total:
        raise InvalidOperation(
            f"price unit {unit.code} is used by {users.total} live price(s); delete those first",
            details={"price_ids": [p.id for p in users.items]},
        )
    return archive(uow.price_units, unit, ctx)


def list_price_units(uow: UnitOfWork, ctx: Context, *, search: PriceUnitSearch) -> Page[PriceUnit]:
    ctx.require(ENTITY, Action.READ)
    return uow.price_units.list(search.to_query())
