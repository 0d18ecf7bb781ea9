"""``POST /costs/analytics``: what each customer's usage of each meter cost the seller, against
what it earns, over a period.

Rules:

- Reading cost analytics needs ``costsheet`` read. The range is ``[start_time, end_time)``
  (``end_time`` defaults to now, ``start_time`` to seven days before it).
- **Cost**: the active costsheet's prices (see :mod:`billingkit.services.costsheets`), each over
  the part of the range it is active, applied to the customer's usage of its meter by the pricing
  core, rounded like an invoice line. Without an active costsheet the request is refused.
- **Revenue**: the same usage priced by the customer's subscription lines for that meter (as
  ``POST /events/analytics`` prices it): what the customer is charged for that usage, whether or
  not the period has been invoiced yet; fixed fees, allowances, discounts and taxes are left out,
  so cost and revenue cover the same usage.
- Customers: ``external_customer_id``, or every live customer, newest first, a page of ``limit``
  (default 100, at most 1000) from ``offset``. Meters: the costsheet's, narrowed to those of
  ``feature_ids``. Items are the (customer, meter) pairs with usage or money in the range.
- ``cost_by_period``: one point per UTC day when the range spans at most 92 days, else per
  calendar month; point costs add up to the item's ``total_cost``.
- Totals: ``margin = total_revenue - total_cost``; ``margin_percent = margin / total_revenue *
  100``; ``roi = margin / total_cost``; ``roi_percent = roi * 100``; each null when its divisor is
  zero. Money is exact (sums of rounded lines); ``roi`` is rounded half away from zero to 4
  decimal places and the percentages to 2.
- All amounts must be in one currency; several are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Any

from pydantic import Field, model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import Meter, Price, PriceEntityType, PriceType
from billingkit.domain.customers import Customer
from billingkit.domain.money import ZERO
from billingkit.domain.queries import ListQuery
from billingkit.domain.resources import iso
from billingkit.domain.usage import BucketSize, UsageQuery
from billingkit.domain.usage_analytics import windows
from billingkit.domain.validation import InputModel, Key, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.costsheets import find_active_costsheet
from billingkit.services.owned_prices import prices_of
from billingkit.services.usage_analytics import (
    Text,
    analysis_range,
    analysis_spec,
    customer_by_external_id,
    metered_features,
)
from billingkit.services.usage_pricing import Charge, PricedUsage, price_usage, subscription_charges

__all__ = [
    "CostAnalytics",
    "CostAnalyticsItem",
    "CostAnalyticsRequest",
    "CostPoint",
    "get_cost_analytics",
    "ratios",
]

ENTITY = "costsheet"
DAILY_UP_TO = timedelta(days=92)


class CostAnalyticsRequest(InputModel):
    """The reference's ``GetCostAnalyticsRequest``. ``expand`` is accepted and ignored;
    ``include_children`` may only be false."""

    ignored = frozenset({"expand"})

    external_customer_id: Key | None = None
    feature_ids: Annotated[list[Text], Field(max_length=100)] | None = None
    property_filters: dict[Text, Annotated[list[Text], Field(min_length=1, max_length=100)]] | None = None
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 100
    offset: Annotated[int, Field(ge=0)] = 0
    include_children: bool = False

    @model_validator(mode="after")
    def _supported(self) -> CostAnalyticsRequest:
        if self.include_children:
            raise ValidationError(
                "include_children is not supported by this version of billingkit", field="include_children"
            )
        return self


@dataclass(frozen=True)
class CostPoint:
    """One window of a customer's usage of a meter and the cost it added."""

    timestamp: datetime
    quantity: Decimal
    event_count: int
    cost: Decimal

    def to_dict(self) -> dict[str, Any]:
        return {
            "timestamp": iso(self.timestamp),
            "quantity": str(self.quantity),
            "cost": str(self.cost),
            "event_count": self.event_count,
        }


@dataclass(frozen=True)
class CostAnalyticsItem:
    """A customer's usage of a meter over the range: its cost and its revenue."""

    customer: Customer
    meter: Meter
    costsheet_id: str
    price: Price
    total_quantity: Decimal
    total_events: int
    total_cost: Decimal
    total_revenue: Decimal
    points: tuple[CostPoint, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "customer_id": self.customer.id,
            "external_customer_id": self.customer.external_id,
            "meter_id": self.meter.id,
            "meter_name": self.meter.name,
            "costsheet_id": self.costsheet_id,
            "price_id": self.price.id,
            "currency": self.price.currency,
            "total_quantity": str(self.total_quantity),
            "total_events": self.total_events,
            "total_cost": str(self.total_cost),
            "total_revenue": str(self.total_revenue),
            "cost_by_period": [point.to_dict() for point in self.points],
        }


def ratios(revenue: Decimal, cost: Decimal) -> tuple[Decimal, Decimal | None, Decimal | None, Decimal | None]:
    """``(margin, margin_percent, roi, roi_percent)`` (see the module docs for the rules).

    Example: revenue 42.00, cost 4.80 → (37.20, 88.57, 7.75, 775.00).
    """
    margin = revenue - cost
    margin_percent = (
        None if revenue == 0 else (margin * 100 / revenue).quantize(Decimal("0.01"), ROUND_HALF_UP)
    )
    roi = None if cost == 0 else margin / cost
    return (
        margin,
        margin_percent,
        None if roi is None else roi.quantize(Decimal("0.0001"), ROUND_HALF_UP),
        None if roi is None else (roi * 100).quantize(Decimal("0.01"), ROUND_HALF_UP),
    )


@dataclass(frozen=True)
class CostAnalytics:
    """The answer: items by customer (page order) and meter, and the totals."""

    items: tuple[CostAnalyticsItem, ...]
    start_time: datetime
    end_time: datetime
    currency: str | None
    total_cost: Decimal
    total_revenue: Decimal

    def to_dict(self) -> dict[str, Any]:
        margin, margin_percent, roi, roi_percent = ratios(self.total_revenue, self.total_cost)
        return {
            "start_time": iso(self.start_time),
            "end_time": iso(self.end_time),
            "currency": self.currency,
            "total_cost": str(self.total_cost),
            "total_revenue": str(self.total_revenue),
            "margin": str(margin),
            "margin_percent": None if margin_percent is None else str(margin_percent),
            "roi": None if roi is None else str(roi),
            "roi_percent": None if roi_percent is None else str(roi_percent),
            "cost_analytics": [item.to_dict() for item in self.items],
        }


def _customers(uow: UnitOfWork, request: CostAnalyticsRequest) -> list[Customer]:
    if request.external_customer_id is not None:
        return [customer_by_external_id(uow, request.external_customer_id)]
    return list(uow.customers.list(ListQuery(limit=request.limit, offset=request.offset)).items)


def _cost_prices(
    uow: UnitOfWork, sheet_id: str, meter_ids: set[str] | None, start: datetime, end: datetime
) -> dict[str, list[Price]]:
    out: dict[str, list[Price]] = {}
    for price in prices_of(uow, PriceEntityType.COSTSHEET, sheet_id):
        if price.type is not PriceType.USAGE or price.meter_id is None:
            continue
        if meter_ids is not None and price.meter_id not in meter_ids:
            continue
        if (price.start_date or start) < end and (price.end_date is None or price.end_date > start):
            out.setdefault(price.meter_id, []).append(price)
    return out


def _whole(priced: dict[str | None, PricedUsage], windows: int) -> PricedUsage:
    """The ungrouped cost, zero in every window when nothing priced the usage."""
    return priced.get(None) or PricedUsage(points=[ZERO] * windows)


def get_cost_analytics(uow: UnitOfWork, ctx: Context, *, request: CostAnalyticsRequest) -> CostAnalytics:
    """Cost against revenue per customer and meter over the range (see the module docs)."""
    ctx.require(ENTITY, Action.READ)
    start, end = analysis_range(ctx, request.start_time, request.end_time)
    sheet = find_active_costsheet(uow)
    if sheet is None:
        raise InvalidOperation("no active costsheet: create one and give it prices (POST /costs)")
    meter_ids = {m.id for _, m in metered_features(uow, request.feature_ids)} if request.feature_ids else None
    cost_prices = _cost_prices(uow, sheet.id, meter_ids, start, end)
    meters = {m.id: m for m in uow.meters.find_many(sorted(cost_prices))}
    customers = _customers(uow, request)
    revenue_charges = subscription_charges(uow, {c.id: c for c in customers}, set(meters), start, end)
    grid = windows(start, end, BucketSize.DAY if end - start <= DAILY_UP_TO else BucketSize.MONTH)
    items: list[CostAnalyticsItem] = []
    currencies: set[str] = set()
    for meter_id in sorted(meters, key=lambda m: (meters[m].name, m)):
        meter = meters[meter_id]
        spec = analysis_spec(
            meter, property_filters=request.property_filters, sources=None, by_source=False, prop=None
        )
        prices = cost_prices[meter_id]
        for customer in customers:
            ids = frozenset({customer.external_id})
            total, *per_window = uow.usage.aggregate(
                [UsageQuery(spec, start, end, ids)] + [UsageQuery(spec, s, e, ids) for s, e in grid]
            )
            cost_charges = [
                Charge(
                    customer.id,
                    customer.external_id,
                    price,
                    max(start, price.start_date or start),
                    min(end, price.end_date or end),
                )
                for price in prices
            ]
            cost = _whole(price_usage(uow, spec, cost_charges, grid), len(grid))
            mine = [c for c in revenue_charges.get(meter_id, []) if c.customer_id == customer.id]
            revenue = _whole(price_usage(uow, spec, mine, grid), len(grid))
            if not total.event_count and not cost.cost and not revenue.cost:
                continue
            currencies |= cost.currencies | revenue.currencies
            items.append(
                CostAnalyticsItem(
                    customer=customer,
                    meter=meter,
                    costsheet_id=sheet.id,
                    price=prices[-1],
                    total_quantity=total.value,
                    total_events=total.event_count,
                    total_cost=cost.cost,
                    total_revenue=revenue.cost,
                    points=tuple(
                        CostPoint(window_start, result.value, result.event_count, cost.points[index])
                        for index, ((window_start, _), result) in enumerate(
                            zip(grid, per_window, strict=True)
                        )
                    ),
                )
            )
    if len(currencies) > 1:
        raise InvalidOperation(
            f"costs and revenue are in several currencies ({', '.join(sorted(currencies))});"
            " ask for fewer customers or features"
        )
    return CostAnalytics(
        tuple(items),
        start,
        end,
        next(iter(currencies), None),
        sum((i.total_cost for i in items), ZERO),
        sum((i.total_revenue for i in items), ZERO),
    )
