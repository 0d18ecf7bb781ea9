"""``/v1/events/usage``: usage reports (ad hoc, and by meter)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body

from billingkit.domain.validation import parse_input
from billingkit.http.auth import EnvCaller
from billingkit.services import usage as svc

router = APIRouter(prefix="/events", tags=["events"])


@router.post("/usage")
def usage(caller: EnvCaller, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    return caller.usage.report(parse_input(svc.UsageRequest, body)).to_dict()


@router.post("/usage/meter")
def usage_by_meter(caller: EnvCaller, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    request = parse_input(svc.MeterUsageRequest, body)
    return caller.usage.for_meter(request.meter_id, request).to_dict()
