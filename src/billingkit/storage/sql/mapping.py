"""Explicit mapping between rows and domain models.

A row holds exactly the table's columns; a model is rebuilt (and validated) from them. Enums are stored
as their values and tuples as JSON lists. Nothing outside ``storage.sql`` ever sees a row.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, TypeVar

from sqlalchemy import JSON, RowMapping, Table

from billingkit.domain.resources import Record

R = TypeVar("R", bound=Record)

__all__ = ["from_row", "to_row"]


def _column_value(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_column_value(v) for v in value]
    return value


def _json_columns(table: Table) -> frozenset[str]:
    cached: frozenset[str] | None = table.info.get("json_columns")
    if cached is None:
        cached = frozenset(c.name for c in table.columns if isinstance(c.type, JSON))
        table.info["json_columns"] = cached
    return cached


def to_row(item: Record, table: Table) -> dict[str, Any]:
    """The column values of ``item`` for ``table`` (every column must be a model field).

    JSON columns hold the model's JSON form (decimals as strings, nested models as objects), which
    validation turns back into the same values on the way out."""
    json_columns = _json_columns(table)
    row = {
        column.name: _column_value(getattr(item, column.name))
        for column in table.columns
        if column.name not in json_columns
    }
    if json_columns:
        row.update(item.model_dump(mode="json", include=set(json_columns)))
    return row


def from_row(row: RowMapping, model: type[R]) -> R:
    """Rebuild a model from a row; validation turns JSON lists back into tuples and enums."""
    return model.model_validate(dict(row))
