"""A ledger (a repository over an append-only kind) in the SQL store, and its exact sums.

Exactness: PostgreSQL sums ``NUMERIC`` exactly. SQLite stores decimals as canonical text and its
own ``sum()`` is binary floating point, so it sums through ``bk_decimal_sum``, a small Python
aggregate (registered on every connection, like the usage aggregates) that adds ``Decimal``s.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, func, select

from billingkit.domain.resources import Record
from billingkit.domain.usage import EXACT
from billingkit.domain.validation import unstorable_text
from billingkit.errors import NotFound, ValidationError
from billingkit.storage.ledgers import check_sum, refuse_change
from billingkit.storage.sql.mapping import plain_value
from billingkit.storage.sql.repository import SqlRepository
from billingkit.storage.sql.types import ExactDecimal, decimal_text

T = TypeVar("T", bound=Record)

__all__ = ["SqlLedger", "register_sqlite_ledger_functions"]


class _SqliteDecimalSum:
    """``bk_decimal_sum(decimal_text)`` → the exact sum as decimal text (``"0"`` for no rows)."""

    def __init__(self) -> None:
        self.total = Decimal(0)

    def step(self, text: str | None) -> None:
        if text is not None:
            self.total = EXACT.add(self.total, Decimal(text))

    def finalize(self) -> str:
        return decimal_text(self.total)


def register_sqlite_ledger_functions(dbapi_connection: Any) -> None:
    """Install the aggregate the SQLite ledger sums call (done on every new connection)."""
    dbapi_connection.create_aggregate("bk_decimal_sum", 1, _SqliteDecimalSum)


class SqlLedger(SqlRepository[T]):
    """Adds, reads and sums rows; refuses every change to a stored row (``AppendOnly``)."""

    def update(self, item: T, *, expected_version: int | None = None) -> T:
        self._check_scope(item)
        self.get(item.id)  # NotFound for a row this scope cannot see, as on every kind
        raise refuse_change(self._kind, item.id)

    def update_many(self, changes: Sequence[tuple[T, T]]) -> builtins.list[T]:
        for stored, changed in changes:
            self._check_scope(changed)
            if changed.id != stored.id:
                raise ValidationError("update_many pairs must share an id", field="id")
        ids = [stored.id for stored, _changed in changes]
        found = {item.id for item in self.find_many(ids)}
        missing = next((id for id in ids if id not in found), None)
        if missing is not None:
            raise NotFound(f"{self._kind.label} {missing} not found")
        if ids:
            raise refuse_change(self._kind, ids[0])
        return []

    def _total(self, field: str) -> ColumnElement[Any]:
        column = self._table.c[field]
        if self._conn.dialect.name == "sqlite":
            return func.bk_decimal_sum(column, type_=ExactDecimal())
        return func.sum(column, type_=ExactDecimal())

    def _filters(self, equals: dict[str, Any]) -> builtins.list[ColumnElement[bool]] | None:
        """The scope and ``equals`` as a WHERE clause; ``None`` when a value is text no store
        can hold (a NUL, a lone surrogate): no row matches it."""
        if any(isinstance(v, str) and unstorable_text(v) for v in equals.values()):
            return None
        return [*self._scope_clause(), *(self._table.c[k] == plain_value(v) for k, v in equals.items())]

    def sum(self, field: str, /, **equals: Any) -> Decimal:
        check_sum(self._kind, field, None, equals)
        where = self._filters(equals)
        if where is None:
            return Decimal(0)
        total = self._conn.execute(select(self._total(field)).where(*where)).scalar_one()
        return Decimal(0) if total is None else total  # SUM of no rows is NULL

    def sum_by(self, field: str, group_by: str, /, **equals: Any) -> dict[str | None, Decimal]:
        check_sum(self._kind, field, group_by, equals)
        where = self._filters(equals)
        if where is None:
            return {}
        group = self._table.c[group_by]
        rows = self._conn.execute(select(group, self._total(field)).where(*where).group_by(group))
        return {key: Decimal(0) if total is None else total for key, total in rows}
