"""Plans: create (optionally with prices, entitlements and credit grants), read with their items,
update, archive, list, search and clone.

Rules: ``lookup_key`` is unique among live plans of an environment. Deleting a plan archives it
with its prices (ended now), entitlements and credit grants. A clone copies the plan's current
items under a new name and lookup key.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Self

from pydantic import ModelWrapValidatorHandler, model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import CreditGrant, Entitlement, Plan, PlanDetail
from billingkit.domain.input_rules import validate_naming_items
from billingkit.domain.queries import Op, Page
from billingkit.domain.validation import Description, InputModel, Int32, Key, Metadata, Name
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.credit_grants import CreditGrantInput, credit_grants_of
from billingkit.services.entitlements import EntitlementInput, entitlements_of
from billingkit.services.owners import (
    ITEMS,
    PLAN,
    add_items,
    archive_items,
    copy_items,
    expansions,
    items_of,
    with_items,
)
from billingkit.services.prices import PriceInput
from billingkit.services.records import (
    COMMON_FIELDS,
    PartialUpdate,
    archive,
    build,
    get_live,
    new_fields,
    update_fields,
)
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "PlanClone",
    "PlanCreate",
    "PlanSearch",
    "PlanUpdate",
    "clone_plan",
    "create_plan",
    "delete_plan",
    "get_plan",
    "plan_credit_grants",
    "plan_entitlements",
    "search_plans",
    "update_plan",
]

ENTITY = "plan"
LABEL = "plan"
LookupKey = Key


class PlanCreate(InputModel):
    name: Name
    description: Description | None = None
    lookup_key: LookupKey | None = None
    display_order: Int32 = 0
    metadata: Metadata = {}
    prices: list[PriceInput] = []
    entitlements: list[EntitlementInput] = []
    credit_grants: list[CreditGrantInput] = []

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_price(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """A price that breaks one of its own rules is named ``prices[i].<field>``."""
        return validate_naming_items(data, handler, field="prices", item_model=PriceInput)


class PlanUpdate(PartialUpdate):
    required = frozenset({"name", "display_order", "metadata"})

    name: Name | None = None
    description: Description | None = None
    lookup_key: LookupKey | None = None
    display_order: Int32 | None = None
    metadata: Metadata | None = None


class PlanClone(InputModel):
    """The copy's fields: ``name`` (different from the source's) and ``lookup_key`` are required;
    ``description``, ``display_order`` and ``metadata`` default to the source's."""

    name: Name
    lookup_key: LookupKey
    description: Description | None = None
    display_order: Int32 | None = None
    metadata: Metadata | None = None


class PlanSearch(SearchRequest):
    kind: ClassVar[str] = "plans"

    plan_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    lookup_key: Annotated[str | None, Searches("lookup_key", Op.EQ)] = None
    metadata: Annotated[dict[str, str] | None, Searches("metadata", Op.EQ)] = None


def create_plan(uow: UnitOfWork, ctx: Context, *, data: PlanCreate) -> PlanDetail:
    """Create a plan with its items in one unit of work; ``AlreadyExists`` on a taken lookup key."""
    ctx.require(ENTITY, Action.WRITE)
    fields = data.model_dump(exclude=set(ITEMS))
    plan = uow.plans.add(build(Plan, {**new_fields(ctx, "plan"), **fields}))
    items = add_items(
        uow,
        ctx,
        PLAN,
        plan.id,
        prices=data.prices,
        entitlements=data.entitlements,
        credit_grants=data.credit_grants,
    )
    return with_items(PlanDetail, plan, items)


def get_plan(uow: UnitOfWork, ctx: Context, *, plan_id: str) -> PlanDetail:
    """The live plan with its live prices (not ended), entitlements and credit grants."""
    ctx.require(ENTITY, Action.READ)
    plan = get_live(uow.plans, LABEL, plan_id)
    return with_items(PlanDetail, plan, items_of(uow, ctx, PLAN, plan.id))


def update_plan(uow: UnitOfWork, ctx: Context, *, plan_id: str, data: PlanUpdate) -> PlanDetail:
    ctx.require(ENTITY, Action.WRITE)
    plan = get_live(uow.plans, LABEL, plan_id)
    changes = data.changes()
    if changes:
        plan = uow.plans.update(update_fields(plan, changes, ctx))
    return with_items(PlanDetail, plan, items_of(uow, ctx, PLAN, plan.id))


def delete_plan(uow: UnitOfWork, ctx: Context, *, plan_id: str) -> Plan:
    """Archive the plan with its prices, entitlements and credit grants."""
    ctx.require(ENTITY, Action.WRITE)
    plan = get_live(uow.plans, LABEL, plan_id)
    archive_items(uow, ctx, PLAN, plan.id)
    return archive(uow.plans, plan, ctx)


def clone_plan(uow: UnitOfWork, ctx: Context, *, plan_id: str, data: PlanClone) -> PlanDetail:
    """A new plan with the source's fields overridden by ``data`` and copies of its current items."""
    ctx.require(ENTITY, Action.WRITE)
    source = get_live(uow.plans, LABEL, plan_id)
    if data.name == source.name:
        raise ValidationError("name must differ from the source plan's name", field="name")
    overrides = data.model_dump(exclude_none=True)
    fields = {**source.model_dump(exclude=set(COMMON_FIELDS)), **overrides}
    copy = uow.plans.add(build(Plan, {**new_fields(ctx, "plan"), **fields}))
    return with_items(PlanDetail, copy, copy_items(uow, ctx, PLAN, source.id, copy.id))


def search_plans(uow: UnitOfWork, ctx: Context, *, search: PlanSearch) -> Page[PlanDetail]:
    """A page of plans; their items are filled in only when ``expand`` names them
    (``prices``, ``entitlements``, ``credit_grants``)."""
    ctx.require(ENTITY, Action.READ)
    page = uow.plans.list(search.to_query())
    wanted = expansions(search.expand)
    details = [with_items(PlanDetail, plan, items_of(uow, ctx, PLAN, plan.id, wanted)) for plan in page.items]
    return Page(items=details, total=page.total, limit=page.limit, offset=page.offset)


def plan_entitlements(uow: UnitOfWork, ctx: Context, *, plan_id: str) -> list[Entitlement]:
    ctx.require(ENTITY, Action.READ)
    plan = get_live(uow.plans, LABEL, plan_id)
    return entitlements_of(uow, PLAN.entitlement, plan.id)


def plan_credit_grants(uow: UnitOfWork, ctx: Context, *, plan_id: str) -> list[CreditGrant]:
    ctx.require(ENTITY, Action.READ)
    plan = get_live(uow.plans, LABEL, plan_id)
    return credit_grants_of(uow, PLAN.credit_grant, plan.id)
