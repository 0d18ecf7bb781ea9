"""``/v1/plans``."""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand, Limit, Offset, Order, SortField, StatusParam, sort_by
from billingkit.http.rendering import WireRoute, success, whole_list
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.catalog import (
    ListCreditGrantsResponse,
    ListEntitlementsResponse,
    ListPlansResponse,
    PlanResponse,
)
from billingkit.services.plans import PlanClone, PlanCreate, PlanSearch, PlanUpdate

router = APIRouter(prefix="/plans", tags=["plans"], route_class=WireRoute)


@router.post("", status_code=201)
def create_plan(caller: EnvCaller, body: PlanCreate) -> PlanResponse:
    return PlanResponse.model_validate(caller.plans.create(body).to_dict())


@router.get("")
def list_plans(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    lookup_key: str | None = None,
    expand: Expand = None,
) -> ListPlansResponse:
    search = PlanSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        lookup_key=lookup_key,
        expand=expand,
    )
    return ListPlansResponse.model_validate(caller.plans.list(search).to_dict())


@router.post("/search")
def search_plans(caller: EnvCaller, body: PlanSearch) -> ListPlansResponse:
    return ListPlansResponse.model_validate(caller.plans.search(body).to_dict())


@router.get("/{plan_id}")
def get_plan(caller: EnvCaller, plan_id: str) -> PlanResponse:
    return PlanResponse.model_validate(caller.plans.get(plan_id).to_dict())


@router.put("/{plan_id}")
def update_plan(caller: EnvCaller, plan_id: str, body: PlanUpdate) -> PlanResponse:
    return PlanResponse.model_validate(caller.plans.update(plan_id, body).to_dict())


@router.delete("/{plan_id}")
def delete_plan(caller: EnvCaller, plan_id: str) -> SuccessResponse:
    caller.plans.delete(plan_id)
    return success("plan deleted successfully")


@router.post("/{plan_id}/clone", status_code=201)
def clone_plan(caller: EnvCaller, plan_id: str, body: PlanClone) -> PlanResponse:
    return PlanResponse.model_validate(caller.plans.clone(plan_id, body).to_dict())


@router.get("/{plan_id}/entitlements")
def plan_entitlements(caller: EnvCaller, plan_id: str) -> ListEntitlementsResponse:
    return whole_list(ListEntitlementsResponse, caller.plans.entitlements(plan_id))


@router.get("/{plan_id}/creditgrants")
def plan_credit_grants(caller: EnvCaller, plan_id: str) -> ListCreditGrantsResponse:
    return whole_list(ListCreditGrantsResponse, caller.plans.credit_grants(plan_id))
