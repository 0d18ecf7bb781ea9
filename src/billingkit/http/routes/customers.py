"""``/v1/customers``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from billingkit.domain.resources import Status
from billingkit.errors import ValidationError
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order, SortField
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.customers import CustomerResponse, ListCustomersResponse
from billingkit.services.customers import CustomerCreate, CustomerSearch, CustomerUpdate
from billingkit.services.search import SortCondition

router = APIRouter(prefix="/customers", tags=["customers"], route_class=WireRoute)


@router.post("", status_code=201)
def create_customer(caller: EnvCaller, body: CustomerCreate) -> CustomerResponse:
    return CustomerResponse.model_validate(caller.customers.create(body).to_dict())


@router.get("")
def list_customers(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: Status | None = Status.PUBLISHED,
    external_id: str | None = None,
    email: str | None = None,
) -> ListCustomersResponse:
    search = CustomerSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=[SortCondition(field=sort, direction=order)] if sort else None,
        status=status,
        external_id=external_id,
        email=email,
    )
    return ListCustomersResponse.model_validate(caller.customers.search(search).to_dict())


@router.post("/search")
def search_customers(caller: EnvCaller, body: CustomerSearch) -> ListCustomersResponse:
    return ListCustomersResponse.model_validate(caller.customers.search(body).to_dict())


@router.get("/external/{external_id}")
def get_customer_by_external_id(caller: EnvCaller, external_id: str) -> CustomerResponse:
    return CustomerResponse.model_validate(caller.customers.get_by_external_id(external_id).to_dict())


@router.get("/{customer_id}")
def get_customer(caller: EnvCaller, customer_id: str) -> CustomerResponse:
    return CustomerResponse.model_validate(caller.customers.get(customer_id).to_dict())


@router.put("/{customer_id}")
def update_customer(caller: EnvCaller, customer_id: str, body: CustomerUpdate) -> CustomerResponse:
    return CustomerResponse.model_validate(caller.customers.update(customer_id, body).to_dict())


@router.put("")
def update_customer_by_query(
    caller: EnvCaller,
    body: CustomerUpdate,
    id: Annotated[str | None, Query()] = None,
    external_customer_id: Annotated[str | None, Query()] = None,
) -> CustomerResponse:
    """The reference API's form: ``PUT /customers?id=...`` or ``?external_customer_id=...``."""
    if id is None and external_customer_id is None:
        raise ValidationError("pass id or external_customer_id", field="id")
    customer_id = id or caller.customers.get_by_external_id(str(external_customer_id)).id
    return CustomerResponse.model_validate(caller.customers.update(customer_id, body).to_dict())


@router.delete("/{customer_id}", status_code=204)
def delete_customer(caller: EnvCaller, customer_id: str) -> Response:
    caller.customers.delete(customer_id)
    return Response(status_code=204)
