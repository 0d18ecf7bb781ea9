"""``/v1/coupons``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from billingkit.domain.resources import Status
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order, SortField, StatusParam, csv_list, sort_by
from billingkit.http.rendering import success
from billingkit.services.coupons import CouponCreate, CouponSearch, CouponUpdate

router = APIRouter(prefix="/coupons", tags=["coupons"])


@router.post("", status_code=201)
def create_coupon(caller: EnvCaller, body: CouponCreate) -> dict[str, Any]:
    return caller.coupons.create(body).to_dict()


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
) -> dict[str, Any]:
    search = CouponSearch(
        limit=limit,
        offset=offset,
        order=order,
        sort=sort_by(sort, order),
        status=status,
        coupon_ids=csv_list(coupon_ids),
        coupon_codes=csv_list(coupon_codes),
    )
    return caller.coupons.list(search).to_dict()


@router.post("/search")
def search_coupons(caller: EnvCaller, body: CouponSearch) -> dict[str, Any]:
    return caller.coupons.search(body).to_dict()


@router.get("/code/{code}")
def get_coupon_by_code(caller: EnvCaller, code: str) -> dict[str, Any]:
    return caller.coupons.get_by_code(code).to_dict()


@router.get("/{coupon_id}")
def get_coupon(caller: EnvCaller, coupon_id: str) -> dict[str, Any]:
    return caller.coupons.get(coupon_id).to_dict()


@router.put("/{coupon_id}")
def update_coupon(caller: EnvCaller, coupon_id: str, body: CouponUpdate) -> dict[str, Any]:
    return caller.coupons.update(coupon_id, body).to_dict()


@router.delete("/{coupon_id}")
def delete_coupon(caller: EnvCaller, coupon_id: str) -> dict[str, str]:
    caller.coupons.delete(coupon_id)
    return success("coupon deleted successfully")
