"""``/v1/events/usage``: usage reports (ad hoc, and by meter); ``/v1/events/analytics``: usage and
its cost over time per feature."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from billingkit.domain.validation import parse_input
from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.analytics import UsageAnalyticsResponse
from billingkit.http.schemas.events import GetUsageByMeterResponse, GetUsageResponse
from billingkit.services import usage as svc
from billingkit.services.usage_analytics import UsageAnalyticsRequest

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


@router.post("/analytics")
def usage_analytics(caller: EnvCaller, body: UsageAnalyticsRequest) -> UsageAnalyticsResponse:
    return UsageAnalyticsResponse.model_validate(caller.usage.analytics(body).to_dict())
