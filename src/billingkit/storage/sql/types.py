"""Column types that keep billingkit's rules on every database.

- :class:`ExactDecimal`: NUMERIC on PostgreSQL; canonical text on SQLite, because SQLAlchemy's
  ``Numeric`` on SQLite passes through float and loses exactness.
- :class:`UtcDateTime`: ``timestamptz`` on PostgreSQL; fixed-width UTC text on SQLite (sorts
  correctly). Naive datetimes are rejected on the way in; values come back aware, in UTC.
- :class:`JsonDocument`: JSON, stored as JSONB on PostgreSQL, encoded and decoded by
  pydantic-core's Rust JSON codec (three to four times faster than the standard library's).
  A :class:`JsonText` value is a document encoded already and is stored as it is.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pydantic_core import from_json, to_json
from sqlalchemy import JSON, DateTime, Dialect, Numeric, String
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator, TypeEngine

from billingkit.errors import ValidationError

__all__ = [
    "ExactDecimal",
    "JsonDocument",
    "JsonText",
    "UtcDateTime",
    "decimal_text",
    "encode_json",
    "finite_decimal",
    "sqlite_instant",
    "sqlite_time",
    "utc_instant",
]


def sqlite_time(instant: datetime) -> str:
    """How an aware instant is stored on SQLite: fixed-width UTC text that sorts in time order
    (``0900-01-01 00:00:00.000000``: the year is always four digits, unlike ``strftime("%Y")``)."""
    return utc_instant(instant).isoformat(sep=" ", timespec="microseconds")[:26]  # without "+00:00"


def utc_instant(value: Any) -> datetime:
    """``value`` as an aware UTC datetime; ``ValidationError`` for anything else, naive included."""
    if isinstance(value, datetime) and value.tzinfo is UTC:
        return value
    if not isinstance(value, datetime):
        raise ValidationError(f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError("naive datetimes cannot be stored; pass an aware UTC datetime")
    return value.astimezone(UTC)


def sqlite_instant(text: str) -> datetime:
    """The aware UTC instant stored as :func:`sqlite_time` text."""
    # fromisoformat reads this fixed-width form about 20 times faster than strptime, and given the
    # offset it returns datetime.UTC itself, five times faster than a replace(tzinfo=UTC) after.
    return datetime.fromisoformat(text + "+00:00")


class UtcDateTime(TypeDecorator[datetime]):
    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(26))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        return sqlite_time(value) if dialect.name == "sqlite" else utc_instant(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            return sqlite_instant(value)
        if value.tzinfo is None:  # pragma: no cover - timestamptz always comes back aware
            return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
        return value.astimezone(UTC)  # type: ignore[no-any-return]


def finite_decimal(value: Any) -> Decimal:
    """``value`` if it is a finite ``Decimal``, else ``ValidationError``."""
    if not isinstance(value, Decimal) or not value.is_finite():
        raise ValidationError(f"expected a finite Decimal, got {value!r}")
    return value


def decimal_text(value: Any) -> str:
    """How a decimal is stored on SQLite: its exact plain text (``12.50``, never ``1.25E+1``)."""
    return format(finite_decimal(value), "f")


class ExactDecimal(TypeDecorator[Decimal]):
    impl = Numeric
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(64))
        return dialect.type_descriptor(Numeric(asdecimal=True))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        return decimal_text(value) if dialect.name == "sqlite" else finite_decimal(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        return Decimal(value) if not isinstance(value, Decimal) else value


class JsonText(str):
    """A JSON document encoded already (``RowEncoder`` encodes models straight to JSON text);
    :class:`JsonDocument` stores it unchanged instead of encoding it as a JSON string."""

    __slots__ = ()


def encode_json(value: Any) -> str:
    """The JSON text of ``value`` (``None`` is JSON ``null``, as SQLAlchemy's JSON type stores it)."""
    if isinstance(value, JsonText):
        return str(value)
    return to_json(value).decode()


class JsonDocument(TypeDecorator[Any]):
    """JSON on SQLite (text), JSONB on PostgreSQL."""

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.name == "postgresql" and dialect.driver == "psycopg":
            from psycopg.types.json import Jsonb

            return lambda value: Jsonb(value, dumps=encode_json)
        return encode_json

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        if dialect.name == "sqlite":
            return lambda value: None if value is None else from_json(value)
        return None  # psycopg hands JSONB back decoded
