"""Answers of ``GET /subscriptions/{id}/entitlements``, ``GET /customers/{id}/entitlements`` and
the entitlement check ``GET /customers/{id}/entitlements/check``."""

from __future__ import annotations

from typing import Any

from billingkit import FeatureType, UsageResetPeriod
from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel
from billingkit.http.schemas.billing import SubscriptionResponse
from billingkit.http.schemas.entitlement_features import AggregatedFeatureResponse

__all__ = ["CustomerEntitlementsResponse", "EntitlementCheckResponse", "SubscriptionEntitlementsResponse"]


class SubscriptionEntitlementsResponse(WireModel):
    """Every feature the subscription is entitled to, aggregated from its sources."""

    subscription_id: str
    plan_id: str
    features: list[AggregatedFeatureResponse]


class CustomerEntitlementsResponse(WireModel):
    """The features of the customer's granting (active or trialing) subscriptions, aggregated
    together; ``subscriptions`` are those subscriptions."""

    customer_id: str
    features: list[AggregatedFeatureResponse]
    subscriptions: list[SubscriptionResponse]


class EntitlementCheckResponse(WireModel):
    """May the customer use the feature now (``allowed``)? For a metered feature: ``usage`` in
    ``[window_start, window_end)`` against ``usage_limit`` (null: unlimited) and what
    ``remaining``; billingkit's own route (the reference has no check)."""

    customer_id: str
    feature_id: str
    feature_type: FeatureType
    allowed: bool
    is_enabled: bool
    usage: DecimalString
    usage_limit: DecimalString | None
    remaining: DecimalString | None
    is_soft_limit: bool
    usage_reset_period: UsageResetPeriod | None
    window_start: Timestamp | None
    window_end: Timestamp | None
    subscription_ids: list[str]
    static_values: list[str]
    config_values: list[dict[str, Any]]
