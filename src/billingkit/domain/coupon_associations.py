"""A coupon attached to a subscription or to one of its line items, as stored (the discount
arithmetic and the cadence rules are :mod:`billingkit.domain.coupons`)."""

from __future__ import annotations

from typing import Any

from billingkit.domain import coupons as core
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime

__all__ = ["CouponAssociation"]


class CouponAssociation(EnvironmentResource):
    """Coupon ``coupon_id`` discounting subscription ``subscription_id`` (the whole subscription
    when ``subscription_line_item_id`` is None, else that line item) from ``start_date`` until
    ``end_date`` (None: open; ``[start, end)``). ``applications`` counts the invoices it has
    discounted, so ``once`` and ``repeated`` coupons stop after theirs; it is internal (not on the
    wire). Removing an association archives it: later invoices lose its discount."""

    coupon_id: str
    subscription_id: str
    subscription_line_item_id: str | None = None
    subscription_phase_id: str | None = None
    start_date: UtcDatetime
    end_date: UtcDatetime | None = None
    applications: int = 0
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        target = self.subscription_line_item_id or self.subscription_id
        return f"<CouponAssociation {self.id} {self.coupon_id} on {target}>"

    def to_core(self, coupon: core.Coupon) -> core.CouponAssociation:
        """The billing core's view, with ``coupon`` (the core form of coupon ``coupon_id``)."""
        return core.CouponAssociation(
            id=self.id,
            coupon=coupon,
            start_date=self.start_date,
            end_date=self.end_date,
            line_item_id=self.subscription_line_item_id,
            applications=self.applications,
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form without the expanded ``coupon`` and line item (see the read views)."""
        return self.model_dump(mode="json", exclude={"applications"})
