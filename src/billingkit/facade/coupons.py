"""``scoped.coupons``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.catalog import Coupon
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import coupons as svc

__all__ = ["Coupons"]


class Coupons:
    """Coupons of one environment. Pass a request model or its fields as keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.CouponCreate | None = None, /, **fields: Any) -> Coupon:
        """Fields: ``name``, ``type`` (``fixed`` with ``amount_off`` and ``currency``, or
        ``percentage`` with ``percentage_off``), ``cadence`` (``once``, ``repeated`` with
        ``duration_in_periods``, ``forever``), ``coupon_code`` (unique among live coupons),
        ``max_redemptions`` (1..1,000,000), ``redeem_after``, ``redeem_before``, ``rules``,
        ``metadata``. Example: ``create(name="10% off", type="percentage", percentage_off="10",
        cadence="forever", coupon_code="TEN")``."""
        data = request or parse_input(svc.CouponCreate, fields)
        return self._s.run(svc.create_coupon, data=data)

    def get(self, coupon_id: str) -> Coupon:
        return self._s.run(svc.get_coupon, coupon_id=coupon_id)

    def get_by_code(self, coupon_code: str) -> Coupon:
        return self._s.run(svc.get_coupon_by_code, coupon_code=coupon_code)

    def update(self, coupon_id: str, request: svc.CouponUpdate | None = None, /, **fields: Any) -> Coupon:
        """Change ``name`` or ``metadata`` (nothing else changes after creation)."""
        data = request or parse_input(svc.CouponUpdate, fields)
        return self._s.run(svc.update_coupon, coupon_id=coupon_id, data=data)

    def delete(self, coupon_id: str) -> Coupon:
        return self._s.run(svc.delete_coupon, coupon_id=coupon_id)

    def list(self, request: svc.CouponSearch | None = None, /, **fields: Any) -> Page[Coupon]:
        """Filters: ``coupon_ids``, ``coupon_codes``, plus the common ``limit``, ``offset``,
        ``sort``, ``status`` and ``filters``."""
        data = request or parse_input(svc.CouponSearch, fields)
        return self._s.run(svc.list_coupons, search=data)

    def search(self, request: svc.CouponSearch | None = None, /, **fields: Any) -> Page[Coupon]:
        """The same filters as :meth:`list` (the body of ``POST /coupons/search``)."""
        return self.list(request, **fields)
