"""``/v1/events/usage``: usage reports (ad hoc, and by meter)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from billingkit.domain.validation import parse_input
from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.events import GetUsageByMeterResponse, GetUsageResponse
from billingkit.services import usage as svc

router = APIRouter(prefix="/events", tags=["events"], route_class=WireRoute)


@router.post("/usage")
def usage(caller: EnvCaller, body: Annotated[dict[str, Any], Body()]) -> GetUsageResponse:
    report = caller.usage.report(parse_input(svc.UsageRequest, body))
    return GetUsageResponse.model_validate(report.to_dict())


@router.post("/usage/meter")
def usage_by_meter(caller: EnvCaller, body: Annotated[dict[str, Any], Body()]) -> GetUsageByMeterResponse:
    request = parse_input(svc.MeterUsageRequest, body)
    report = caller.usage.for_meter(request.meter_id, request)
    return GetUsageByMeterResponse.model_validate(report.to_dict())
