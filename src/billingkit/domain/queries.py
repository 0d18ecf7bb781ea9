"""List queries shared by every store: filters, sorting, paging, and the page they return.

Operators follow the reference API: ``eq, contains, not_contains, gt, lt, gte, in, not_in, before,
after`` (plus ``lte`` and ``ne`` for completeness). A field is a resource attribute, or
``metadata.<key>`` for a metadata value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from billingkit.domain.display import Displayed
from billingkit.domain.resources import Status
from billingkit.domain.validation import MAX_OFFSET, MAX_TEXT, check_storable
from billingkit.errors import ValidationError

__all__ = ["MAX_LIMIT", "MAX_OFFSET", "Filter", "ListQuery", "Op", "Page", "Sort"]

T = TypeVar("T")
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


class Op(StrEnum):
    EQ = "eq"
    NE = "ne"
    CONTAINS = "contains"
    NOT_CONTAINS = "not_contains"
    GT = "gt"
    GTE = "gte"
    LT = "lt"
    LTE = "lte"
    IN = "in"
    NOT_IN = "not_in"
    BEFORE = "before"
    AFTER = "after"


@dataclass(frozen=True, slots=True)
class Filter:
    field: str
    op: Op
    value: Any


@dataclass(frozen=True, slots=True)
class Sort:
    field: str
    descending: bool = True


@dataclass(frozen=True, slots=True)
class ListQuery:
    """What to list. ``status=None`` lists every lifecycle status.

    ``limit`` is 1..1000 and ``offset`` 0..2**31-1; filter fields, sort fields and filter values
    must be text a database can compare (no NUL, no lone surrogate, values at most 4000
    characters, numbers finite); else a ``ValidationError`` naming the field.
    """

    filters: tuple[Filter, ...] = ()
    sort: tuple[Sort, ...] = (Sort("created_at"),)
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    status: Status | None = Status.PUBLISHED

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValidationError(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
        if not 0 <= self.offset <= MAX_OFFSET:
            raise ValidationError(f"offset must be between 0 and {MAX_OFFSET}", field="offset")
        for index, flt in enumerate(self.filters):
            check_storable(flt.field, f"filters[{index}].field", max_text=100)
            check_storable(flt.value, f"filters[{index}].value", max_text=MAX_TEXT)
        for index, order in enumerate(self.sort):
            check_storable(order.field, f"sort[{index}].field", max_text=100)

    @classmethod
    def where(cls, **equals: Any) -> ListQuery:
        """Shorthand for equality filters: ``ListQuery.where(email="a@b.c")``."""
        return cls(filters=tuple(Filter(k, Op.EQ, v) for k, v in equals.items()))


@dataclass(frozen=True, slots=True, repr=False)
class Page(Displayed, Generic[T]):
    """One page of a list, with the total number of matches across all pages."""

    items: Sequence[T]
    total: int
    limit: int
    offset: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.items) < self.total

    def to_pandas(self, *, customers: Any = None, lines: bool = False, money: str = "decimal") -> Any:
        """This page as a pandas ``DataFrame`` (the optional ``notebook`` extra).

        A page of invoices gives one row per invoice, or with ``lines=True`` one row per invoice
        line; ``customers`` joins each customer's ``external_id`` in (a ``Scoped``, which reads
        them, or the ``Customer`` records, as a list or by id). Other pages give one row per item
        with its fields. Money columns hold ``Decimal``; ``money="float"`` makes them floats.
        Raises ``ConfigurationError`` naming ``pip install 'billingkit[notebook]'`` without pandas.
        """
        # Imported when called: frames need the optional pandas, outside the domain.
        from billingkit.display.frames import page_frame

        return page_frame(self, customers=customers, lines=lines, money=money)

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [item.to_dict() if hasattr(item, "to_dict") else item for item in self.items],
            "pagination": {"limit": self.limit, "offset": self.offset, "total": self.total},
        }
