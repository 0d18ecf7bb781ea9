"""Answers of ``/v1/meters``, ``/v1/groups`` and ``/v1/features``: what is measured and how it is
grouped."""

from __future__ import annotations

from billingkit import AggregationType, AlertCondition, BucketSize, FeatureType, GroupEntityType, ResetUsage
from billingkit.http.schemas.base import (
    DecimalString,
    EnvironmentRecordResponse,
    PaginationResponse,
    WireModel,
)

__all__ = [
    "FeatureAlertSettingsResponse",
    "FeatureAlertThresholdResponse",
    "FeatureResponse",
    "GroupResponse",
    "ListFeaturesResponse",
    "ListGroupsResponse",
    "ListMetersResponse",
    "MeterAggregationResponse",
    "MeterFilterResponse",
    "MeterResponse",
    "ReportingUnitResponse",
]


class MeterAggregationResponse(WireModel):
    type: AggregationType
    field: str | None
    expression: str | None
    group_by: str | None
    multiplier: DecimalString | None
    bucket_size: BucketSize | None


class MeterFilterResponse(WireModel):
    """An event matches when ``properties[key]``, as text, is one of ``values``."""

    key: str
    values: list[str]


class MeterResponse(EnvironmentRecordResponse):
    """Counts events named ``event_name`` that pass every filter (AND across keys, OR within)."""

    name: str
    event_name: str
    aggregation: MeterAggregationResponse
    filters: list[MeterFilterResponse]
    reset_usage: ResetUsage


class ListMetersResponse(WireModel):
    items: list[MeterResponse]
    pagination: PaginationResponse


class GroupResponse(EnvironmentRecordResponse):
    """A named set of prices or of features; ``entity_ids`` are its live members, oldest first."""

    name: str
    lookup_key: str
    entity_type: GroupEntityType
    metadata: dict[str, str]
    entity_ids: list[str]


class ListGroupsResponse(WireModel):
    items: list[GroupResponse]
    pagination: PaginationResponse


class ReportingUnitResponse(WireModel):
    """How usage is shown: ``reported = quantity * conversion_rate`` in ``unit_plural``."""

    unit_singular: str
    unit_plural: str
    conversion_rate: DecimalString


class FeatureAlertThresholdResponse(WireModel):
    """One alert level: usage ``above`` (or ``below``) ``threshold``."""

    threshold: DecimalString
    condition: AlertCondition


class FeatureAlertSettingsResponse(WireModel):
    """A feature's usage levels that raise alerts, ``critical`` the most severe (the reference's
    ``types.AlertSettings``, not its alert settings resource)."""

    alert_enabled: bool
    critical: FeatureAlertThresholdResponse | None
    warning: FeatureAlertThresholdResponse | None
    info: FeatureAlertThresholdResponse | None


class FeatureResponse(EnvironmentRecordResponse):
    """A feature. ``meter`` appears when expanded (always on ``GET /features/{id}`` of a metered
    feature), ``group`` when ``groups`` is expanded; either is null when there is none."""

    name: str
    type: FeatureType
    description: str | None
    lookup_key: str | None
    meter_id: str | None
    group_id: str | None
    unit_singular: str | None
    unit_plural: str | None
    reporting_unit: ReportingUnitResponse | None
    alert_settings: FeatureAlertSettingsResponse | None
    metadata: dict[str, str]
    meter: MeterResponse | None = None
    group: GroupResponse | None = None


class ListFeaturesResponse(WireModel):
    items: list[FeatureResponse]
    pagination: PaginationResponse
