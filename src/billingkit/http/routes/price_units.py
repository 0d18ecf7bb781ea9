"""``/v1/prices/units`` (registered before ``/v1/prices`` so ``units`` is not taken for a price id)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute, success
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.catalog import ListPriceUnitsResponse, PriceUnitResponse
from billingkit.services.price_units import PriceUnitCreate, PriceUnitSearch, PriceUnitUpdate

router = APIRouter(prefix="/prices/units", tags=["price units"], route_class=WireRoute)


@router.post("", status_code=201)
def create_price_unit(caller: EnvCaller, body: PriceUnitCreate) -> PriceUnitResponse:
    return PriceUnitResponse.model_validate(caller.price_units.create(body).to_dict())


@router.get("")
def list_price_units(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    price_unit_ids: Annotated[list[str] | None, Query()] = None,
    codes: Annotated[list[str] | None, Query()] = None,
) -> ListPriceUnitsResponse:
    search = PriceUnitSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        price_unit_ids=csv_list(price_unit_ids),
        codes=csv_list(codes),
    )
    return ListPriceUnitsResponse.model_validate(caller.price_units.list(search).to_dict())


@router.post("/search")
def search_price_units(caller: EnvCaller, body: PriceUnitSearch) -> ListPriceUnitsResponse:
    return ListPriceUnitsResponse.model_validate(caller.price_units.search(body).to_dict())


@router.get("/code/{code}")
def get_price_unit_by_code(caller: EnvCaller, code: str) -> PriceUnitResponse:
    return PriceUnitResponse.model_validate(caller.price_units.get_by_code(code).to_dict())


@router.get("/{price_unit_id}")
def get_price_unit(caller: EnvCaller, price_unit_id: str) -> PriceUnitResponse:
    return PriceUnitResponse.model_validate(caller.price_units.get(price_unit_id).to_dict())


@router.put("/{price_unit_id}")
def update_price_unit(caller: EnvCaller, price_unit_id: str, body: PriceUnitUpdate) -> PriceUnitResponse:
    return PriceUnitResponse.model_validate(caller.price_units.update(price_unit_id, body).to_dict())


@router.delete("/{price_unit_id}")
def delete_price_unit(caller: EnvCaller, price_unit_id: str) -> SuccessResponse:
    caller.price_units.delete(price_unit_id)
    return success("price unit deleted successfully")
