"""``/v1/features``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/features", tags=["features"])
