"""``/v1/alerts/setting`` (alert settings: create, get, update, delete, search) and
``/v1/alerts/search`` (the alert log), as the reference names them."""

from __future__ import annotations

from fastapi import APIRouter, Response

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.alerts import (
    AlertSettingResponse,
    ListAlertLogsResponse,
    ListAlertSettingsResponse,
)
from billingkit.services.alert_settings import (
    AlertLogSearch,
    AlertSettingCreate,
    AlertSettingSearch,
    AlertSettingUpdate,
)

router = APIRouter(prefix="/alerts", tags=["alerts"], route_class=WireRoute)


@router.post("/setting", status_code=201)
def create_alert_setting(caller: EnvCaller, body: AlertSettingCreate) -> AlertSettingResponse:
    return AlertSettingResponse.model_validate(caller.alerts.create(body).to_dict())


@router.post("/setting/search")
def search_alert_settings(caller: EnvCaller, body: AlertSettingSearch) -> ListAlertSettingsResponse:
    return ListAlertSettingsResponse.model_validate(caller.alerts.search(body).to_dict())


@router.get("/setting/{alert_setting_id}")
def get_alert_setting(caller: EnvCaller, alert_setting_id: str) -> AlertSettingResponse:
    return AlertSettingResponse.model_validate(caller.alerts.get(alert_setting_id).to_dict())


@router.put("/setting/{alert_setting_id}")
def update_alert_setting(
    caller: EnvCaller, alert_setting_id: str, body: AlertSettingUpdate
) -> AlertSettingResponse:
    return AlertSettingResponse.model_validate(caller.alerts.update(alert_setting_id, body).to_dict())


@router.delete("/setting/{alert_setting_id}", status_code=204)
def delete_alert_setting(caller: EnvCaller, alert_setting_id: str) -> Response:
    caller.alerts.delete(alert_setting_id)
    return Response(status_code=204)


@router.post("/search")
def search_alert_logs(caller: EnvCaller, body: AlertLogSearch) -> ListAlertLogsResponse:
    return ListAlertLogsResponse.model_validate(caller.alerts.logs(body).to_dict())
