"""Entitlements: what a plan or add-on grants of a feature (a usage limit, a switch, a value)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from billingkit.domain.catalog.features import FeatureType
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime
from billingkit.errors import ValidationError

__all__ = [
    "Entitlement",
    "EntitlementAggregationMode",
    "EntitlementEntityType",
    "EntitlementGrantAllocation",
    "EntitlementGrantDurationUnit",
    "EntitlementGrantMeasure",
    "UsageResetPeriod",
    "check_entitlement",
]


class EntitlementEntityType(StrEnum):
    PLAN = "PLAN"
    ADDON = "ADDON"
    SUBSCRIPTION = "SUBSCRIPTION"


class UsageResetPeriod(StrEnum):
    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    QUARTERLY = "QUARTERLY"
    HALF_YEARLY = "HALF_YEARLY"
    ANNUAL = "ANNUAL"
    NEVER = "NEVER"


class EntitlementAggregationMode(StrEnum):
    ADDITIVE = "additive"
    PARALLEL = "parallel"


class EntitlementGrantMeasure(StrEnum):
    QUANTITY = "quantity"
    AMOUNT = "amount"


class EntitlementGrantDurationUnit(StrEnum):
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    SUBSCRIPTION_PERIOD = "subscription_period"


class EntitlementGrantAllocation(StrEnum):
    FIRST_USAGE = "first_usage"
    UNIT_START = "unit_start"


class Entitlement(EnvironmentResource):
    """One feature granted by one owner (``entity_type`` / ``entity_id``; ``plan_id`` repeats the
    owner for plans). A live owner grants a feature at most once.

    ``usage_limit`` (``None`` = unlimited) and ``usage_reset_period`` apply to metered features,
    ``static_value`` to static ones, ``config_value`` to config ones; ``is_enabled`` to all.
    ``grant_quota`` with its duration describes a usage grant consumed before paid usage.
    """

    entity_type: EntitlementEntityType
    entity_id: str
    plan_id: str | None = None
    feature_id: str
    feature_type: FeatureType
    is_enabled: bool = True
    usage_limit: int | None = None
    usage_reset_period: UsageResetPeriod | None = None
    is_soft_limit: bool = False
    static_value: str | None = None
    config_value: dict[str, Any] | None = None
    aggregation_mode: EntitlementAggregationMode | None = None
    grant_measure: EntitlementGrantMeasure | None = None
    grant_quota: int | None = None
    grant_duration_unit: EntitlementGrantDurationUnit | None = None
    grant_duration_value: int | None = None
    grant_allocation_behavior: EntitlementGrantAllocation | None = None
    parent_entitlement_id: str | None = None
    display_order: int = 0
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None

    def __repr__(self) -> str:
        return f"<Entitlement {self.id} {self.feature_id} on {self.entity_type.value} {self.entity_id}>"

    def to_dict(self) -> dict[str, Any]:
        """The wire form: as stored, but ``grant_quota`` is a decimal string, the reference's type
        (its SDK refuses a JSON number there); the model keeps the whole number."""
        body = self.model_dump(mode="json")
        if self.grant_quota is not None:
            body["grant_quota"] = str(self.grant_quota)
        return body


def check_entitlement(entitlement: Entitlement) -> None:
    """Fields must fit the feature's type, limits and grants are non-negative, dates ordered.
    Raises ``ValidationError`` naming the field."""
    e = entitlement
    metered = e.feature_type is FeatureType.METERED
    if not metered:
        for name in ("usage_limit", "usage_reset_period", "grant_quota"):
            if getattr(e, name) is not None:
                raise ValidationError(f"{name} is only allowed for metered features", field=name)
    if e.static_value is not None and e.feature_type is not FeatureType.STATIC:
        raise ValidationError("static_value is only allowed for static features", field="static_value")
    if e.feature_type is FeatureType.STATIC and e.is_enabled and e.static_value is None:
        raise ValidationError("static_value is required for static features", field="static_value")
    if e.config_value is not None and e.feature_type is not FeatureType.CONFIG:
        raise ValidationError("config_value is only allowed for config features", field="config_value")
    for name in ("usage_limit", "grant_quota", "grant_duration_value"):
        value = getattr(e, name)
        if value is not None and value < 0:
            raise ValidationError(f"{name} must not be negative", field=name)
    if e.grant_duration_value is not None and e.grant_duration_unit is None:
        raise ValidationError(
            "grant_duration_unit is required with grant_duration_value", field="grant_duration_unit"
        )
    if e.start_date and e.end_date and not e.start_date < e.end_date:
        raise ValidationError("end_date must be after start_date", field="end_date")
