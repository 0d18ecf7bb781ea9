"""Answers of ``/v1/coupons`` and ``/v1/taxes/rates``: what changes an invoice's total."""

from __future__ import annotations

from typing import Any

from billingkit import CouponCadence, CouponType, TaxRateScope, TaxRateStatus, TaxRateType
from billingkit.http.schemas.base import (
    DecimalString,
    EnvironmentRecordResponse,
    PaginationResponse,
    Timestamp,
    WireModel,
)

__all__ = ["CouponResponse", "ListCouponsResponse", "ListTaxRatesResponse", "TaxRateResponse"]


class CouponResponse(EnvironmentRecordResponse):
    """A discount: ``amount_off`` in ``currency`` (fixed) or ``percentage_off`` (percentage),
    applied ``once``, for ``duration_in_periods`` periods (``repeated``) or ``forever``."""

    name: str
    type: CouponType
    cadence: CouponCadence
    coupon_code: str | None
    amount_off: DecimalString | None
    percentage_off: DecimalString | None
    currency: str | None
    duration_in_periods: int | None
    max_redemptions: int | None
    total_redemptions: int
    redeem_after: Timestamp | None
    redeem_before: Timestamp | None
    rules: dict[str, Any] | None
    metadata: dict[str, str]


class ListCouponsResponse(WireModel):
    items: list[CouponResponse]
    pagination: PaginationResponse


class TaxRateResponse(EnvironmentRecordResponse):
    """``percentage_value`` percent (0-100) or a ``fixed_value`` amount; only ``ACTIVE`` rates are
    applied to new invoices."""

    name: str
    code: str
    tax_rate_type: TaxRateType
    percentage_value: DecimalString | None
    fixed_value: DecimalString | None
    description: str | None
    scope: TaxRateScope
    tax_rate_status: TaxRateStatus
    metadata: dict[str, str]


class ListTaxRatesResponse(WireModel):
    items: list[TaxRateResponse]
    pagination: PaginationResponse
