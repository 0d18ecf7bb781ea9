"""Reading coupon associations: one by id, a filtered page, and a subscription's own (the v2
read's ``coupon_associations`` expansion). Associations are attached by subscription create and
modify (:mod:`billingkit.services.coupon_associations`); nothing else writes them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import Coupon
from billingkit.domain.coupon_associations import CouponAssociation
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import get_live
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "ASSOCIATION_EXPANSIONS",
    "CouponAssociationSearch",
    "CouponAssociationView",
    "get_coupon_association",
    "list_coupon_associations",
    "subscription_coupon_associations",
]

ENTITY = "coupon"
LABEL = "coupon association"
#: What ``expand`` may name on the list (the reference's values; ``.prices`` adds nothing here).
ASSOCIATION_EXPANSIONS = frozenset({"coupon", "subscription_line_items", "subscription_line_items.prices"})
_MAX_IDS = 100


@dataclass(frozen=True, slots=True)
class CouponAssociationView:
    """An association as reads show it (the reference's ``CouponAssociationResponse``): with its
    ``coupon`` and, for a line-level one, its ``subscription_line_item`` when they were asked for
    (the single read always includes both). ``association.applications`` (how many invoices it
    discounted) is internal and not on the wire."""

    association: CouponAssociation
    coupon: Coupon | None = None
    line_item: dict[str, Any] | None = None

    # The association's own fields, read through: ``view.id``, ``view.start_date``...
    @property
    def id(self) -> str:
        return self.association.id

    @property
    def coupon_id(self) -> str:
        return self.association.coupon_id

    @property
    def subscription_id(self) -> str:
        return self.association.subscription_id

    @property
    def subscription_line_item_id(self) -> str | None:
        return self.association.subscription_line_item_id

    @property
    def start_date(self) -> datetime:
        return self.association.start_date

    @property
    def end_date(self) -> datetime | None:
        return self.association.end_date

    @property
    def status(self) -> Status:
        return self.association.status

    def to_dict(self) -> dict[str, Any]:
        data = self.association.to_dict()
        if self.coupon is not None:
            data["coupon"] = self.coupon.to_dict()
        if self.line_item is not None:
            data["subscription_line_item"] = self.line_item
        return data


class CouponAssociationSearch(SearchRequest):
    """The reference's ``GET /coupons/associations`` filters (at most 100 ids each);
    ``active_only``: live associations whose ``[start_date, end_date)`` holds now; ``expand``:
    comma list of ``coupon``, ``subscription_line_items``."""

    kind: ClassVar[str] = "coupon_associations"

    subscription_ids: Annotated[
        Annotated[list[str], Field(max_length=_MAX_IDS)] | None, Searches("subscription_id", Op.IN)
    ] = None
    coupon_ids: Annotated[
        Annotated[list[str], Field(max_length=_MAX_IDS)] | None, Searches("coupon_id", Op.IN)
    ] = None
    active_only: bool = False


def _expansions(expand: str | None) -> frozenset[str]:
    wanted = frozenset(part.strip() for part in (expand or "").split(",") if part.strip())
    unknown = wanted - ASSOCIATION_EXPANSIONS
    if unknown:
        raise ValidationError(
            f"expand may name {', '.join(sorted(ASSOCIATION_EXPANSIONS))}; not {', '.join(sorted(unknown))}",
            field="expand",
        )
    return wanted


def _line_item_dicts(subscriptions: Iterable[Subscription]) -> dict[str, dict[str, Any]]:
    return {line["id"]: line for sub in subscriptions for line in sub.to_dict()["line_items"]}


def _views(
    uow: UnitOfWork, associations: Sequence[CouponAssociation], *, coupons: bool, line_items: bool
) -> list[CouponAssociationView]:
    """Views of ``associations`` with what was asked for, two reads at most for any number."""
    by_coupon: dict[str, Coupon] = {}
    if coupons and associations:
        by_coupon = {c.id: c for c in uow.coupons.find_many({a.coupon_id for a in associations})}
    lines: dict[str, dict[str, Any]] = {}
    line_level = [a for a in associations if a.subscription_line_item_id]
    if line_items and line_level:
        lines = _line_item_dicts(uow.subscriptions.find_many({a.subscription_id for a in line_level}))
    return [
        CouponAssociationView(
            a,
            by_coupon.get(a.coupon_id),
            lines.get(a.subscription_line_item_id) if a.subscription_line_item_id else None,
        )
        for a in associations
    ]


def get_coupon_association(
    uow: UnitOfWork, ctx: Context, *, coupon_association_id: str
) -> CouponAssociationView:
    """The live association with its coupon (and line item, for a line-level one); ``NotFound``."""
    ctx.require(ENTITY, Action.READ)
    association = get_live(uow.coupon_associations, LABEL, coupon_association_id)
    (view,) = _views(uow, [association], coupons=True, line_items=True)
    return view


def _active_page(uow: UnitOfWork, ctx: Context, query: ListQuery) -> Page[CouponAssociation]:
    """Associations of ``query`` live now. The store has no "or", so the open-ended and the
    ending-later ones are two queries merged in the requested order; together they cover the
    first ``offset + limit`` (at most 1000) matches."""
    window = query.offset + query.limit
    if window > MAX_LIMIT:
        raise ValidationError(f"with active_only, offset + limit may be at most {MAX_LIMIT}", field="offset")
    started = (*query.filters, Filter("start_date", Op.LTE, ctx.now))
    pages = [
        uow.coupon_associations.list(
            ListQuery(filters=(*started, end), sort=query.sort, limit=window, status=query.status)
        )
        for end in (Filter("end_date", Op.EQ, None), Filter("end_date", Op.GT, ctx.now))
    ]
    merged = [item for page in pages for item in page.items]
    for order in reversed(query.sort):
        merged.sort(key=lambda item: getattr(item, order.field), reverse=order.descending)
    items = merged[query.offset : window]
    return Page(items=items, total=sum(page.total for page in pages), limit=query.limit, offset=query.offset)


def list_coupon_associations(
    uow: UnitOfWork, ctx: Context, *, search: CouponAssociationSearch
) -> Page[CouponAssociationView]:
    """A page of associations (newest first by default), expanded as ``search.expand`` asks."""
    ctx.require(ENTITY, Action.READ)
    wanted = _expansions(search.expand)
    query = search.to_query()
    page = _active_page(uow, ctx, query) if search.active_only else uow.coupon_associations.list(query)
    views = _views(
        uow,
        page.items,
        coupons="coupon" in wanted,
        line_items=bool(wanted & {"subscription_line_items", "subscription_line_items.prices"}),
    )
    return Page(items=views, total=page.total, limit=page.limit, offset=page.offset)


def subscription_coupon_associations(uow: UnitOfWork, sub: Subscription) -> list[CouponAssociationView]:
    """The subscription's live associations, oldest first, with their coupons and line items."""
    query = ListQuery(
        filters=(Filter("subscription_id", Op.EQ, sub.id),),
        sort=(Sort("created_at", descending=False),),
        limit=MAX_LIMIT,
    )
    associations = uow.coupon_associations.list(query).items
    lines = _line_item_dicts([sub])
    by_coupon = (
        {c.id: c for c in uow.coupons.find_many({a.coupon_id for a in associations})} if associations else {}
    )
    return [
        CouponAssociationView(
            a,
            by_coupon.get(a.coupon_id),
            lines.get(a.subscription_line_item_id) if a.subscription_line_item_id else None,
        )
        for a in associations
    ]
