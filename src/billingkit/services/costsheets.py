"""Cost sheets: create, read (with their prices), update, delete, search, and the active sheet.

Rules:

- ``name`` is required; ``lookup_key`` is unique among live sheets of the environment;
- a sheet's prices are ordinary prices created with ``POST /prices`` (``entity_type="COSTSHEET"``,
  ``entity_id`` = the sheet's id, USAGE on a meter); a read lists its live prices, oldest first;
- deleting a sheet archives it and ends its live prices now (an archived sheet's prices cost
  nothing any more);
- the **active** sheet of an environment is its live sheet created last (ties: the greater id):
  publishing a new sheet replaces the previous one without touching it. Cost analytics prices
  usage with the active sheet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from billingkit.domain.access import Action
from billingkit.domain.catalog import Price, PriceEntityType
from billingkit.domain.costsheets import Costsheet
from billingkit.domain.queries import ListQuery, Op, Page, Sort
from billingkit.domain.resources import Status
from billingkit.domain.validation import Description, InputModel, Key, Metadata, Name
from billingkit.errors import NotFound
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.owned_prices import prices_of
from billingkit.services.records import PartialUpdate, archive, build, get_live, new_fields, update_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "CostsheetCreate",
    "CostsheetDetail",
    "CostsheetSearch",
    "CostsheetUpdate",
    "create_costsheet",
    "delete_costsheet",
    "find_active_costsheet",
    "get_active_costsheet",
    "get_costsheet",
    "list_costsheets",
    "update_costsheet",
]

ENTITY = "costsheet"
LABEL = "costsheet"


class CostsheetCreate(InputModel):
    """``POST /costs``."""

    name: Name
    lookup_key: Key | None = None
    description: Description | None = None
    metadata: Metadata = {}


class CostsheetUpdate(PartialUpdate):
    """``PUT /costs/{id}``: the fields given change; ``name`` and ``metadata`` cannot be cleared,
    ``lookup_key`` and ``description`` are cleared by ``""`` or null."""

    required = frozenset({"name", "metadata"})

    name: Name | None = None
    lookup_key: Key | None = None
    description: Description | None = None
    metadata: Metadata | None = None


class CostsheetSearch(SearchRequest):
    """``POST /costs/search`` (the reference's ``costsheet.Filter``, in the library's words)."""

    kind: ClassVar[str] = "costsheets"

    costsheet_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    lookup_key: Annotated[str | None, Searches("lookup_key", Op.EQ)] = None
    name: Annotated[str | None, Searches("name", Op.EQ)] = None


@dataclass(frozen=True)
class CostsheetDetail:
    """A cost sheet and its live prices (oldest first)."""

    costsheet: Costsheet
    prices: tuple[Price, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**self.costsheet.to_dict(), "prices": [price.to_dict() for price in self.prices]}


def _detail(uow: UnitOfWork, sheet: Costsheet) -> CostsheetDetail:
    return CostsheetDetail(sheet, tuple(prices_of(uow, PriceEntityType.COSTSHEET, sheet.id)))


def create_costsheet(uow: UnitOfWork, ctx: Context, *, data: CostsheetCreate) -> CostsheetDetail:
    """Create a sheet (no prices yet); ``AlreadyExists`` when a live sheet has the lookup key."""
    ctx.require(ENTITY, Action.WRITE)
    fields = {**new_fields(ctx, "costsheet"), **data.model_dump()}
    fields["lookup_key"] = fields["lookup_key"] or None
    sheet = uow.costsheets.add(build(Costsheet, fields))
    return CostsheetDetail(sheet, ())


def get_costsheet(uow: UnitOfWork, ctx: Context, *, costsheet_id: str) -> CostsheetDetail:
    """The live sheet with its live prices."""
    ctx.require(ENTITY, Action.READ)
    return _detail(uow, get_live(uow.costsheets, LABEL, costsheet_id))


def update_costsheet(
    uow: UnitOfWork, ctx: Context, *, costsheet_id: str, data: CostsheetUpdate
) -> CostsheetDetail:
    """Change the given fields; ``AlreadyExists`` when another live sheet has the lookup key."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.costsheets, LABEL, costsheet_id)
    changes = data.changes()
    for name in ("lookup_key", "description"):
        if name in changes:
            changes[name] = changes[name] or None
    sheet = uow.costsheets.update(update_fields(current, changes, ctx)) if changes else current
    return _detail(uow, sheet)


def delete_costsheet(uow: UnitOfWork, ctx: Context, *, costsheet_id: str) -> Costsheet:
    """Archive the sheet and its live prices (they end now)."""
    ctx.require(ENTITY, Action.WRITE)
    sheet = get_live(uow.costsheets, LABEL, costsheet_id)
    ended = [
        (
            price,
            price.model_copy(
                update={
                    "status": Status.ARCHIVED,
                    "end_date": min(price.end_date, ctx.now) if price.end_date is not None else ctx.now,
                    **ctx.touch(),
                }
            ),
        )
        for price in prices_of(uow, PriceEntityType.COSTSHEET, sheet.id)
    ]
    if ended:
        uow.prices.update_many(ended)
    return archive(uow.costsheets, sheet, ctx)


def list_costsheets(uow: UnitOfWork, ctx: Context, *, search: CostsheetSearch) -> Page[CostsheetDetail]:
    """A page of sheets, each with its live prices."""
    ctx.require(ENTITY, Action.READ)
    page = uow.costsheets.list(search.to_query())
    return Page(
        items=[_detail(uow, sheet) for sheet in page.items],
        total=page.total,
        limit=page.limit,
        offset=page.offset,
    )


def find_active_costsheet(uow: UnitOfWork) -> Costsheet | None:
    """The environment's active sheet: the live one created last (ties: the greater id)."""
    page = uow.costsheets.list(
        ListQuery(sort=(Sort("created_at", True), Sort("id", True)), limit=1, status=Status.PUBLISHED)
    )
    return page.items[0] if page.items else None


def get_active_costsheet(uow: UnitOfWork, ctx: Context) -> CostsheetDetail:
    """``GET /costs/active``: the active sheet with its prices; ``NotFound`` when there is none."""
    ctx.require(ENTITY, Action.READ)
    sheet = find_active_costsheet(uow)
    if sheet is None:
        raise NotFound("no published costsheet in this environment")
    return _detail(uow, sheet)
