"""Explicit mapping between rows and domain models.

A row holds exactly the table's columns; a model is rebuilt (and validated) from them. Enums are stored
as their values and tuples as JSON lists. Nothing outside ``storage.sql`` ever sees a row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from functools import cache
from typing import Any, TypeVar

from pydantic import TypeAdapter
from sqlalchemy import RowMapping, Table

from billingkit.domain.resources import Record
from billingkit.storage.sql.types import JsonDocument, JsonText

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
        cached = frozenset(c.name for c in table.columns if isinstance(c.type, JsonDocument))
        table.info["json_columns"] = cached
    return cached


@cache
def _json_encoder(model: type[Record], name: str) -> Callable[[Any], bytes]:
    """Encodes field ``name`` of ``model`` to JSON text the way ``model_dump_json`` would,
    straight from the field's value (no intermediate Python dicts), in pydantic-core."""
    annotation: Any = model.model_fields[name].annotation
    return TypeAdapter(annotation).dump_json


def _column_names(table: Table) -> tuple[str, ...]:
    cached: tuple[str, ...] | None = table.info.get("column_names")
    if cached is None:
        cached = tuple(column.name for column in table.columns)
        table.info["column_names"] = cached
    return cached


def to_row(item: Record, table: Table, columns: Iterable[str] | None = None) -> dict[str, Any]:
    """The values of ``columns`` (default: every column of ``table``, each a model field) of
    ``item``.

    JSON columns hold the model's JSON form (decimals as strings, nested models as objects), which
    validation turns back into the same values on the way out."""
    json_columns = _json_columns(table)
    names = _column_names(table) if columns is None else columns
    row: dict[str, Any] = {}
    model = type(item)
    for name in names:
        if name in json_columns:
            row[name] = JsonText(_json_encoder(model, name)(getattr(item, name)).decode())
        else:
            row[name] = _column_value(getattr(item, name))
    return row


def from_row(row: RowMapping, model: type[R]) -> R:
    """Rebuild a model from a row; validation turns JSON lists back into tuples and enums."""
    return model.model_validate(dict(row))
