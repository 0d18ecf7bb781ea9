"""``/v1/meters``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/meters", tags=["meters"])
