"""Query parameters shared by list routes."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query

from billingkit.domain.queries import MAX_LIMIT
from billingkit.domain.resources import Status
from billingkit.services.search import SortCondition

__all__ = ["Expand", "Limit", "Offset", "Order", "SortField", "StatusParam", "csv_list", "sort_by"]

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
Offset = Annotated[int, Query(ge=0)]
Order = Annotated[Literal["asc", "desc"], Query()]
SortField = Annotated[str | None, Query(max_length=100)]
StatusParam = Annotated[Status | None, Query()]
Expand = Annotated[str | None, Query(max_length=200)]


def csv_list(values: list[str] | None) -> list[str] | None:
    """Repeated (``?id=a&id=b``) and comma-separated (``?id=a,b``) list parameters, flattened."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()] or None


def sort_by(field: str | None, order: str) -> list[SortCondition] | None:
    """The ``?sort=name&order=asc`` form as the search body's ``sort`` list."""
    return [SortCondition(field=field, direction="asc" if order == "asc" else "desc")] if field else None
