"""``/v1/entitlements``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.catalog import EntitlementEntityType, FeatureType
from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand, Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute, success
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.catalog import (
    CreateBulkEntitlementResponse,
    EntitlementResponse,
    ListEntitlementsResponse,
)
from billingkit.services.entitlements import (
    EntitlementBulkCreate,
    EntitlementCreate,
    EntitlementSearch,
    EntitlementUpdate,
)

router = APIRouter(prefix="/entitlements", tags=["entitlements"], route_class=WireRoute)


def _page(caller: EnvCaller, search: EntitlementSearch) -> ListEntitlementsResponse:
    page = caller.entitlements.list(search)
    body = page.to_dict()
    if search.expand:
        body["items"] = caller.entitlements.expand(page.items, search.expand)
    return ListEntitlementsResponse.model_validate(body)


@router.post("", status_code=201)
def create_entitlement(caller: EnvCaller, body: EntitlementCreate) -> EntitlementResponse:
    return EntitlementResponse.model_validate(caller.entitlements.create(body).to_dict())


@router.post("/bulk", status_code=201)
def create_entitlements_bulk(caller: EnvCaller, body: EntitlementBulkCreate) -> CreateBulkEntitlementResponse:
    created = caller.entitlements.create_bulk(body)
    return CreateBulkEntitlementResponse.model_validate({"items": [e.to_dict() for e in created]})


@router.get("")
def list_entitlements(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    expand: Expand = None,
    feature_ids: Annotated[list[str] | None, Query()] = None,
    plan_ids: Annotated[list[str] | None, Query()] = None,
    entity_ids: Annotated[list[str] | None, Query()] = None,
    entity_type: EntitlementEntityType | None = None,
    feature_type: FeatureType | None = None,
    is_enabled: bool | None = None,
) -> ListEntitlementsResponse:
    search = EntitlementSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        expand=expand,
        feature_ids=csv_list(feature_ids),
        plan_ids=csv_list(plan_ids),
        entity_ids=csv_list(entity_ids),
        entity_type=entity_type,
        feature_type=feature_type,
        is_enabled=is_enabled,
    )
    return _page(caller, search)


@router.post("/search")
def search_entitlements(caller: EnvCaller, body: EntitlementSearch) -> ListEntitlementsResponse:
    return _page(caller, body)


@router.get("/{entitlement_id}")
def get_entitlement(caller: EnvCaller, entitlement_id: str, expand: Expand = None) -> EntitlementResponse:
    entitlement = caller.entitlements.get(entitlement_id)
    if expand:
        return EntitlementResponse.model_validate(caller.entitlements.expand([entitlement], expand)[0])
    return EntitlementResponse.model_validate(entitlement.to_dict())


@router.put("/{entitlement_id}")
def update_entitlement(
    caller: EnvCaller, entitlement_id: str, body: EntitlementUpdate
) -> EntitlementResponse:
    return EntitlementResponse.model_validate(caller.entitlements.update(entitlement_id, body).to_dict())


@router.delete("/{entitlement_id}")
def delete_entitlement(caller: EnvCaller, entitlement_id: str) -> SuccessResponse:
    caller.entitlements.delete(entitlement_id)
    return success("entitlement deleted successfully")
