"""Add-ons: create (optionally with prices, entitlements and credit grants), read with their items,
update, archive, list and search.

Rules: ``lookup_key`` is required and unique among live add-ons of an environment; deleting an
add-on archives it with its items (prices end now).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Self

from pydantic import Field, ModelWrapValidatorHandler, model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import Addon, AddonDetail, CreditGrant, Entitlement
from billingkit.domain.input_rules import validate_naming_items
from billingkit.domain.queries import Op, Page
from billingkit.domain.validation import Description, InputModel, JsonMetadata, Name, NonEmptyStr
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.credit_grants import CreditGrantInput, credit_grants_of
from billingkit.services.entitlements import EntitlementInput, entitlements_of
from billingkit.services.owners import (
    ADDON,
    ITEMS,
    add_items,
    archive_items,
    expansions,
    items_of,
    with_items,
)
from billingkit.services.prices import PriceInput
from billingkit.services.records import (
    PartialUpdate,
    archive,
    build,
    get_live,
    live,
    new_fields,
    update_fields,
)
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "AddonCreate",
    "AddonSearch",
    "AddonUpdate",
    "addon_credit_grants",
    "addon_entitlements",
    "create_addon",
    "delete_addon",
    "get_addon",
    "get_addon_by_lookup_key",
    "search_addons",
    "update_addon",
]

ENTITY = "addon"
LABEL = "add-on"


class AddonCreate(InputModel):
    name: Name
    lookup_key: Annotated[NonEmptyStr, Field(max_length=255)]
    description: Description | None = None
    metadata: JsonMetadata = {}
    prices: list[PriceInput] = []
    entitlements: list[EntitlementInput] = []
    credit_grants: list[CreditGrantInput] = []

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_price(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """A price that breaks one of its own rules is named ``prices[i].<field>``."""
        return validate_naming_items(data, handler, field="prices", item_model=PriceInput)


class AddonUpdate(PartialUpdate):
    required = frozenset({"name", "metadata"})

    name: Name | None = None
    description: Description | None = None
    metadata: JsonMetadata | None = None


class AddonSearch(SearchRequest):
    kind: ClassVar[str] = "addons"

    addon_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    lookup_keys: Annotated[list[str] | None, Searches("lookup_key", Op.IN)] = None


def _detail(uow: UnitOfWork, ctx: Context, addon: Addon, wanted: frozenset[str] = ITEMS) -> AddonDetail:
    return with_items(AddonDetail, addon, items_of(uow, ctx, ADDON, addon.id, wanted))


def create_addon(uow: UnitOfWork, ctx: Context, *, data: AddonCreate) -> AddonDetail:
    """Create an add-on with its items in one unit of work; ``AlreadyExists`` on a taken lookup key."""
    ctx.require(ENTITY, Action.WRITE)
    addon = uow.addons.add(build(Addon, {**new_fields(ctx, "addon"), **data.model_dump(exclude=set(ITEMS))}))
    items = add_items(
        uow,
        ctx,
        ADDON,
        addon.id,
        prices=data.prices,
        entitlements=data.entitlements,
        credit_grants=data.credit_grants,
    )
    return with_items(AddonDetail, addon, items)


def get_addon(uow: UnitOfWork, ctx: Context, *, addon_id: str) -> AddonDetail:
    ctx.require(ENTITY, Action.READ)
    return _detail(uow, ctx, get_live(uow.addons, LABEL, addon_id))


def get_addon_by_lookup_key(uow: UnitOfWork, ctx: Context, *, lookup_key: str) -> AddonDetail:
    ctx.require(ENTITY, Action.READ)
    addon = live(uow.addons.find_one(lookup_key=lookup_key), LABEL, f"with lookup_key {lookup_key!r}")
    return _detail(uow, ctx, addon)


def update_addon(uow: UnitOfWork, ctx: Context, *, addon_id: str, data: AddonUpdate) -> AddonDetail:
    ctx.require(ENTITY, Action.WRITE)
    addon = get_live(uow.addons, LABEL, addon_id)
    changes = data.changes()
    if changes:
        addon = uow.addons.update(update_fields(addon, changes, ctx))
    return _detail(uow, ctx, addon)


def delete_addon(uow: UnitOfWork, ctx: Context, *, addon_id: str) -> Addon:
    """Archive the add-on with its prices, entitlements and credit grants."""
    ctx.require(ENTITY, Action.WRITE)
    addon = get_live(uow.addons, LABEL, addon_id)
    archive_items(uow, ctx, ADDON, addon.id)
    return archive(uow.addons, addon, ctx)


def search_addons(uow: UnitOfWork, ctx: Context, *, search: AddonSearch) -> Page[AddonDetail]:
    """A page of add-ons; items are filled in only when ``expand`` names them."""
    ctx.require(ENTITY, Action.READ)
    page = uow.addons.list(search.to_query())
    wanted = expansions(search.expand)
    items = [_detail(uow, ctx, addon, wanted) for addon in page.items]
    return Page(items=items, total=page.total, limit=page.limit, offset=page.offset)


def addon_entitlements(uow: UnitOfWork, ctx: Context, *, addon_id: str) -> list[Entitlement]:
    ctx.require(ENTITY, Action.READ)
    return entitlements_of(uow, ADDON.entitlement, get_live(uow.addons, LABEL, addon_id).id)


def addon_credit_grants(uow: UnitOfWork, ctx: Context, *, addon_id: str) -> list[CreditGrant]:
    ctx.require(ENTITY, Action.READ)
    return credit_grants_of(uow, ADDON.credit_grant, get_live(uow.addons, LABEL, addon_id).id)
