"""Query parameters shared by list routes."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query

from billingkit.domain.queries import MAX_LIMIT
from billingkit.domain.resources import Status

__all__ = ["Limit", "Offset", "Order", "SortField", "StatusParam"]

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
Offset = Annotated[int, Query(ge=0)]
Order = Annotated[Literal["asc", "desc"], Query()]
SortField = Annotated[str | None, Query(max_length=100)]
StatusParam = Annotated[Status | None, Query()]
