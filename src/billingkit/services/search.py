"""Search and list requests shared by every area: paging, sorting, status and typed filters.

The wire shape follows the reference API: ``{limit, offset, order, sort: [{field, direction}],
status, filters: [{field, operator, data_type, value: {string|number|boolean|date|array}}]}``.

Each area's search request adds its own fields (``customer_ids``, ``lookup_key``...) and says
what each one filters as data on the field, read once here::

    class CustomerSearch(SearchRequest):
        kind: ClassVar[str] = "customers"
        customer_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None

A request field given a value (not ``None``, not empty) adds its filters to the query. The
filters a request declares must be ``searchable`` on its kind (:mod:`billingkit.domain.kinds`):
a request class that filters on anything else is refused when it is defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import Enum, StrEnum
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import Field, model_validator

from billingkit.domain.kinds import KINDS
from billingkit.domain.queries import MAX_LIMIT, MAX_OFFSET, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Status
from billingkit.domain.validation import MAX_FILTER_TEXT, InputModel, UtcDatetime

__all__ = [
    "FilterCondition",
    "Present",
    "SearchRequest",
    "Searches",
    "SortCondition",
    "declared_filters",
]


class DataType(StrEnum):
    STRING = "string"
    NUMBER = "number"
    DATE = "date"
    ARRAY = "array"
    BOOLEAN = "boolean"


#: A text a filter compares with: at most 1000 characters (a longer ``contains`` term would make
#: SQLite's LIKE pattern too long, and no stored text of that length is worth searching for).
FilterText = Annotated[str, Field(max_length=MAX_FILTER_TEXT)]


_GIVEN: Any = object()  # Searches.value default: compare with the value the request was given


@dataclass(frozen=True, slots=True)
class Searches:
    """On a search request field: a given value ``v`` filters ``Filter(field, op, v)``.

    With ``value`` the filter compares with that fixed value instead (a price search's
    ``plan_ids`` also narrows to ``entity_type`` PLAN). A dict (metadata) gives one filter per
    key on ``<field>.<key>``. Enum members are compared by their value.
    """

    field: str
    op: Op
    value: Any = _GIVEN


@dataclass(frozen=True, slots=True)
class Present:
    """On a boolean search request field: ``True`` keeps the records whose ``field`` holds a
    value, ``False`` those whose ``field`` is empty (``None``)."""

    field: str


SearchMarker = Searches | Present


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list):
        return [item.value if isinstance(item, Enum) else item for item in value]
    return value


def _is_given(value: Any) -> bool:
    return value is not None and not (isinstance(value, str | list | tuple | dict) and len(value) == 0)


def declared_filters(request: type[SearchRequest]) -> tuple[tuple[str, SearchMarker], ...]:
    """Each (request field, marker) of ``request``, in field order."""
    return tuple(
        (name, marker)
        for name, info in request.model_fields.items()
        for marker in info.metadata
        if isinstance(marker, Searches | Present)
    )


def _undeclared(request: type[SearchRequest]) -> list[str]:
    """The declared filters of ``request`` that its kind does not list as searchable."""
    if request.kind is None:
        return []
    kind = KINDS.get(request.kind)
    if kind is None:
        return [f"kind {request.kind!r} is not a stored kind"]
    problems = []
    for name, marker in declared_filters(request):
        ops = (Op.EQ, Op.NE) if isinstance(marker, Present) else (marker.op,)
        for op in ops:
            if op not in kind.search_ops(marker.field):
                problems.append(f"{name}: {marker.field} {op.value}")
    return problems


def _filters(request: SearchRequest, name: str, marker: SearchMarker) -> list[Filter]:
    """The filters request field ``name`` adds under ``marker`` (none when it was not given)."""
    given = getattr(request, name)
    if not _is_given(given):
        return []
    if isinstance(marker, Present):
        return [Filter(marker.field, Op.NE if given else Op.EQ, None)]
    value = given if marker.value is _GIVEN else marker.value
    if isinstance(value, dict):
        return [Filter(f"{marker.field}.{key}", marker.op, item) for key, item in value.items()]
    return [Filter(marker.field, marker.op, _plain(value))]


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
    """Common body of ``POST /<resource>/search`` (and the library's ``search`` methods).

    Subclasses name their stored ``kind`` and mark the fields that filter (:class:`Searches`,
    :class:`Present`)."""

    #: The stored kind searched (a key of ``KINDS``); ``None`` only on this base class.
    kind: ClassVar[str | None] = None

    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 50
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0
    order: Literal["asc", "desc"] = "desc"
    sort: list[SortCondition] | None = None
    status: Status | None = Status.PUBLISHED
    filters: list[FilterCondition] = []
    start_time: Annotated[UtcDatetime | None, Searches("created_at", Op.GTE)] = None
    end_time: Annotated[UtcDatetime | None, Searches("created_at", Op.LT)] = None
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

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "extra_filters" in cls.__dict__:
            raise TypeError(
                f"{cls.__name__}.extra_filters() is no longer called: mark each filtering field "
                'instead, e.g. customer_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None'
            )
        problems = _undeclared(cls)
        if problems:
            raise TypeError(
                f"{cls.__name__} filters on what kind {cls.kind!r} does not declare searchable "
                f"(billingkit.domain.kinds): {'; '.join(problems)}"
            )
        cls._declared = declared_filters(cls)

    _declared: ClassVar[tuple[tuple[str, SearchMarker], ...]] = ()

    def to_query(self) -> ListQuery:
        filters = [f.to_filter() for f in self.filters]
        for name, marker in self._declared:
            filters += _filters(self, name, marker)
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


SearchRequest._declared = declared_filters(SearchRequest)
