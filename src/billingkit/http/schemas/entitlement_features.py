"""The aggregated feature entries of subscriptions and customers (the reference's
``AggregatedFeature``): a feature, what its sources grant together, and the sources."""

from __future__ import annotations

from typing import Any

from billingkit import EntitlementAggregationMode, UsageResetPeriod
from billingkit.domain.entitlement_aggregation import EntitlementSourceType
from billingkit.http.schemas.base import WireModel
from billingkit.http.schemas.features import FeatureResponse

__all__ = [
    "AggregatedEntitlementBucketResponse",
    "AggregatedEntitlementResponse",
    "AggregatedFeatureResponse",
    "EntitlementSourceResponse",
]


class AggregatedEntitlementBucketResponse(WireModel):
    """A metered source that carries a usage grant (``grant_quota``, a decimal string)."""

    entitlement_id: str
    source_entity_id: str
    usage_limit: int | None
    grant_measure: str | None
    grant_quota: str | None
    grant_duration_unit: str | None
    grant_duration_value: int | None


class AggregatedEntitlementResponse(WireModel):
    """What a feature's enabled sources grant together: limits add up (``usage_limit`` null is
    unlimited), soft when any source is soft; static and config values are listed."""

    is_enabled: bool
    usage_limit: int | None
    usage_reset_period: UsageResetPeriod | None
    is_soft_limit: bool
    static_values: list[str]
    config_values: list[dict[str, Any]]
    aggregation_mode: EntitlementAggregationMode | None
    buckets: list[AggregatedEntitlementBucketResponse]


class EntitlementSourceResponse(WireModel):
    """One entitlement granting the feature: through the plan, an add-on (``quantity``: its
    active associations) or the subscription itself (an override)."""

    entitlement_id: str
    entity_id: str
    entity_name: str
    entity_type: EntitlementSourceType
    is_enabled: bool
    quantity: int
    static_value: str | None
    config_value: dict[str, Any] | None
    subscription_id: str
    usage_limit: int | None
    usage_reset_period: UsageResetPeriod | None


class AggregatedFeatureResponse(WireModel):
    feature: FeatureResponse
    entitlement: AggregatedEntitlementResponse
    sources: list[EntitlementSourceResponse]
