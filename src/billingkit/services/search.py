"""Search and list requests shared by every area: paging, sorting, status and typed filters.

The wire shape follows the reference API: ``{limit, offset, order, sort: [{field, direction}],
status, filters: [{field, operator, data_type, value: {string|number|boolean|date|array}}]}``.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import Field, model_validator

from billingkit.domain.queries import MAX_LIMIT, MAX_OFFSET, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Status
from billingkit.domain.validation import MAX_FILTER_TEXT, InputModel, UtcDatetime

__all__ = ["FilterCondition", "SearchRequest", "SortCondition"]


class DataType(StrEnum):
    STRING = "string"
    NUMBER = "number"
    DATE = "date"
    ARRAY = "array"
    BOOLEAN = "boolean"


#: A text a filter compares with: at most 1000 characters (a longer ``contains`` term would make
#: SQLite's LIKE pattern too long, and no stored text of that length is worth searching for).
FilterText = Annotated[str, Field(max_length=MAX_FILTER_TEXT)]


class FilterValue(InputModel):
    string: FilterText | None = None
    number: Decimal | None = None
    boolean: bool | None = None
    date: UtcDatetime | None = None
    array: Annotated[list[FilterText], Field(max_length=MAX_LIMIT)] | None = None


class FilterCondition(InputModel):
    field: Annotated[str, Field(min_length=1, max_length=100)]
    operator: Op
    data_type: DataType = DataType.STRING
    value: FilterValue

    @model_validator(mode="after")
    def _value_matches_type(self) -> FilterCondition:
        if getattr(self.value, self.data_type.value) is None:
            raise ValueError(f"value.{self.data_type.value} is required for data_type {self.data_type.value}")
        if self.operator in (Op.IN, Op.NOT_IN) and self.data_type is not DataType.ARRAY:
            raise ValueError(f"operator {self.operator.value} needs data_type array")
        return self

    def to_filter(self) -> Filter:
        value: Any = getattr(self.value, self.data_type.value)
        return Filter(self.field, self.operator, value)


class SortCondition(InputModel):
    field: Annotated[str, Field(min_length=1, max_length=100)]
    direction: Literal["asc", "desc"] = "desc"


def _takes_value_list(annotation: Any) -> bool:
    """Whether ``annotation`` is ``list[str]`` or ``list[<a StrEnum>]`` (optionally ``| None``)."""
    for option in get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,):
        if get_origin(option) is list:
            (item,) = get_args(option)
            return item is str or (isinstance(item, type) and issubclass(item, StrEnum))
    return False


class SearchRequest(InputModel):
    """Common body of ``POST /<resource>/search`` (and the library's ``search`` methods)."""

    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 50
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0
    order: Literal["asc", "desc"] = "desc"
    sort: list[SortCondition] | None = None
    status: Status | None = Status.PUBLISHED
    filters: list[FilterCondition] = []
    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None
    expand: Annotated[str, Field(max_length=200)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_value_is_a_list(cls, data: Any) -> Any:
        """A list filter given one value means a list of it: ``subscription_status="active"`` (or
        ``SubscriptionStatus.ACTIVE``) is ``["active"]``."""
        if not isinstance(data, dict):
            return data
        wrapped = dict(data)
        for name, value in data.items():
            info = cls.model_fields.get(name)
            if isinstance(value, str) and info is not None and _takes_value_list(info.annotation):
                wrapped[name] = [value]
        return wrapped

    def extra_filters(self) -> list[Filter]:
        """Resource-specific filters; subclasses add theirs."""
        return []

    def to_query(self) -> ListQuery:
        filters = [f.to_filter() for f in self.filters]
        if self.start_time is not None:
            filters.append(Filter("created_at", Op.GTE, self.start_time))
        if self.end_time is not None:
            filters.append(Filter("created_at", Op.LT, self.end_time))
        filters += self.extra_filters()
        sort = (
            tuple(Sort(s.field, s.direction == "desc") for s in self.sort)
            if self.sort
            else (Sort("created_at", self.order == "desc"),)
        )
        return ListQuery(
            filters=tuple(filters),
            sort=sort,
            limit=self.limit,
            offset=self.offset,
            status=self.status,
        )
