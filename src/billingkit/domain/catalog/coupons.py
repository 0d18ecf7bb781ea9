"""Coupons as catalogue resources (the discount arithmetic is :mod:`billingkit.domain.coupons`)."""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any

from billingkit.domain import coupons as core
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime
from billingkit.errors import ValidationError

__all__ = ["MAX_REDEMPTIONS", "Coupon", "CouponCadence", "CouponType", "check_coupon"]

#: The most redemptions a coupon may allow (bounded so a limit is always a real number).
MAX_REDEMPTIONS = 1_000_000


class CouponType(StrEnum):
    FIXED = "fixed"
    PERCENTAGE = "percentage"


class CouponCadence(StrEnum):
    ONCE = "once"
    REPEATED = "repeated"
    FOREVER = "forever"


class Coupon(EnvironmentResource):
    """A discount: ``amount_off`` in ``currency`` (fixed) or ``percentage_off`` (percentage),
    applied ``once``, for ``duration_in_periods`` periods (``repeated``) or ``forever``.
    ``coupon_code`` is unique among live coupons; ``rules`` is stored, not evaluated."""

    name: str
    type: CouponType
    cadence: CouponCadence
    coupon_code: str | None = None
    amount_off: Decimal | None = None
    percentage_off: Decimal | None = None
    currency: str | None = None
    duration_in_periods: int | None = None
    max_redemptions: int | None = None
    total_redemptions: int = 0
    redeem_after: UtcDatetime | None = None
    redeem_before: UtcDatetime | None = None
    rules: dict[str, Any] | None = None
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        off = (
            f"{self.percentage_off}%"
            if self.type is CouponType.PERCENTAGE
            else f"{self.amount_off} {self.currency}"
        )
        return f"<Coupon {self.id} {self.name!r} {off} {self.cadence.value}>"

    def to_core(self) -> core.Coupon:
        """The calculator's view, for :func:`~billingkit.domain.coupons.apply_coupons`."""
        return core.Coupon(
            id=self.id,
            type=self.type.value,
            cadence=self.cadence.value,
            amount_off=self.amount_off,
            percentage_off=self.percentage_off,
            currency=self.currency,
            duration_in_periods=self.duration_in_periods,
            redeem_after=self.redeem_after,
            redeem_before=self.redeem_before,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def check_coupon(coupon: Coupon) -> core.Coupon:
    """The core's rules (amount or percentage by type, ``duration_in_periods`` only and always for
    ``repeated``, ``redeem_after`` < ``redeem_before``), plus: a fixed coupon names its currency and
    ``max_redemptions`` is within 1..1,000,000. Raises ``ValidationError`` naming the field."""
    if coupon.type is CouponType.FIXED and not coupon.currency:
        raise ValidationError("currency is required for fixed coupons", field="currency")
    if coupon.max_redemptions is not None and not 1 <= coupon.max_redemptions <= MAX_REDEMPTIONS:
        raise ValidationError(
            f"max_redemptions must be between 1 and {MAX_REDEMPTIONS:,}", field="max_redemptions"
        )
    return coupon.to_core()
