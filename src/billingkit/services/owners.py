"""What plans and add-ons share: they own prices, entitlements and credit grants.

Items are created, read, copied and archived together with their owner, in the owner's unit of
work, so a plan created with ten prices either exists with all ten or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from billingkit.domain.catalog import (
    CreditGrant,
    CreditGrantScope,
    Entitlement,
    EntitlementEntityType,
    Price,
    PriceEntityType,
)
from billingkit.domain.resources import Status
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.credit_grants import (
    CreditGrantInput,
    add_owned_credit_grant,
    copy_credit_grant,
    credit_grants_of,
)
from billingkit.services.entitlements import (
    EntitlementInput,
    add_owned_entitlement,
    copy_entitlement,
    entitlements_of,
)
from billingkit.services.notifications import notify
from billingkit.services.prices import PriceInput, add_owned_price, copy_price, prices_of

__all__ = [
    "ADDON",
    "ITEMS",
    "PLAN",
    "OwnerKind",
    "add_items",
    "archive_items",
    "copy_items",
    "expansions",
    "items_of",
    "with_items",
]

#: The item lists of an owner, which is also what ``expand`` may name on list and search.
ITEMS = frozenset({"prices", "entitlements", "credit_grants"})


D = TypeVar("D", bound=BaseModel)


def expansions(expand: str | None) -> frozenset[str]:
    """The item lists an ``expand`` parameter (``"prices,entitlements"``) asks for."""
    return frozenset(part.strip() for part in (expand or "").split(",")) & ITEMS


def with_items(detail: type[D], owner: BaseModel, items: dict[str, Any]) -> D:
    """The owner as its detail model (``PlanDetail``, ``AddonDetail``) carrying ``items``."""
    return detail.model_validate({**owner.model_dump(), **items})


@dataclass(frozen=True, slots=True)
class OwnerKind:
    """How each kind of item names an owner of this kind."""

    price: PriceEntityType
    entitlement: EntitlementEntityType
    credit_grant: CreditGrantScope


PLAN = OwnerKind(PriceEntityType.PLAN, EntitlementEntityType.PLAN, CreditGrantScope.PLAN)
ADDON = OwnerKind(PriceEntityType.ADDON, EntitlementEntityType.ADDON, CreditGrantScope.ADDON)


def add_items(
    uow: UnitOfWork,
    ctx: Context,
    kind: OwnerKind,
    owner_id: str,
    *,
    prices: Sequence[PriceInput] = (),
    entitlements: Sequence[EntitlementInput] = (),
    credit_grants: Sequence[CreditGrantInput] = (),
) -> dict[str, Any]:
    """Create the given items for the owner; errors name ``prices[i].<field>`` and so on."""
    return {
        "prices": tuple(
            add_owned_price(
                uow, ctx, data, entity_type=kind.price, entity_id=owner_id, field_prefix=f"prices[{i}]."
            )
            for i, data in enumerate(prices)
        ),
        "entitlements": tuple(
            add_owned_entitlement(
                uow,
                ctx,
                data,
                entity_type=kind.entitlement,
                entity_id=owner_id,
                field_prefix=f"entitlements[{i}].",
            )
            for i, data in enumerate(entitlements)
        ),
        "credit_grants": tuple(
            add_owned_credit_grant(
                uow,
                ctx,
                data,
                scope=kind.credit_grant,
                owner_id=owner_id,
                field_prefix=f"credit_grants[{i}].",
            )
            for i, data in enumerate(credit_grants)
        ),
    }


def items_of(
    uow: UnitOfWork, ctx: Context, kind: OwnerKind, owner_id: str, wanted: frozenset[str] = ITEMS
) -> dict[str, Any]:
    """The owner's live items named in ``wanted``; prices only those not ended at ``ctx.now``."""
    items: dict[str, Any] = {}
    if "prices" in wanted:
        items["prices"] = tuple(
            p for p in prices_of(uow, kind.price, owner_id) if p.end_date is None or p.end_date > ctx.now
        )
    if "entitlements" in wanted:
        items["entitlements"] = tuple(entitlements_of(uow, kind.entitlement, owner_id))
    if "credit_grants" in wanted:
        items["credit_grants"] = tuple(credit_grants_of(uow, kind.credit_grant, owner_id))
    return items


def copy_items(
    uow: UnitOfWork, ctx: Context, kind: OwnerKind, source_id: str, target_id: str
) -> dict[str, Any]:
    """Copy the source owner's current items to the target owner (new ids, lookup keys cleared)."""
    items = items_of(uow, ctx, kind, source_id)
    return {
        "prices": tuple(
            copy_price(uow, ctx, p, entity_type=kind.price, entity_id=target_id) for p in items["prices"]
        ),
        "entitlements": tuple(
            copy_entitlement(uow, ctx, e, entity_type=kind.entitlement, entity_id=target_id)
            for e in items["entitlements"]
        ),
        "credit_grants": tuple(
            copy_credit_grant(uow, ctx, g, scope=kind.credit_grant, owner_id=target_id)
            for g in items["credit_grants"]
        ),
    }


def archive_items(uow: UnitOfWork, ctx: Context, kind: OwnerKind, owner_id: str) -> None:
    """Archive the owner's items with it: prices end now (if not ended already), entitlements
    record ``entitlement.deleted``."""
    for price in prices_of(uow, kind.price, owner_id):
        end = price.end_date if price.end_date is not None and price.end_date <= ctx.now else ctx.now
        uow.prices.update(_archived(price, ctx, end_date=end))
    for entitlement in entitlements_of(uow, kind.entitlement, owner_id):
        archived = _archived(entitlement, ctx)
        uow.entitlements.update(archived)
        notify(uow, ctx, "entitlement.deleted", archived)
    for grant in credit_grants_of(uow, kind.credit_grant, owner_id):
        uow.credit_grants.update(_archived(grant, ctx))


def _archived(item: Price | Entitlement | CreditGrant, ctx: Context, **changes: Any) -> Any:
    return item.model_copy(update={"status": Status.ARCHIVED, **changes, **ctx.touch()})
