"""``/v1/coupons``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/coupons", tags=["coupons"])
