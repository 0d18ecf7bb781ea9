"""Answers of ``/v1/costs`` (cost sheets and cost analytics), and the reference's camel-case
search body ``costsheet.Filter``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from billingkit.domain.queries import MAX_LIMIT, MAX_OFFSET
from billingkit.domain.resources import Status
from billingkit.domain.validation import InputModel, Key, Name, UtcDatetime
from billingkit.http.schemas.base import EnvironmentRecordResponse, PaginationResponse, WireModel
from billingkit.http.schemas.catalog import PriceResponse
from billingkit.services.costsheets import CostsheetSearch
from billingkit.services.search import FilterCondition, SortCondition

__all__ = [
    "CostsheetEnvelope",
    "CostsheetFilter",
    "CostsheetResponse",
    "DeleteCostsheetResponse",
    "ListCostsheetResponse",
]


class CostsheetResponse(EnvironmentRecordResponse):
    """A cost sheet with its live prices (USAGE prices on meters: what the seller pays)."""

    name: str
    lookup_key: str | None
    description: str | None
    metadata: dict[str, str]
    prices: list[PriceResponse]


class CostsheetEnvelope(WireModel):
    """``{"costsheet": ...}``: the answer of create, get and update."""

    costsheet: CostsheetResponse


class ListCostsheetResponse(WireModel):
    items: list[CostsheetResponse]
    pagination: PaginationResponse


class DeleteCostsheetResponse(WireModel):
    id: str
    message: str


Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]


class _QueryFilter(InputModel):
    limit: Limit | None = None
    offset: Offset | None = None
    order: Literal["asc", "desc"] | None = None
    sort: Annotated[str, Field(max_length=100)] | None = None
    status: Status | None = None
    expand: Annotated[str, Field(max_length=200)] | None = None


class _TimeRangeFilter(InputModel):
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None


class CostsheetFilter(InputModel):
    """``POST /costs/search`` as the reference spells it (``costsheetIDs``, ``lookupKey``,
    ``queryFilter``, ``timeRangeFilter``...).
    ``tenantID``/``environmentID`` are ignored: the caller's own scope is searched. Paging may
    also be given at the top level (``limit``, ``offset``, ``order``) as on every other search;
    ``queryFilter`` wins."""

    model_config = ConfigDict(populate_by_name=True)

    costsheet_ids: Annotated[list[str] | None, Field(alias="costsheetIDs")] = None
    lookup_key: Annotated[Key | None, Field(alias="lookupKey")] = None
    name: Name | None = None
    status: Status | None = None
    filters: list[FilterCondition] = []
    sort: list[SortCondition] | None = None
    query_filter: Annotated[_QueryFilter | None, Field(alias="queryFilter")] = None
    time_range_filter: Annotated[_TimeRangeFilter | None, Field(alias="timeRangeFilter")] = None
    tenant_id: Annotated[str | None, Field(alias="tenantID", max_length=64)] = None
    environment_id: Annotated[str | None, Field(alias="environmentID", max_length=64)] = None
    limit: Limit | None = None
    offset: Offset | None = None
    order: Literal["asc", "desc"] | None = None

    def to_search(self) -> CostsheetSearch:
        """The library's search request (paging from ``queryFilter``; status: ``status``, else
        ``queryFilter.status``, else published)."""
        page = self.query_filter or _QueryFilter()
        times = self.time_range_filter or _TimeRangeFilter()
        fields: dict[str, object] = {
            "costsheet_ids": self.costsheet_ids,
            "lookup_key": self.lookup_key,
            "name": self.name,
            "filters": self.filters,
            "sort": self.sort,
            "start_time": times.start_time,
            "end_time": times.end_time,
            "expand": page.expand,
        }
        for name in ("limit", "offset", "order"):
            value = getattr(page, name)
            value = getattr(self, name) if value is None else value
            if value is not None:
                fields[name] = value
        status = self.status or page.status
        if status is not None:
            fields["status"] = status
        return CostsheetSearch(**fields)


# The body is read by the reference's camel-case names (the fields' aliases).
CostsheetFilter.accepted_fields = tuple(
    sorted(info.alias or name for name, info in CostsheetFilter.model_fields.items())
)
CostsheetFilter._accepted = frozenset(CostsheetFilter.accepted_fields)
