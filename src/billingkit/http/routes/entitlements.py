"""``/v1/entitlements``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/entitlements", tags=["entitlements"])
