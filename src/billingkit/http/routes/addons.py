"""``/v1/addons``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/addons", tags=["add-ons"])
