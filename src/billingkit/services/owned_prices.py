"""The prices a plan or add-on owns: listing them, their ``sequence``, and adding one.

Plans, add-ons and ``POST /prices`` all add prices through :func:`add_owned_price` (or
:func:`copy_price`), so every price is validated the same way and takes
``1 + the highest sequence among all the owner's prices``: the owner's highest sequence changes
whenever its set of prices does, which is how a subscription knows its plan has changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from billingkit.domain.catalog import GroupEntityType, Price, PriceEntityType, check_price
from billingkit.domain.input_rules import prefixed
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Status
from billingkit.errors import AlreadyExists, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.groups import require_group
from billingkit.services.price_values import value_fields
from billingkit.services.records import COMMON_FIELDS, build, new_fields

if TYPE_CHECKING:
    from billingkit.services.prices import PriceInput

__all__ = [
    "add_owned_price",
    "add_price",
    "all_prices",
    "copy_price",
    "next_sequence",
    "owner_filters",
    "prepare_price",
    "prices_of",
]


def owner_filters(entity_type: PriceEntityType | str, entity_id: str) -> tuple[Filter, ...]:
    return (
        Filter("entity_type", Op.EQ, PriceEntityType(entity_type).value),
        Filter("entity_id", Op.EQ, entity_id),
    )


def all_prices(uow: UnitOfWork, filters: tuple[Filter, ...], *, status: Status | None) -> list[Price]:
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
    prices = all_prices(uow, owner_filters(entity_type, entity_id), status=Status.PUBLISHED)
    if at is not None:
        prices = [p for p in prices if p.active_at(at)]
    return prices


def next_sequence(uow: UnitOfWork, entity_type: PriceEntityType, entity_id: str) -> int:
    """1 + the highest ``sequence`` among all the owner's prices (any status); 1 for the first."""
    page = uow.prices.list(
        ListQuery(
            filters=owner_filters(entity_type, entity_id),
            sort=(Sort("sequence", True),),
            limit=1,
            status=None,
        )
    )
    return page.items[0].sequence + 1 if page.items else 1


def _check_references(uow: UnitOfWork, price: Price) -> None:
    """The price's meter and group exist and are live."""
    if price.meter_id:
        meter = uow.meters.find(price.meter_id)
        if meter is None or meter.status is not Status.PUBLISHED:
            raise ValidationError(f"meter {price.meter_id} not found", field="meter_id")
    if price.group_id:
        require_group(uow, price.group_id, GroupEntityType.PRICE)


def prepare_price(
    uow: UnitOfWork, ctx: Context, data: PriceInput, *, entity_type: PriceEntityType, entity_id: str
) -> Price:
    """A new, validated price for the owner (``sequence`` not yet assigned); writes nothing."""
    fields = {
        **value_fields(uow, data),
        **new_fields(ctx, "price"),
        "entity_type": entity_type,
        "entity_id": entity_id,
    }
    price = build(Price, fields, check_price)
    _check_references(uow, price)
    return price


def add_price(uow: UnitOfWork, price: Price, prefix: str) -> Price:
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
        price = prepare_price(uow, ctx, data, entity_type=entity_type, entity_id=entity_id)
    except ValidationError as exc:
        raise prefixed(exc, field_prefix) from None
    return add_price(uow, price, field_prefix)


def copy_price(
    uow: UnitOfWork, ctx: Context, price: Price, *, entity_type: PriceEntityType, entity_id: str
) -> Price:
    """A copy of ``price`` for another owner: new id, same values, no lookup key (they are
    unique), no parent, the new owner's next sequence."""
    fields = price.model_dump(include=set(Price.model_fields) - COMMON_FIELDS)
    fields.update(
        new_fields(ctx, "price"),
        entity_type=entity_type,
        entity_id=entity_id,
        lookup_key=None,
        parent_price_id=None,
    )
    return add_price(uow, Price.model_validate(fields), "")
