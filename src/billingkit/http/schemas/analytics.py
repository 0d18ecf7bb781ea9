"""Answers of ``POST /v1/events/analytics`` (usage over time) and ``POST /v1/costs/analytics``
(revenue against cost)."""

from __future__ import annotations

from billingkit.domain.usage import AggregationType, BucketSize
from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel

__all__ = [
    "CostAnalyticItemResponse",
    "CostAnalyticsResponse",
    "CostPointResponse",
    "UsageAnalyticItemResponse",
    "UsageAnalyticPointResponse",
    "UsageAnalyticsResponse",
]


class UsageAnalyticPointResponse(WireModel):
    """One window: its start, the usage in it, the cost it added, its events."""

    timestamp: Timestamp
    usage: DecimalString
    cost: DecimalString
    event_count: int


class UsageAnalyticItemResponse(WireModel):
    """A feature's usage (one group of it when grouped) and its cost under the customer's
    subscription line (``price_id``... name the line when exactly one priced it)."""

    feature_id: str
    name: str
    meter_id: str
    event_name: str
    aggregation_type: AggregationType
    unit: str | None
    unit_plural: str | None
    source: str | None = None
    properties: dict[str, str] | None = None
    price_id: str | None
    subscription_id: str | None
    sub_line_item_id: str | None
    currency: str | None
    total_usage: DecimalString
    total_cost: DecimalString
    event_count: int
    window_size: BucketSize | None
    points: list[UsageAnalyticPointResponse]


class UsageAnalyticsResponse(WireModel):
    items: list[UsageAnalyticItemResponse]
    total_cost: DecimalString
    currency: str | None


class CostPointResponse(WireModel):
    """One window of a customer's usage of a meter: the cost it added."""

    timestamp: Timestamp
    quantity: DecimalString
    cost: DecimalString
    event_count: int


class CostAnalyticItemResponse(WireModel):
    """A customer's usage of a meter over the period: what it cost (the active costsheet's price)
    and what it earned (the customer's subscription lines' prices)."""

    customer_id: str
    external_customer_id: str
    meter_id: str
    meter_name: str
    costsheet_id: str
    price_id: str
    currency: str
    total_quantity: DecimalString
    total_events: int
    total_cost: DecimalString
    total_revenue: DecimalString
    cost_by_period: list[CostPointResponse]


class CostAnalyticsResponse(WireModel):
    """Totals over the items; ``margin_percent``, ``roi`` and ``roi_percent`` are null when their
    divisor is zero."""

    start_time: Timestamp
    end_time: Timestamp
    currency: str | None
    total_cost: DecimalString
    total_revenue: DecimalString
    margin: DecimalString
    margin_percent: DecimalString | None
    roi: DecimalString | None
    roi_percent: DecimalString | None
    cost_analytics: list[CostAnalyticItemResponse]
