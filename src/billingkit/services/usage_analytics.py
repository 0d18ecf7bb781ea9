"""``POST /events/analytics``: usage over time per feature (and group), with what it costs.

Rules:

- Reading analytics needs ``event`` read. The range is ``[start_time, end_time)``; ``end_time``
  defaults to now and ``start_time`` to seven days before it; both carry a time zone.
- One customer (``external_customer_id``, which must name a live customer) or, without it, every
  customer's events.
- Features: ``feature_ids`` (each a live metered feature) or every live metered feature; each is
  measured with its meter's aggregation and filters, exactly as billing measures it, narrowed by
  ``sources`` (the events' ``source``) and ``property_filters`` ``{key: [values]}`` (AND across
  keys, OR within one key's values, like a meter's own filters).
- ``group_by``: ``feature_id`` (always implied: one item per feature), ``source`` or one
  ``properties.<name>``; items then come per feature and group (``source`` / ``properties``).
- ``window_size`` adds ``points``: one per window of the UTC grid (MONTH by calendar month), the
  first and last clipped to the range, empty windows included, at most 1000. A point's ``usage``
  is the aggregation over its window: for COUNT, SUM and SUM_WITH_MULTIPLIER (and bucketed meters
  whose buckets fit the windows) the points add up to ``total_usage``; MAX, AVG, LATEST,
  COUNT_UNIQUE and WEIGHTED_SUM are not additive, and ``total_usage`` stays their value over
  the whole range.
- Cost: the customer's subscription line for the feature's meter (USAGE lines of published
  subscriptions that are not drafts or incomplete, over the part of the range they run), its price
  applied to the usage by the pricing core and rounded like an invoice line. Allowances,
  commitments, discounts and taxes are not applied. A point's cost is how much the cost of the
  usage so far grew in its window, so points add up to ``total_cost`` exactly.
- All costs must be in one currency (``currency``); costs in several are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field, model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import Feature, FeatureType, Meter
from billingkit.domain.customers import Customer
from billingkit.domain.money import ZERO
from billingkit.domain.queries import MAX_LIMIT, ListQuery
from billingkit.domain.resources import Status, iso
from billingkit.domain.usage import BucketSize, MeterFilter, MeterSpec, UsageQuery
from billingkit.domain.usage_analytics import Window, group_usage, windows
from billingkit.domain.validation import InputModel, Key, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.usage_pricing import PricedUsage, price_usage, subscription_charges

__all__ = [
    "AnalyticsPoint",
    "UsageAnalytics",
    "UsageAnalyticsItem",
    "UsageAnalyticsRequest",
    "analysis_range",
    "usage_analytics",
]

ENTITY = "event"
DEFAULT_RANGE = timedelta(days=7)
Text = Annotated[str, Field(min_length=1, max_length=255)]


class UsageAnalyticsRequest(InputModel):
    """The reference's ``GetUsageAnalyticsRequest``. ``expand`` is accepted and ignored (items
    carry the ids); ``breakdown_bucket`` and ``include_children`` may only be false."""

    ignored = frozenset({"expand"})

    external_customer_id: Key | None = None
    feature_ids: Annotated[list[Text], Field(max_length=100)] | None = None
    sources: Annotated[list[Text], Field(max_length=100)] | None = None
    property_filters: dict[Text, Annotated[list[Text], Field(min_length=1, max_length=100)]] | None = None
    group_by: Annotated[list[Text], Field(max_length=3)] | None = None
    window_size: BucketSize | None = None
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None
    breakdown_bucket: bool = False
    include_children: bool = False

    @model_validator(mode="after")
    def _supported(self) -> UsageAnalyticsRequest:
        for name in ("breakdown_bucket", "include_children"):
            if getattr(self, name):
                raise ValidationError(f"{name} is not supported by this version of billingkit", field=name)
        return self


@dataclass(frozen=True)
class AnalyticsPoint:
    """One window: its start, the usage in it, the cost it added and its events."""

    timestamp: datetime
    usage: Decimal
    event_count: int
    cost: Decimal

    def to_dict(self) -> dict[str, Any]:
        return {
            "timestamp": iso(self.timestamp),
            "usage": str(self.usage),
            "cost": str(self.cost),
            "event_count": self.event_count,
        }


@dataclass(frozen=True)
class UsageAnalyticsItem:
    """A feature's usage (one group of it when the request groups) over the range."""

    feature: Feature
    meter: Meter
    source: str | None
    properties: dict[str, str] | None
    total_usage: Decimal
    total_cost: Decimal
    currency: str | None
    event_count: int
    window_size: BucketSize | None
    points: tuple[AnalyticsPoint, ...]
    price_id: str | None = None
    subscription_id: str | None = None
    sub_line_item_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "feature_id": self.feature.id,
            "name": self.feature.name,
            "meter_id": self.meter.id,
            "event_name": self.meter.event_name,
            "aggregation_type": self.meter.aggregation.type.value,
            "unit": self.feature.unit_singular,
            "unit_plural": self.feature.unit_plural,
        }
        if self.source is not None:
            out["source"] = self.source
        if self.properties is not None:
            out["properties"] = self.properties
        out |= {
            "price_id": self.price_id,
            "subscription_id": self.subscription_id,
            "sub_line_item_id": self.sub_line_item_id,
            "currency": self.currency,
            "total_usage": str(self.total_usage),
            "total_cost": str(self.total_cost),
            "event_count": self.event_count,
            "window_size": None if self.window_size is None else self.window_size.value,
            "points": [point.to_dict() for point in self.points],
        }
        return out


@dataclass(frozen=True)
class UsageAnalytics:
    """The answer: items by feature (in the request's order, else by name) and group."""

    items: tuple[UsageAnalyticsItem, ...]
    total_cost: Decimal
    currency: str | None
    start_time: datetime
    end_time: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [item.to_dict() for item in self.items],
            "total_cost": str(self.total_cost),
            "currency": self.currency,
        }


def analysis_range(ctx: Context, start: datetime | None, end: datetime | None) -> tuple[datetime, datetime]:
    """``[start, end)``: ``end`` defaults to now and ``start`` to seven days before ``end``."""
    end = end or ctx.now
    start = start or end - DEFAULT_RANGE
    if end <= start:
        raise ValidationError("end_time must be after start_time", field="end_time")
    return start, end


def _grouping(group_by: Sequence[str]) -> tuple[bool, str | None]:
    """(group by source, group by this property) from the request's ``group_by``."""
    by_source = False
    prop: str | None = None
    for item in group_by:
        if item == "feature_id":
            continue
        if item == "source":
            by_source = True
        elif item.startswith("properties.") and item != "properties.":
            if prop is not None:
                raise ValidationError("group_by takes one properties.<name>", field="group_by")
            prop = item.removeprefix("properties.")
        else:
            raise ValidationError(
                f"group_by {item!r}: use feature_id, source or properties.<name>", field="group_by"
            )
    if by_source and prop is not None:
        raise ValidationError("group_by takes source or one properties.<name>, not both", field="group_by")
    return by_source, prop


def metered_features(uow: UnitOfWork, feature_ids: Sequence[str] | None) -> list[tuple[Feature, Meter]]:
    """The requested live metered features with their meters (all of them, by name, if none)."""
    if feature_ids:
        found = {f.id: f for f in uow.features.find_many(list(dict.fromkeys(feature_ids)))}
        features = []
        for feature_id in dict.fromkeys(feature_ids):
            feature = found.get(feature_id)
            if feature is None or feature.status is not Status.PUBLISHED:
                raise ValidationError(f"feature {feature_id} not found", field="feature_ids")
            if feature.type is not FeatureType.METERED or feature.meter_id is None:
                raise ValidationError(f"feature {feature_id} is not metered", field="feature_ids")
            features.append(feature)
    else:
        live: list[Feature] = []
        while True:
            page = uow.features.list(ListQuery(limit=MAX_LIMIT, offset=len(live)))
            live += page.items
            if not page.items or len(live) >= page.total:
                break
        features = sorted(
            (f for f in live if f.type is FeatureType.METERED and f.meter_id), key=lambda f: (f.name, f.id)
        )
    meters = {m.id: m for m in uow.meters.find_many(sorted({f.meter_id for f in features if f.meter_id}))}
    return [(f, meters[f.meter_id]) for f in features if f.meter_id in meters]


def customer_by_external_id(uow: UnitOfWork, external_id: str) -> Customer:
    customer = uow.customers.find_one(external_id=external_id)
    if customer is None:
        raise ValidationError(f"customer {external_id} not found", field="external_customer_id")
    return customer


def analysis_spec(
    meter: Meter,
    *,
    property_filters: dict[str, list[str]] | None,
    sources: Sequence[str] | None,
    by_source: bool,
    prop: str | None,
) -> MeterSpec:
    """The meter's spec narrowed and grouped as the request asks."""
    base = meter.to_spec()
    extra = tuple(MeterFilter(key, tuple(values)) for key, values in (property_filters or {}).items())
    try:
        return replace(
            base,
            filters=base.filters + extra,
            sources=tuple(sorted(set(sources or ()))),
            group_by=prop,
            group_by_source=by_source,
        )
    except ValidationError as exc:
        field = "property_filters" if (exc.field or "").startswith("filters") else exc.field
        raise ValidationError(exc.message, field=field) from None


def _one_currency(priced: dict[str | None, PricedUsage]) -> str | None:
    currencies = {c for p in priced.values() for c in p.currencies}
    if len(currencies) > 1:
        raise InvalidOperation(
            f"the usage is priced in several currencies ({', '.join(sorted(currencies))});"
            " ask for one customer or fewer features"
        )
    return next(iter(currencies), None)


def usage_analytics(uow: UnitOfWork, ctx: Context, *, request: UsageAnalyticsRequest) -> UsageAnalytics:
    """Usage, cost and points per feature (and group) over the range (see the module docs)."""
    ctx.require(ENTITY, Action.READ)
    start, end = analysis_range(ctx, request.start_time, request.end_time)
    by_source, prop = _grouping(request.group_by or ())
    grid: list[Window] = windows(start, end, request.window_size) if request.window_size else []
    customers: dict[str, Customer] | None = None
    external_ids: frozenset[str] | None = None
    if request.external_customer_id is not None:
        customer = customer_by_external_id(uow, request.external_customer_id)
        customers = {customer.id: customer}
        external_ids = frozenset({customer.external_id})
    features = metered_features(uow, request.feature_ids)
    charges = subscription_charges(uow, customers, {m.id for _, m in features}, start, end)
    grouped = by_source or prop is not None
    items: list[UsageAnalyticsItem] = []
    currencies: set[str] = set()
    for feature, meter in features:
        spec = analysis_spec(
            meter,
            property_filters=request.property_filters,
            sources=request.sources,
            by_source=by_source,
            prop=prop,
        )
        asked = [UsageQuery(spec, start, end, external_ids)]
        asked += [UsageQuery(spec, s, e, external_ids) for s, e in grid]
        total, *per_window = uow.usage.aggregate(asked)
        priced = price_usage(uow, spec, charges.get(meter.id, []), grid)
        currency = _one_currency(priced)
        if currency is not None:
            currencies.add(currency)
        keys: list[str | None] = [g.key for g in total.groups] if grouped else [None]
        for key in keys:
            value, events = group_usage(total, key, grouped)
            cost = priced.get(key)
            points = tuple(
                AnalyticsPoint(
                    window_start,
                    *group_usage(result, key, grouped),
                    cost=cost.points[index] if cost is not None else ZERO,
                )
                for index, ((window_start, _), result) in enumerate(zip(grid, per_window, strict=True))
            )
            single = cost.charges[0] if cost is not None and len(cost.charges) == 1 else None
            items.append(
                UsageAnalyticsItem(
                    feature=feature,
                    meter=meter,
                    source=key if by_source else None,
                    properties={prop: key}
                    if prop is not None and key is not None
                    else ({} if prop else None),
                    total_usage=value,
                    total_cost=cost.cost if cost is not None else ZERO,
                    currency=currency,
                    event_count=events,
                    window_size=request.window_size,
                    points=points,
                    price_id=single.price.id if single else None,
                    subscription_id=single.subscription_id if single else None,
                    sub_line_item_id=single.line_item_id if single else None,
                )
            )
    if len(currencies) > 1:
        raise InvalidOperation(
            f"the usage is priced in several currencies ({', '.join(sorted(currencies))});"
            " ask for one customer or fewer features"
        )
    total_cost = sum((item.total_cost for item in items), ZERO)
    return UsageAnalytics(tuple(items), total_cost, next(iter(currencies), None), start, end)
