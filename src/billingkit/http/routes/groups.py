"""``/v1/groups``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/groups", tags=["groups"])
