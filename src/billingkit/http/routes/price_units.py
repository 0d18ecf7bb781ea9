"""``/v1/prices/units``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/prices/units", tags=["price units"])
