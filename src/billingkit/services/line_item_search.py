"""Finding line items across subscriptions (the reference's ``POST /subscriptions/lineitems/search``).

Line items live inside their subscriptions, so the search reads the scope's subscriptions that
can hold a match (narrowed in the store by ``subscription_ids``, ``customer_ids``, the owner index
of ``subscription_line_item_ids``, ``start_time``/``end_time`` on their ``created_at`` and their
record ``status``), then keeps their line items that match the other filters, in subscription
order (``order`` on their ``created_at``, newest first by default) and line order, and pages over
those. ``active_filter`` (default true) keeps lines not ended by now. ``expand``: ``prices``
and/or ``meters`` add each line's ``price`` / ``meter``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar, Self

from pydantic import model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import Meter, Price
from billingkit.domain.periods import BillingPeriod
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.price_details import price_to_dict
from billingkit.services.search import Searches, SearchRequest
from billingkit.services.subscription_line_items import line_item_dict

__all__ = ["LINE_ITEM_EXPANSIONS", "LineItemSearch", "LineItemView", "search_line_items"]

ENTITY = "subscription"
#: What ``expand`` may name.
LINE_ITEM_EXPANSIONS = frozenset({"prices", "meters"})


class LineItemSearch(SearchRequest):
    """The reference's ``SubscriptionLineItemFilter``."""

    kind: ClassVar[str] = "subscriptions"
    not_supported = frozenset({"current_period_start"})

    subscription_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    customer_ids: Annotated[list[str] | None, Searches("customer_id", Op.IN)] = None
    subscription_line_item_ids: list[str] | None = None
    entity_type: str | None = None
    entity_ids: list[str] | None = None
    price_ids: list[str] | None = None
    meter_ids: list[str] | None = None
    currencies: list[str] | None = None
    billing_periods: list[BillingPeriod] | None = None
    addon_association_ids: list[str] | None = None
    active_filter: bool = True

    @model_validator(mode="after")
    def _subscription_filters_only(self) -> Self:
        for name in ("filters", "sort"):
            if getattr(self, name):
                raise ValidationError(
                    f"{name} is not supported on line items: use the named filters and order", field=name
                )
        unknown = self.expansions() - LINE_ITEM_EXPANSIONS
        if unknown:
            allowed = ", ".join(sorted(LINE_ITEM_EXPANSIONS))
            raise ValidationError(
                f"expand may name {allowed}; not {', '.join(sorted(unknown))}", field="expand"
            )
        if self.entity_type is not None and self.entity_type not in ("plan", "addon", "subscription"):
            raise ValidationError("entity_type is plan, addon or subscription", field="entity_type")
        return self

    def expansions(self) -> frozenset[str]:
        return frozenset(part.strip() for part in (self.expand or "").split(",") if part.strip())

    def matches(self, line: SubscriptionLineItem, now: datetime) -> bool:
        """Whether ``line`` passes the line-level filters (the subscription-level ones ran in the
        store)."""
        wanted: tuple[tuple[list[Any] | None, Any], ...] = (
            (self.subscription_line_item_ids, line.id),
            (self.entity_ids, line.entity_id),
            (self.price_ids, line.price_id),
            (self.meter_ids, line.meter_id),
            (self.billing_periods, line.billing_period),
            (self.addon_association_ids, line.addon_association_id),
        )
        if any(values and value not in values for values, value in wanted):
            return False
        if self.currencies and line.currency.lower() not in {c.lower() for c in self.currencies}:
            return False
        if self.entity_type is not None and line.entity_type != self.entity_type:
            return False
        return not (self.active_filter and line.end_date is not None and line.end_date <= now)


@dataclass(frozen=True, slots=True)
class LineItemView:
    """One line item found, with its subscription (whose record fields it shows) and the
    expansions asked for."""

    subscription: Subscription
    line_item: SubscriptionLineItem
    price: dict[str, Any] | None = None
    meter: Meter | None = None

    def to_dict(self) -> dict[str, Any]:
        data = line_item_dict(self.subscription, self.line_item)
        if self.price is not None:
            data["price"] = self.price
        if self.meter is not None:
            data["meter"] = self.meter.to_dict()
        return data


def _subscriptions(uow: UnitOfWork, search: LineItemSearch) -> list[Subscription]:
    """Every subscription of the scope the store's filters keep, in the search's order."""
    filters = list(search.to_query().filters)
    if search.subscription_line_item_ids:
        owners = uow.line_item_owners.find_many(search.subscription_line_item_ids)
        holders = sorted({owner.subscription_id for owner in owners})
        if not holders:
            return []
        filters.append(Filter("id", Op.IN, holders))
    found: list[Subscription] = []
    while True:
        page = uow.subscriptions.list(
            ListQuery(
                filters=tuple(filters),
                sort=(Sort("created_at", search.order == "desc"), Sort("id", search.order == "desc")),
                limit=MAX_LIMIT,
                offset=len(found),
                status=search.status,
            )
        )
        found += page.items
        if not page.has_more or not page.items:
            return found


def search_line_items(uow: UnitOfWork, ctx: Context, *, search: LineItemSearch) -> Page[LineItemView]:
    """A page of the line items matching ``search`` (see the module doc)."""
    ctx.require(ENTITY, Action.READ)
    matched = [
        (sub, line)
        for sub in _subscriptions(uow, search)
        for line in sub.line_items
        if search.matches(line, ctx.now)
    ]
    chosen = matched[search.offset : search.offset + search.limit]
    wanted = search.expansions()
    prices: dict[str, Price] = {}
    meters: dict[str, Meter] = {}
    if "prices" in wanted:
        prices = {p.id: p for p in uow.prices.find_many({line.price_id for _, line in chosen})}
    if "meters" in wanted:
        meters = {
            m.id: m for m in uow.meters.find_many({line.meter_id for _, line in chosen if line.meter_id})
        }
    views = [
        LineItemView(
            sub,
            line,
            price_to_dict(uow, prices[line.price_id], expand=set()) if line.price_id in prices else None,
            meters.get(line.meter_id or ""),
        )
        for sub, line in chosen
    ]
    return Page(items=views, total=len(matched), limit=search.limit, offset=search.offset)
