"""``/v1/taxes/rates``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from billingkit.domain.catalog import TaxRateScope
from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.adjustments import ListTaxRatesResponse, TaxRateResponse
from billingkit.services.tax_rates import TaxRateCreate, TaxRateSearch, TaxRateUpdate

router = APIRouter(prefix="/taxes/rates", tags=["tax rates"], route_class=WireRoute)


@router.post("", status_code=201)
def create_tax_rate(caller: EnvCaller, body: TaxRateCreate) -> TaxRateResponse:
    return TaxRateResponse.model_validate(caller.tax_rates.create(body).to_dict())


@router.get("")
def list_tax_rates(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    scope: TaxRateScope | None = None,
    taxrate_ids: Annotated[list[str] | None, Query()] = None,
    taxrate_codes: Annotated[list[str] | None, Query()] = None,
) -> ListTaxRatesResponse:
    search = TaxRateSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        scope=scope,
        tax_rate_ids=csv_list(taxrate_ids),
        tax_rate_codes=csv_list(taxrate_codes),
    )
    return ListTaxRatesResponse.model_validate(caller.tax_rates.list(search).to_dict())


@router.get("/{tax_rate_id}")
def get_tax_rate(caller: EnvCaller, tax_rate_id: str) -> TaxRateResponse:
    return TaxRateResponse.model_validate(caller.tax_rates.get(tax_rate_id).to_dict())


@router.put("/{tax_rate_id}")
def update_tax_rate(caller: EnvCaller, tax_rate_id: str, body: TaxRateUpdate) -> TaxRateResponse:
    return TaxRateResponse.model_validate(caller.tax_rates.update(tax_rate_id, body).to_dict())


@router.delete("/{tax_rate_id}", status_code=204)
def delete_tax_rate(caller: EnvCaller, tax_rate_id: str) -> Response:
    caller.tax_rates.delete(tax_rate_id)
    return Response(status_code=204)
