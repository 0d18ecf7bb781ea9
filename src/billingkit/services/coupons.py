"""Coupons: create, read (by id or code), rename, archive, list and search.

Rules (``check_coupon`` and the core coupon): a ``fixed`` coupon has ``amount_off`` > 0 and a
``currency``; a ``percentage`` coupon 0 < ``percentage_off`` <= 100 (its amount and currency are
dropped); ``duration_in_periods`` >= 1 is required for ``repeated`` and refused otherwise;
``redeem_after`` < ``redeem_before``; ``max_redemptions`` is 1..1,000,000 (capped at creation so an
unbounded limit cannot be stored); ``coupon_code`` is unique among live coupons (a deleted coupon's
code can be reused); ``total_redemptions`` starts at 0 and is not settable. After creation only
``name`` and ``metadata`` change.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import Coupon, CouponCadence, CouponType, check_coupon
from billingkit.domain.queries import Op, Page
from billingkit.domain.validation import (
    INT32_MAX,
    CurrencyCode,
    DecimalText,
    InputModel,
    Metadata,
    Name,
    NonEmptyStr,
    UtcDatetime,
)
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
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
    "CouponCreate",
    "CouponSearch",
    "CouponUpdate",
    "create_coupon",
    "delete_coupon",
    "get_coupon",
    "get_coupon_by_code",
    "list_coupons",
    "update_coupon",
]

ENTITY = "coupon"
LABEL = "coupon"
Code = Annotated[NonEmptyStr, Field(max_length=255)]
Int = Annotated[int, Field(ge=-INT32_MAX, le=INT32_MAX)]


class CouponCreate(InputModel):
    name: Name
    type: CouponType
    cadence: CouponCadence
    coupon_code: Code | None = None
    amount_off: DecimalText | None = None
    percentage_off: DecimalText | None = None
    currency: CurrencyCode | None = None
    duration_in_periods: Int | None = None
    max_redemptions: int | None = None
    redeem_after: UtcDatetime | None = None
    redeem_before: UtcDatetime | None = None
    rules: dict[str, Any] | None = None
    metadata: Metadata = {}


class CouponUpdate(PartialUpdate):
    required = frozenset({"name", "metadata"})

    name: Name | None = None
    metadata: Metadata | None = None


class CouponSearch(SearchRequest):
    """The reference's ``types.CouponFilter``."""

    kind: ClassVar[str] = "coupons"

    coupon_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    coupon_codes: Annotated[list[str] | None, Searches("coupon_code", Op.IN)] = None


def create_coupon(uow: UnitOfWork, ctx: Context, *, data: CouponCreate) -> Coupon:
    """Create a coupon; ``AlreadyExists`` when a live coupon has the code."""
    ctx.require(ENTITY, Action.WRITE)
    coupon = build(Coupon, {**new_fields(ctx, "coupon"), **data.model_dump()})
    core = check_coupon(coupon)
    normalized = coupon.model_copy(
        update={
            "amount_off": core.amount_off,
            "percentage_off": core.percentage_off,
            "currency": core.currency,
        }
    )
    return uow.coupons.add(normalized)


def get_coupon(uow: UnitOfWork, ctx: Context, *, coupon_id: str) -> Coupon:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.coupons, LABEL, coupon_id)


def get_coupon_by_code(uow: UnitOfWork, ctx: Context, *, coupon_code: str) -> Coupon:
    """The live coupon with ``coupon_code`` (exact match)."""
    ctx.require(ENTITY, Action.READ)
    return live(uow.coupons.find_one(coupon_code=coupon_code), LABEL, f"with code {coupon_code!r}")


def update_coupon(uow: UnitOfWork, ctx: Context, *, coupon_id: str, data: CouponUpdate) -> Coupon:
    """Change ``name`` or ``metadata``; the discount itself is fixed at creation."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.coupons, LABEL, coupon_id)
    changes = data.changes()
    if not changes:
        return current
    return uow.coupons.update(update_fields(current, changes, ctx))


def delete_coupon(uow: UnitOfWork, ctx: Context, *, coupon_id: str) -> Coupon:
    """Archive the coupon; its code can be used again."""
    ctx.require(ENTITY, Action.WRITE)
    return archive(uow.coupons, get_live(uow.coupons, LABEL, coupon_id), ctx)


def list_coupons(uow: UnitOfWork, ctx: Context, *, search: CouponSearch) -> Page[Coupon]:
    ctx.require(ENTITY, Action.READ)
    return uow.coupons.list(search.to_query())
