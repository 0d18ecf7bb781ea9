"""``/v1/features``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand, Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute, success
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.features import FeatureResponse, ListFeaturesResponse
from billingkit.services.features import FeatureClone, FeatureCreate, FeatureSearch, FeatureUpdate

router = APIRouter(prefix="/features", tags=["features"], route_class=WireRoute)


@router.post("", status_code=201)
def create_feature(caller: EnvCaller, body: FeatureCreate) -> FeatureResponse:
    return FeatureResponse.model_validate(caller.features.create(body).to_dict())


@router.get("")
def list_features(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    expand: Expand = None,
    feature_ids: Annotated[list[str] | None, Query()] = None,
    lookup_key: Annotated[str | None, Query(max_length=255)] = None,
    lookup_keys: Annotated[list[str] | None, Query()] = None,
    meter_ids: Annotated[list[str] | None, Query()] = None,
    name_contains: Annotated[str | None, Query(max_length=255)] = None,
) -> ListFeaturesResponse:
    search = FeatureSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        expand=expand,
        feature_ids=csv_list(feature_ids),
        lookup_key=lookup_key,
        lookup_keys=csv_list(lookup_keys),
        meter_ids=csv_list(meter_ids),
        name_contains=name_contains,
    )
    return ListFeaturesResponse.model_validate(caller.features.search(search).to_dict())


@router.post("/search")
def search_features(caller: EnvCaller, body: FeatureSearch) -> ListFeaturesResponse:
    return ListFeaturesResponse.model_validate(caller.features.search(body).to_dict())


@router.get("/{feature_id}")
def get_feature(caller: EnvCaller, feature_id: str, expand: Expand = None) -> FeatureResponse:
    """The feature; a metered one always includes ``meter``; ``?expand=groups`` adds ``group``."""
    return FeatureResponse.model_validate(caller.features.detail(feature_id, expand).to_dict())


@router.put("/{feature_id}")
def update_feature(caller: EnvCaller, feature_id: str, body: FeatureUpdate) -> FeatureResponse:
    """Partial update; ``group_id: ""`` leaves the group; ``filters`` are added to the meter's."""
    return FeatureResponse.model_validate(caller.features.update(feature_id, body).to_dict())


@router.delete("/{feature_id}")
def delete_feature(caller: EnvCaller, feature_id: str) -> SuccessResponse:
    """Archive; 200 with ``{"message": ...}`` as in the reference API."""
    caller.features.delete(feature_id)
    return success("feature deleted successfully")


@router.post("/{feature_id}/clone", status_code=201)
def clone_feature(caller: EnvCaller, feature_id: str, body: FeatureClone) -> FeatureResponse:
    return FeatureResponse.model_validate(caller.features.clone(feature_id, body).to_dict())
