"""``/v1/creditgrants``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.catalog import CreditGrantScope
from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute, success
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.catalog import CreditGrantResponse, ListCreditGrantsResponse
from billingkit.services.credit_grants import CreditGrantCreate, CreditGrantSearch, CreditGrantUpdate

router = APIRouter(prefix="/creditgrants", tags=["credit grants"], route_class=WireRoute)


@router.post("", status_code=201)
def create_credit_grant(caller: EnvCaller, body: CreditGrantCreate) -> CreditGrantResponse:
    return CreditGrantResponse.model_validate(caller.credit_grants.create(body).to_dict())


@router.get("")
def list_credit_grants(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    scope: CreditGrantScope | None = None,
    credit_grant_ids: Annotated[list[str] | None, Query()] = None,
    plan_ids: Annotated[list[str] | None, Query()] = None,
    addon_ids: Annotated[list[str] | None, Query()] = None,
    subscription_ids: Annotated[list[str] | None, Query()] = None,
) -> ListCreditGrantsResponse:
    search = CreditGrantSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        scope=scope,
        credit_grant_ids=csv_list(credit_grant_ids),
        plan_ids=csv_list(plan_ids),
        addon_ids=csv_list(addon_ids),
        subscription_ids=csv_list(subscription_ids),
    )
    return ListCreditGrantsResponse.model_validate(caller.credit_grants.list(search).to_dict())


@router.get("/{credit_grant_id}")
def get_credit_grant(caller: EnvCaller, credit_grant_id: str) -> CreditGrantResponse:
    return CreditGrantResponse.model_validate(caller.credit_grants.get(credit_grant_id).to_dict())


@router.put("/{credit_grant_id}")
def update_credit_grant(
    caller: EnvCaller, credit_grant_id: str, body: CreditGrantUpdate
) -> CreditGrantResponse:
    return CreditGrantResponse.model_validate(caller.credit_grants.update(credit_grant_id, body).to_dict())


@router.delete("/{credit_grant_id}")
def delete_credit_grant(caller: EnvCaller, credit_grant_id: str) -> SuccessResponse:
    caller.credit_grants.delete(credit_grant_id)
    return success("credit grant deleted successfully")
