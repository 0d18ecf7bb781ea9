"""List queries (filters, sort) of one table as SQL text with positional parameters.

The text is what SQLAlchemy's Core rendered for these queries before the adapter moved to one
SQL style (text statements run on the driver, see ``docs/decisions.md``), so the results are the
same on both dialects:

- ``eq``/``ne`` with ``None`` are ``IS NULL``/``IS NOT NULL``; other comparisons leave rows whose
  value is NULL out, as SQL does;
- ``in`` of no value selects nothing (``not_in`` of none, everything);
- ``contains`` is case-insensitive: ``ILIKE`` on PostgreSQL, ``lower(..) LIKE lower(..)`` on
  SQLite, with ``%``, ``_`` and ``\\`` in the term matched literally;
- ``metadata.<key>`` is the metadata value as text (``->>`` / ``json_extract``);
- ordering comparisons and sorts of decimals compare numbers on SQLite, which stores them as text
  (exactly) and would compare "100.00" < "49.00";
- sorts put NULL first ascending and last descending, as the memory store does.

Parameters are in stored form (:class:`~billingkit.storage.sql.mapping.RowEncoder`), ``{}``
marks each one (see :meth:`~billingkit.storage.sql.mapping.ColumnDecoder.select_sql`).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sqlalchemy import Dialect, Table

from billingkit.domain.queries import Filter, Op, Sort
from billingkit.errors import ValidationError
from billingkit.storage.records import plain_value
from billingkit.storage.sql.json_props import json_path
from billingkit.storage.sql.mapping import RowEncoder, guard
from billingkit.storage.sql.types import ExactDecimal

__all__ = ["Conditions", "order_by"]

_COMPARISONS = {Op.GT: ">", Op.AFTER: ">", Op.GTE: ">=", Op.LT: "<", Op.BEFORE: "<", Op.LTE: "<="}


class Conditions:
    """``AND``-ed conditions on one table and their parameters, in order."""

    def __init__(self, table: Table, dialect: Dialect, encoder: RowEncoder) -> None:
        self._table = table
        self._dialect = dialect
        self._encoder = encoder
        self.quote = dialect.identifier_preparer.quote
        self.parts: list[str] = []
        self.params: list[Any] = []

    def sql(self) -> str:
        return " AND ".join(self.parts) if self.parts else "1 = 1"

    def equal(self, column: str, value: Any) -> None:
        """``column = value`` (a scope column, ``status``), ``value`` already in stored form."""
        self.parts.append(f"{self.quote(column)} = {{}}")
        self.params.append(value)

    def guard(self, column: str, value: Any) -> None:
        """``column = value`` as a guard on rows found by their primary key (see
        :func:`~billingkit.storage.sql.mapping.guard`), ``value`` already in stored form."""
        self.parts.append(guard(self._dialect, column))
        self.params.append(value)

    def column(self, name: str, params: list[Any], *, ordered: bool = False) -> str:
        """The SQL for field ``name`` (its parameters appended to ``params``); ``ordered``: as
        compared by ``gt``/``lt`` and sorts (decimals as numbers on SQLite)."""
        if name.startswith("metadata."):
            params.append(self._metadata_key(name.removeprefix("metadata.")))
            column = self.quote("metadata")
            if self._dialect.name == "postgresql":
                return f"CAST(({column} ->> CAST({{}} AS TEXT)) AS VARCHAR)"
            return f"CAST(json_extract({column}, {{}}) AS VARCHAR)"
        quoted = self.quote(name)
        if ordered and self._dialect.name == "sqlite" and isinstance(self._table.c[name].type, ExactDecimal):
            return f"CAST({quoted} AS NUMERIC)"
        return quoted

    def _metadata_key(self, key: str) -> str:
        return key if self._dialect.name == "postgresql" else json_path(key)

    def _stored(self, name: str, value: Any) -> Any:
        stored = plain_value(value) if name.startswith("metadata.") else self._encoder.encode(name, value)
        if isinstance(stored, Decimal) and self._dialect.name == "sqlite":
            # A number compared with a column that is not a decimal one (sqlite3 binds no
            # Decimal): as a float, as SQLAlchemy's Numeric binds it.
            return float(stored)
        return stored

    def add(self, flt: Filter) -> None:
        """The condition ``flt`` sets."""
        params: list[Any] = []
        self.parts.append(self._condition(flt, params))
        self.params += params

    def _condition(self, flt: Filter, params: list[Any]) -> str:
        op, name, value = flt.op, flt.field, flt.value
        if op in (Op.EQ, Op.NE):
            column = self.column(name, params)
            if value is None:
                return f"{column} IS NULL" if op is Op.EQ else f"{column} IS NOT NULL"
            params.append(self._stored(name, value))
            return f"{column} = {{}}" if op is Op.EQ else f"{column} != {{}}"
        if op in (Op.IN, Op.NOT_IN):
            options = list(value)
            if not options:
                return "1 = 0" if op is Op.IN else "1 = 1"
            column = self.column(name, params)
            params += [self._stored(name, option) for option in options]
            found = f"{column} IN ({', '.join('{}' for _ in options)})"
            return found if op is Op.IN else f"NOT ({found})"
        if op in (Op.CONTAINS, Op.NOT_CONTAINS):
            column = self.column(name, params)
            params.append(
                "%" + str(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            )
            if self._dialect.name == "postgresql":
                found = f"{column} ILIKE {{}} ESCAPE '\\'"
            else:
                found = f"lower({column}) LIKE lower({{}}) ESCAPE '\\'"
            return found if op is Op.CONTAINS else f"NOT ({found})"
        comparison = _COMPARISONS.get(op)
        if comparison is None:  # pragma: no cover - every operator is handled above
            raise ValidationError(f"unsupported operator {op}", field="filters")
        column = self.column(name, params, ordered=True)
        params.append(self._stored(name, value))
        return f"{column} {comparison} {{}}"


def order_by(conditions: Conditions, sort: Sequence[Sort], params: list[Any]) -> str:
    """``ORDER BY`` for ``sort`` (NULL the smallest value, as on the memory store), then the id
    in the first sort's direction so pages never overlap."""
    parts = []
    for order in sort:
        column = conditions.column(order.field, params, ordered=True)
        parts.append(f"{column} DESC NULLS LAST" if order.descending else f"{column} ASC NULLS FIRST")
    first_descending = sort[0].descending if sort else True
    parts.append(f"{conditions.quote('id')} {'DESC' if first_descending else 'ASC'}")
    return "ORDER BY " + ", ".join(parts)
