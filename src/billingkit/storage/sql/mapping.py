"""Explicit mapping between rows and domain models.

A row holds exactly the table's columns; a model is rebuilt (and validated) from them. Enums are stored
as their values and tuples as JSON lists. Nothing outside ``storage.sql`` ever sees a row.

Writes go through a :class:`RowEncoder`: one small function per column turns a model's value
into the driver's parameter, the same stored form the column type writes (see
:mod:`billingkit.storage.sql.types`), without SQLAlchemy's per-row parameter processing, which
cost more than the database's own work on the billing run's batch inserts. Reads come back
through a :class:`ColumnDecoder` (:class:`RowDecoder` for whole models), the one decoding path
of the store: one small function per column, the other way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC
from decimal import Decimal
from enum import Enum
from functools import cache, lru_cache
from typing import Any, TypeVar, get_args

from pydantic import TypeAdapter
from pydantic_core import from_json
from sqlalchemy import Column, Dialect, Table

from billingkit.domain.resources import Record
from billingkit.storage.records import plain_value
from billingkit.storage.sql.types import (
    ExactDecimal,
    JsonDocument,
    JsonText,
    UtcDateTime,
    decimal_text,
    finite_decimal,
    sqlite_instant,
    sqlite_time,
    utc_instant,
)

R = TypeVar("R", bound=Record)

__all__ = [
    "ColumnDecoder",
    "RowDecoder",
    "RowEncoder",
    "column_decoder",
    "guard",
    "placeholder",
    "row_decoder",
    "row_encoder",
]


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


def _has_plain_enum(annotation: Any) -> bool:
    """Whether a field's type admits an ``Enum`` that is not also a ``str``."""
    if isinstance(annotation, type) and issubclass(annotation, Enum) and not issubclass(annotation, str):
        return True
    return any(_has_plain_enum(arg) for arg in get_args(annotation))


def _value_encoder(model: type[Record], column: Column[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """How one column's value of a validated ``model`` reaches the driver on ``dialect``; ``None``
    when the value goes as it is."""
    kind = column.type
    sqlite = dialect.name == "sqlite"
    if isinstance(kind, JsonDocument):
        dump = _json_encoder(model, column.name)
        if sqlite:
            return lambda value: dump(value).decode()
        wrap: Callable[[Any], Any] = kind.bind_processor(dialect)
        return lambda value: wrap(JsonText(dump(value).decode()))
    if isinstance(kind, UtcDateTime):
        # Both refuse naive datetimes. Rows of a batch share most instants (its "now", period
        # boundaries), so each column remembers the text of the last few thousand it wrote.
        stored = lru_cache(maxsize=4096)(sqlite_time) if sqlite else utc_instant
        return lambda value: None if value is None else stored(value)
    if isinstance(kind, ExactDecimal):
        exact = decimal_text if sqlite else finite_decimal
        return lambda value: None if value is None else exact(value)
    # sqlite3 binds a StrEnum member as the text it is (its value); psycopg would look the enum
    # type up among its adapters, so it gets the plain value.
    if sqlite and not _has_plain_enum(model.model_fields[column.name].annotation):
        return None
    return plain_value


class RowEncoder:
    """Rows of one model into one table on one dialect, as positional driver parameters, and the
    ``INSERT``/``UPDATE`` statement texts they go with (``?`` or ``%s`` placeholders)."""

    def __init__(self, model: type[Record], table: Table, dialect: Dialect) -> None:
        self._mark = placeholder(dialect)
        self._quote = dialect.identifier_preparer.quote
        self._dialect = dialect
        self.table = table
        self.columns = _column_names(table)
        self._encode = {c.name: _value_encoder(model, c, dialect) for c in table.columns}
        self._plan = tuple((name, self._encode[name]) for name in self.columns)
        self._statements: dict[tuple[str, ...], str] = {}

    def values(self, item: Record, columns: Iterable[str] | None = None) -> list[Any]:
        """The stored form of ``columns`` (default: all, in table order) of ``item``."""
        fields = item.__dict__  # a model's field values, without attribute lookups
        if columns is None:
            return [fields[name] if encode is None else encode(fields[name]) for name, encode in self._plan]
        encoders = self._encode
        return [
            fields[name] if (encode := encoders[name]) is None else encode(fields[name]) for name in columns
        ]

    def encode(self, column: str, value: Any) -> Any:
        """``value`` of ``column`` in its stored form (for a statement's parameters)."""
        encode = self._encode[column]
        return value if encode is None else encode(value)

    def insert_sql(self) -> str:
        """``INSERT`` of every column, parameters in table order."""
        key = ("insert",)
        sql = self._statements.get(key)
        if sql is None:
            names = ", ".join(self._quote(name) for name in self.columns)
            marks = ", ".join(self._mark for _ in self.columns)
            table = self._quote(self.table.name)
            sql = self._statements[key] = f"INSERT INTO {table} ({names}) VALUES ({marks})"
        return sql

    def update_sql(self, columns: tuple[str, ...], where: tuple[str, ...]) -> str:
        """``UPDATE ... SET <columns> WHERE <where, each equal>``: parameters are the new values
        of ``columns`` then the values ``where`` compares with. The first of ``where`` is the
        row's key (``id``), the others guard it (scope, version, state; see :func:`guard`)."""
        key = ("update", *columns, "|", *where)
        sql = self._statements.get(key)
        if sql is None:
            sets = ", ".join(f"{self._quote(name)} = {self._mark}" for name in columns)
            tests = " AND ".join(
                f"{self._quote(name)} = {self._mark}" if n == 0 else guard(self._dialect, name, self._mark)
                for n, name in enumerate(where)
            )
            sql = self._statements[key] = f"UPDATE {self._quote(self.table.name)} SET {sets} WHERE {tests}"
        return sql


def row_encoder(model: type[Record], table: Table, dialect: Dialect) -> RowEncoder:
    """The encoder of ``model`` rows into ``table`` on ``dialect`` (made once per kind of dialect,
    kept with the table like its other derived facts)."""
    key = ("row_encoder", model, dialect.name, dialect.driver, dialect.paramstyle)
    encoder: RowEncoder | None = table.info.get(key)
    if encoder is None:
        encoder = table.info[key] = RowEncoder(model, table, dialect)
    return encoder


def _value_decoder(column: Column[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """How one column's stored value comes back from the driver on ``dialect`` (``None``: as it
    is), as the column type reads it; model validation does the rest (e.g. 0/1 to a bool)."""
    kind = column.type
    sqlite = dialect.name == "sqlite"
    if isinstance(kind, JsonDocument):
        return (lambda value: None if value is None else from_json(value)) if sqlite else None
    if isinstance(kind, UtcDateTime):
        if sqlite:
            return lambda value: None if value is None else sqlite_instant(value)
        return lambda value: None if value is None or value.tzinfo is UTC else value.astimezone(UTC)
    if isinstance(kind, ExactDecimal):
        return (lambda value: None if value is None else Decimal(value)) if sqlite else None
    return None


class ColumnDecoder:
    """Driver rows of some columns of one table on one dialect back into Python values, and the
    ``SELECT`` texts they come from. Every read of the SQL store decodes its rows here, straight
    from the driver: SQLAlchemy's result processing cost more than the database's own work on
    the hot reads (the billing run's claim, batch lookups by id), the way :class:`RowEncoder`
    skips its parameter processing."""

    def __init__(self, table: Table, dialect: Dialect, columns: Sequence[str] | None = None) -> None:
        self.table = table
        self._mark = placeholder(dialect)
        self._quote = dialect.identifier_preparer.quote
        chosen = [table.c[name] for name in columns] if columns is not None else list(table.columns)
        self._plan = tuple((c.name, _value_decoder(c, dialect)) for c in chosen)
        self._columns = ", ".join(self._quote(c.name) for c in chosen)

    def select_sql(self, where: str, tail: str = "") -> str:
        """``SELECT <the columns> FROM <table> WHERE <where> <tail>``, with ``{}`` in ``where``
        and ``tail`` standing for each parameter (``"id = {}"``)."""
        text = f"SELECT {self._columns} FROM {self._quote(self.table.name)} WHERE {where} {tail}"
        return text.rstrip().replace("{}", self._mark)

    def values(self, rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
        """Each driver row (the columns in this decoder's order) as ``{column: value}``."""
        plan = self._plan
        return [
            {
                name: raw if decode is None else decode(raw)
                for (name, decode), raw in zip(plan, row, strict=True)
            }
            for row in rows
        ]


class RowDecoder(ColumnDecoder):
    """Driver rows of every column of one table into validated models."""

    def __init__(self, model: type[R], table: Table, dialect: Dialect) -> None:
        super().__init__(table, dialect)
        self.model = model

    def models(self, rows: Iterable[Sequence[Any]]) -> list[Any]:
        """Validated models of driver rows (each in table column order); validation turns JSON
        lists back into tuples and texts into enums."""
        plan, validate = self._plan, self.model.model_validate
        return [
            validate(
                {
                    name: raw if decode is None else decode(raw)
                    for (name, decode), raw in zip(plan, row, strict=True)
                }
            )
            for row in rows
        ]


def row_decoder(model: type[R], table: Table, dialect: Dialect) -> RowDecoder:
    """The decoder of ``table`` rows into ``model`` on ``dialect`` (made once per kind of dialect)."""
    key = ("row_decoder", model, dialect.name, dialect.driver, dialect.paramstyle)
    decoder: RowDecoder | None = table.info.get(key)
    if decoder is None:
        decoder = table.info[key] = RowDecoder(model, table, dialect)
    return decoder


def column_decoder(table: Table, dialect: Dialect, columns: tuple[str, ...]) -> ColumnDecoder:
    """The decoder of ``columns`` of ``table`` on ``dialect`` (made once per kind of dialect)."""
    key = ("column_decoder", columns, dialect.name, dialect.driver, dialect.paramstyle)
    decoder: ColumnDecoder | None = table.info.get(key)
    if decoder is None:
        decoder = table.info[key] = ColumnDecoder(table, dialect, columns)
    return decoder


def guard(dialect: Dialect, column: str, mark: str = "{}") -> str:
    """``column`` equal to the parameter ``mark``, as a guard on a row found by its primary key
    (its scope, version or state), which no index may serve.

    On PostgreSQL it is ``IS NOT DISTINCT FROM``, the same test for the non-null values a guard
    compares: the planner then finds the row by its primary key whatever the table's statistics
    say. With ``=`` and no statistics (rows added since the table was last analyzed, as after a
    burst of work on a new database) it took a scope index as cheap and read the whole scope for
    every row: 0.4 ms per row updated at 3,000 rows, growing with the table (issue 17). SQLite's
    planner prefers the primary key by itself."""
    quoted = dialect.identifier_preparer.quote(column)
    if dialect.name == "postgresql":
        return f"{quoted} IS NOT DISTINCT FROM {mark}"
    return f"{quoted} = {mark}"


def placeholder(dialect: Dialect) -> str:
    """The driver's positional parameter mark: ``?`` (sqlite3) or ``%s`` (psycopg)."""
    if dialect.paramstyle == "qmark":
        return "?"
    if dialect.paramstyle in ("format", "pyformat"):
        return "%s"
    raise ValueError(f"unsupported driver parameter style {dialect.paramstyle!r}")  # pragma: no cover
