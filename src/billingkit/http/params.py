"""Query parameters shared by list routes."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Request
from pydantic import AfterValidator

from billingkit.domain.queries import MAX_LIMIT, MAX_OFFSET
from billingkit.domain.resources import Status
from billingkit.domain.validation import check_storable, text_problem, unstorable_text
from billingkit.errors import NotFound
from billingkit.services.search import SortCondition

__all__ = [
    "Expand",
    "Limit",
    "Offset",
    "Order",
    "SortField",
    "StatusParam",
    "check_request_text",
    "csv_list",
    "sort_by",
]

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET)]
Order = Annotated[Literal["asc", "desc"], Query()]


def _sort_field(value: str | None) -> str | None:
    if value is not None and value and not value.strip():
        raise ValueError("must name a field (it is blank)")
    return value or None


#: ``?sort=name``; empty means the default order, whitespace alone is a 400 naming ``sort``.
SortField = Annotated[str | None, Query(max_length=100), AfterValidator(_sort_field)]
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


def check_request_text(request: Request) -> None:
    """Every route's first step: query strings and path parameters go through the same check as
    bodies (:func:`~billingkit.domain.validation.check_storable`).

    A query value with a NUL or a lone surrogate, or over 4000 characters, is a 400 naming the
    parameter. A path parameter no store could hold names no resource: 404 ``not_found``.
    """
    for name, value in request.path_params.items():
        if isinstance(value, str) and unstorable_text(value):
            raise NotFound(f"no resource has the {name} given (it {text_problem(value)})")
    for name, value in request.query_params.multi_items():
        check_storable(value, name)
