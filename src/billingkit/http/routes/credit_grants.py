"""``/v1/creditgrants``."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/creditgrants", tags=["credit grants"])
