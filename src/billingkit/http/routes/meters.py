"""``/v1/meters`` (not in the reference API's published paths; the usual REST set)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.features import ListMetersResponse, MeterResponse
from billingkit.services.meters import MeterCreate, MeterSearch, MeterUpdate

router = APIRouter(prefix="/meters", tags=["meters"], route_class=WireRoute)


@router.post("", status_code=201)
def create_meter(caller: EnvCaller, body: MeterCreate) -> MeterResponse:
    return MeterResponse.model_validate(caller.meters.create(body).to_dict())


@router.get("")
def list_meters(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    event_name: Annotated[str | None, Query(max_length=255)] = None,
    meter_ids: Annotated[list[str] | None, Query()] = None,
) -> ListMetersResponse:
    search = MeterSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        event_name=event_name,
        meter_ids=csv_list(meter_ids),
    )
    return ListMetersResponse.model_validate(caller.meters.list(search).to_dict())


@router.post("/search")
def search_meters(caller: EnvCaller, body: MeterSearch) -> ListMetersResponse:
    return ListMetersResponse.model_validate(caller.meters.search(body).to_dict())


@router.get("/{meter_id}")
def get_meter(caller: EnvCaller, meter_id: str) -> MeterResponse:
    return MeterResponse.model_validate(caller.meters.get(meter_id).to_dict())


@router.put("/{meter_id}")
def update_meter(caller: EnvCaller, meter_id: str, body: MeterUpdate) -> MeterResponse:
    """Rename and/or add filters (add-only: existing filter keys and values are never removed);
    a different ``event_name``, ``aggregation`` or ``reset_usage`` is a 400."""
    return MeterResponse.model_validate(caller.meters.update(meter_id, body).to_dict())


@router.delete("/{meter_id}", status_code=204)
def delete_meter(caller: EnvCaller, meter_id: str) -> Response:
    """Archive; 400 ``invalid_operation`` while a live feature or price uses the meter."""
    caller.meters.delete(meter_id)
    return Response(status_code=204)
