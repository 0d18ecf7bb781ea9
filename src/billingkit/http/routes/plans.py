"""``/v1/plans``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/plans", tags=["plans"])
