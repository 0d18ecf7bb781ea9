"""Features: what a customer is entitled to (metered usage, an on/off switch, a static value)."""

from __future__ import annotations

import itertools
from decimal import Decimal
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from billingkit.domain.resources import EnvironmentResource
from billingkit.errors import ValidationError

__all__ = [
    "AlertCondition",
    "AlertSettings",
    "AlertThreshold",
    "Feature",
    "FeatureType",
    "ReportingUnit",
    "check_alert_settings",
    "check_feature",
]


class FeatureType(StrEnum):
    METERED = "metered"
    BOOLEAN = "boolean"
    STATIC = "static"
    CONFIG = "config"


class AlertCondition(StrEnum):
    ABOVE = "above"
    BELOW = "below"


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AlertThreshold(_Value):
    threshold: Decimal
    condition: AlertCondition = AlertCondition.ABOVE


class AlertSettings(_Value):
    """Usage levels that raise alerts; ``critical`` is the most severe."""

    alert_enabled: bool = False
    critical: AlertThreshold | None = None
    warning: AlertThreshold | None = None
    info: AlertThreshold | None = None


class ReportingUnit(_Value):
    """How usage is shown: ``reported = quantity * conversion_rate`` in ``unit_plural``."""

    unit_singular: str
    unit_plural: str
    conversion_rate: Decimal = Decimal(1)


class Feature(EnvironmentResource):
    """A ``metered`` feature counts through ``meter_id``; ``boolean``, ``static`` and ``config``
    features have no meter."""

    name: str
    type: FeatureType
    description: str | None = None
    lookup_key: str | None = None
    meter_id: str | None = None
    group_id: str | None = None
    unit_singular: str | None = None
    unit_plural: str | None = None
    reporting_unit: ReportingUnit | None = None
    alert_settings: AlertSettings | None = None
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<Feature {self.id} {self.name!r} {self.type.value}>"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


_SEVERITY = ("info", "warning", "critical")


def check_feature(feature: Feature) -> None:
    """Metered features need a meter, others must not have one; reporting units convert by a
    positive rate; alert thresholds escalate in one direction (info, then warning, then critical).
    Raises ``ValidationError`` naming the field."""
    if feature.type is FeatureType.METERED:
        if not feature.meter_id:
            raise ValidationError("a metered feature needs meter_id or an inline meter", field="meter_id")
    elif feature.meter_id:
        raise ValidationError(f"a {feature.type.value} feature has no meter", field="meter_id")
    unit = feature.reporting_unit
    if unit is not None and unit.conversion_rate <= 0:
        raise ValidationError(
            "reporting_unit.conversion_rate must be greater than 0", field="reporting_unit.conversion_rate"
        )
    if feature.alert_settings is not None:
        check_alert_settings(feature.alert_settings, "alert_settings")


def check_alert_settings(settings: AlertSettings, field: str) -> None:
    """Enabled alerts need a threshold; the thresholds share one condition and escalate from info
    to warning to critical (upwards for ``above``, downwards for ``below``). ``ValidationError``
    names ``field`` (``alert_settings``, ``config``) and the level at fault."""
    levels = [(name, getattr(settings, name)) for name in _SEVERITY if getattr(settings, name) is not None]
    if settings.alert_enabled and not levels:
        raise ValidationError("enabled alerts need at least one threshold", field=field)
    conditions = {level.condition for _, level in levels}
    if len(conditions) > 1:
        raise ValidationError(
            "alert thresholds must all use the same condition",
            field=f"{field}.{levels[-1][0]}.condition",
        )
    for (_, lower), (name, higher) in itertools.pairwise(levels):
        ascending = lower.condition is AlertCondition.ABOVE
        if (higher.threshold < lower.threshold) if ascending else (higher.threshold > lower.threshold):
            raise ValidationError(
                "alert thresholds must escalate from info to warning to critical",
                field=f"{field}.{name}.threshold",
            )
