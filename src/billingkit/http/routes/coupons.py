"""``/v1/coupons`` and ``/v1/coupons/associations`` (declared before ``/coupons/{coupon_id}``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand, Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import WireRoute, success
from billingkit.http.schemas.adjustments import CouponResponse, ListCouponsResponse
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.billing import CouponAssociationResponse, ListCouponAssociationsResponse
from billingkit.services.coupon_association_reads import CouponAssociationSearch
from billingkit.services.coupons import CouponCreate, CouponSearch, CouponUpdate

router = APIRouter(prefix="/coupons", tags=["coupons"], route_class=WireRoute)


@router.post("", status_code=201)
def create_coupon(caller: EnvCaller, body: CouponCreate) -> CouponResponse:
    return CouponResponse.model_validate(caller.coupons.create(body).to_dict())


@router.get("")
def list_coupons(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    coupon_ids: Annotated[list[str] | None, Query()] = None,
    coupon_codes: Annotated[list[str] | None, Query()] = None,
) -> ListCouponsResponse:
    search = CouponSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        coupon_ids=csv_list(coupon_ids),
        coupon_codes=csv_list(coupon_codes),
    )
    return ListCouponsResponse.model_validate(caller.coupons.list(search).to_dict())


@router.get("/associations")
def list_coupon_associations(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    subscription_ids: Annotated[list[str] | None, Query()] = None,
    coupon_ids: Annotated[list[str] | None, Query()] = None,
    active_only: bool = False,
    expand: Expand = None,
) -> ListCouponAssociationsResponse:
    """Coupons attached to subscriptions (newest first); ``expand``: ``coupon``,
    ``subscription_line_items``."""
    search = CouponAssociationSearch(
        limit=limit,
        offset=offset,
        subscription_ids=csv_list(subscription_ids),
        coupon_ids=csv_list(coupon_ids),
        active_only=active_only,
        expand=expand,
    )
    return ListCouponAssociationsResponse.model_validate(caller.coupons.associations(search).to_dict())


@router.get("/associations/{association_id}")
def get_coupon_association(caller: EnvCaller, association_id: str) -> CouponAssociationResponse:
    """One association with its ``coupon`` (and ``subscription_line_item`` when line-level)."""
    return CouponAssociationResponse.model_validate(caller.coupons.association(association_id).to_dict())


@router.post("/search")
def search_coupons(caller: EnvCaller, body: CouponSearch) -> ListCouponsResponse:
    return ListCouponsResponse.model_validate(caller.coupons.search(body).to_dict())


@router.get("/code/{code}")
def get_coupon_by_code(caller: EnvCaller, code: str) -> CouponResponse:
    return CouponResponse.model_validate(caller.coupons.get_by_code(code).to_dict())


@router.get("/{coupon_id}")
def get_coupon(caller: EnvCaller, coupon_id: str) -> CouponResponse:
    return CouponResponse.model_validate(caller.coupons.get(coupon_id).to_dict())


@router.put("/{coupon_id}")
def update_coupon(caller: EnvCaller, coupon_id: str, body: CouponUpdate) -> CouponResponse:
    return CouponResponse.model_validate(caller.coupons.update(coupon_id, body).to_dict())


@router.delete("/{coupon_id}")
def delete_coupon(caller: EnvCaller, coupon_id: str) -> SuccessResponse:
    caller.coupons.delete(coupon_id)
    return success("coupon deleted successfully")
