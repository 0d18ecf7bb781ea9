"""``/v1/groups``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from billingkit.domain.catalog import GroupEntityType
from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.features import GroupResponse, ListGroupsResponse
from billingkit.services.groups import GroupCreate, GroupSearch

router = APIRouter(prefix="/groups", tags=["groups"], route_class=WireRoute)


@router.post("", status_code=201)
def create_group(caller: EnvCaller, body: GroupCreate) -> GroupResponse:
    return GroupResponse.model_validate(caller.groups.create(body).to_dict())


@router.get("")
def list_groups(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    entity_type: GroupEntityType | None = None,
    lookup_key: Annotated[str | None, Query(max_length=255)] = None,
    name: Annotated[str | None, Query(max_length=255)] = None,
    group_ids: Annotated[list[str] | None, Query()] = None,
) -> ListGroupsResponse:
    search = GroupSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        entity_type=entity_type,
        lookup_key=lookup_key,
        name=name,
        group_ids=csv_list(group_ids),
    )
    return ListGroupsResponse.model_validate(caller.groups.list(search).to_dict())


@router.post("/search")
def search_groups(caller: EnvCaller, body: GroupSearch) -> ListGroupsResponse:
    return ListGroupsResponse.model_validate(caller.groups.search(body).to_dict())


@router.get("/{group_id}")
def get_group(caller: EnvCaller, group_id: str) -> GroupResponse:
    return GroupResponse.model_validate(caller.groups.get(group_id).to_dict())


@router.delete("/{group_id}", status_code=204)
def delete_group(caller: EnvCaller, group_id: str) -> Response:
    """Archive the group; its members leave it (their ``group_id`` is cleared)."""
    caller.groups.delete(group_id)
    return Response(status_code=204)
