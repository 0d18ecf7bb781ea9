"""``/v1/prices``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.catalog import PriceEntityType
from billingkit.domain.resources import Status
from billingkit.domain.validation import parse_input
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand, Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute, success
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.catalog import CreateBulkPriceResponse, ListPricesResponse, PriceResponse
from billingkit.services.prices import PriceBulkCreate, PriceCreate, PriceDelete, PriceSearch, PriceUpdate

router = APIRouter(prefix="/prices", tags=["prices"], route_class=WireRoute)


@router.post("", status_code=201)
def create_price(caller: EnvCaller, body: PriceCreate) -> PriceResponse:
    return PriceResponse.model_validate(caller.prices.create(body).to_dict())


@router.post("/bulk", status_code=201)
def create_prices_bulk(caller: EnvCaller, body: PriceBulkCreate) -> CreateBulkPriceResponse:
    prices = caller.prices.create_bulk(body)
    return CreateBulkPriceResponse.model_validate({"items": [price.to_dict() for price in prices]})


@router.get("")
def list_prices(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    price_ids: Annotated[list[str] | None, Query()] = None,
    plan_ids: Annotated[list[str] | None, Query()] = None,
    subscription_id: Annotated[str | None, Query(max_length=64)] = None,
    entity_type: PriceEntityType | None = None,
    entity_ids: Annotated[list[str] | None, Query()] = None,
    meter_ids: Annotated[list[str] | None, Query()] = None,
    billing_periods: Annotated[list[str] | None, Query()] = None,
    parent_price_id: Annotated[str | None, Query(max_length=64)] = None,
    allow_expired_prices: bool = False,
    expand: Expand = None,
) -> ListPricesResponse:
    search = parse_input(
        PriceSearch,
        {
            "limit": limit,
            "offset": offset,
            "order": order,
            "sort": sort_by(sort, order),
            "status": status,
            "price_ids": csv_list(price_ids),
            "plan_ids": csv_list(plan_ids),
            "subscription_id": subscription_id,
            "entity_type": entity_type,
            "entity_ids": csv_list(entity_ids),
            "meter_ids": csv_list(meter_ids),
            "billing_periods": csv_list(billing_periods),
            "parent_price_id": parent_price_id,
            "allow_expired_prices": allow_expired_prices,
            "expand": expand,
        },
    )
    return ListPricesResponse.model_validate(caller.prices.list(search).to_dict())


@router.post("/search")
def search_prices(caller: EnvCaller, body: PriceSearch) -> ListPricesResponse:
    return ListPricesResponse.model_validate(caller.prices.search(body).to_dict())


@router.get("/lookup/{lookup_key}")
def get_price_by_lookup_key(caller: EnvCaller, lookup_key: str, expand: Expand = None) -> PriceResponse:
    return PriceResponse.model_validate(caller.prices.get_by_lookup_key(lookup_key, expand=expand).to_dict())


@router.get("/{price_id}")
def get_price(caller: EnvCaller, price_id: str, expand: Expand = None) -> PriceResponse:
    """The price with its meter and pricing unit expanded (``expand`` adds ``groups``, ``plan``,
    ``addon``)."""
    return PriceResponse.model_validate(caller.prices.get(price_id, expand=expand).to_dict())


@router.put("/{price_id}")
def update_price(caller: EnvCaller, price_id: str, body: PriceUpdate) -> PriceResponse:
    return PriceResponse.model_validate(caller.prices.update(price_id, body).to_dict())


@router.delete("/{price_id}")
def delete_price(caller: EnvCaller, price_id: str, body: PriceDelete | None = None) -> SuccessResponse:
    """Optional body ``{"end_date": ...}``: a future end keeps the price until then."""
    caller.prices.delete(price_id, end_date=body.end_date if body is not None else None)
    return success("price deleted successfully")
