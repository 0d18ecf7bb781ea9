"""``/v1/prices``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/prices", tags=["prices"])
