"""``/v1/addons``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand, Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute, success, whole_list
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.catalog import (
    AddonResponse,
    ListAddonsResponse,
    ListCreditGrantsResponse,
    ListEntitlementsResponse,
)
from billingkit.services.addons import AddonCreate, AddonSearch, AddonUpdate

router = APIRouter(prefix="/addons", tags=["add-ons"], route_class=WireRoute)


@router.post("", status_code=201)
def create_addon(caller: EnvCaller, body: AddonCreate) -> AddonResponse:
    return AddonResponse.model_validate(caller.addons.create(body).to_dict())


@router.get("")
def list_addons(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    lookup_keys: Annotated[list[str] | None, Query()] = None,
    expand: Expand = None,
) -> ListAddonsResponse:
    search = AddonSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        lookup_keys=csv_list(lookup_keys),
        expand=expand,
    )
    return ListAddonsResponse.model_validate(caller.addons.list(search).to_dict())


@router.post("/search")
def search_addons(caller: EnvCaller, body: AddonSearch) -> ListAddonsResponse:
    return ListAddonsResponse.model_validate(caller.addons.search(body).to_dict())


@router.get("/lookup/{lookup_key}")
def get_addon_by_lookup_key(caller: EnvCaller, lookup_key: str) -> AddonResponse:
    return AddonResponse.model_validate(caller.addons.get_by_lookup_key(lookup_key).to_dict())


@router.get("/{addon_id}")
def get_addon(caller: EnvCaller, addon_id: str) -> AddonResponse:
    return AddonResponse.model_validate(caller.addons.get(addon_id).to_dict())


@router.put("/{addon_id}")
def update_addon(caller: EnvCaller, addon_id: str, body: AddonUpdate) -> AddonResponse:
    return AddonResponse.model_validate(caller.addons.update(addon_id, body).to_dict())


@router.delete("/{addon_id}")
def delete_addon(caller: EnvCaller, addon_id: str) -> SuccessResponse:
    caller.addons.delete(addon_id)
    return success("add-on deleted successfully")


@router.get("/{addon_id}/entitlements")
def addon_entitlements(caller: EnvCaller, addon_id: str) -> ListEntitlementsResponse:
    return whole_list(ListEntitlementsResponse, caller.addons.entitlements(addon_id))


@router.get("/{addon_id}/creditgrants")
def addon_credit_grants(caller: EnvCaller, addon_id: str) -> ListCreditGrantsResponse:
    return whole_list(ListCreditGrantsResponse, caller.addons.credit_grants(addon_id))
