"""Explicit mapping between rows and domain models.

A row holds exactly the table's columns; a model is rebuilt (and validated) from them. Enums are stored
as their values and tuples as JSON lists. Nothing outside ``storage.sql`` ever sees a row.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar

from sqlalchemy import RowMapping, Table

from billingkit.domain.resources import Record

R = TypeVar("R", bound=Record)

__all__ = ["from_row", "to_row"]


def _column_value(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_column_value(v) for v in value]
    return value


def to_row(item: Record, table: Table) -> dict[str, Any]:
    """The column values of ``item`` for ``table`` (every column must be a model field)."""
    return {column.name: _column_value(getattr(item, column.name)) for column in table.columns}


def from_row(row: RowMapping, model: type[R]) -> R:
    """Rebuild a model from a row; validation turns JSON lists back into tuples and enums."""
    return model.model_validate(dict(row))
