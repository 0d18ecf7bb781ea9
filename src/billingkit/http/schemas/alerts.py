"""Alert settings and the alert log on the wire (the reference's ``AlertSettingsResponse``,
``AlertLogResponse`` and their lists)."""

from __future__ import annotations

from billingkit.domain.alerts import AlertEntityType, AlertType
from billingkit.domain.wallets import AlertState
from billingkit.http.schemas.base import (
    DecimalString,
    EnvironmentRecordResponse,
    PaginationResponse,
    Timestamp,
    WireModel,
)
from billingkit.http.schemas.features import FeatureAlertSettingsResponse

__all__ = ["AlertLogResponse", "AlertSettingResponse", "ListAlertLogsResponse", "ListAlertSettingsResponse"]


class AlertSettingResponse(EnvironmentRecordResponse):
    """An alert on ``entity_type`` ``entity_id`` (within subscription ``parent_entity_id`` for a
    line item, a group or an entitlement grant), its thresholds (``config``), whether it is
    ``enabled``, and its current ``alert_state`` (billingkit's addition: ``ok``, ``info``,
    ``warning``, ``in_alarm``)."""

    entity_type: AlertEntityType
    entity_id: str
    parent_entity_type: AlertEntityType | None
    parent_entity_id: str | None
    config: FeatureAlertSettingsResponse
    enabled: bool
    alert_state: AlertState


class ListAlertSettingsResponse(WireModel):
    items: list[AlertSettingResponse]
    pagination: PaginationResponse


class AlertInfoResponse(WireModel):
    """What the alert saw when its state changed: the thresholds, the ``value`` (a decimal string,
    billingkit's addition) and when (``value_at_time``, and ``timestamp`` as the reference has it)."""

    alert_settings: FeatureAlertSettingsResponse
    value: DecimalString
    value_at_time: Timestamp
    timestamp: Timestamp


class AlertLogResponse(EnvironmentRecordResponse):
    """One change of an alert's state: to ``alert_status``, of alert ``alert_type`` on
    ``entity_type`` ``entity_id`` (``parent_entity_id``: the subscription, or the wallet of a
    feature alert), for customer ``customer_id``."""

    alert_type: AlertType
    alert_status: AlertState
    entity_type: AlertEntityType
    entity_id: str
    parent_entity_type: AlertEntityType | None
    parent_entity_id: str | None
    customer_id: str | None
    alert_info: AlertInfoResponse


class ListAlertLogsResponse(WireModel):
    items: list[AlertLogResponse]
    pagination: PaginationResponse
