"""A ledger (a repository over an append-only kind) in the SQL store, and its exact sums.

Exactness: PostgreSQL sums ``NUMERIC`` exactly. SQLite stores decimals as canonical text and its
own ``sum()`` is binary floating point, so it sums through ``bk_decimal_sum``, a small Python
aggregate (registered on every connection, like the usage aggregates) that adds ``Decimal``s.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Record
from billingkit.domain.usage import EXACT
from billingkit.domain.validation import unstorable_text
from billingkit.errors import NotFound, ValidationError
from billingkit.storage.ledgers import (
    PENDING,
    check_settle,
    check_sum,
    refuse_change,
    refuse_settle,
    settle_status,
)
from billingkit.storage.sql.mapping import column_decoder, placeholder
from billingkit.storage.sql.repository import SqlRepository
from billingkit.storage.sql.types import decimal_text

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

    def _sum_sql(
        self, field: str, group_by: str | None, equals: dict[str, Any]
    ) -> tuple[str, list[Any]] | None:
        """``SELECT [group_by,] <exact sum of field>`` over the scope's rows whose fields equal
        ``equals``, and its parameters; ``None`` when a value is text no store can hold (a NUL, a
        lone surrogate): no row matches it."""
        if any(isinstance(v, str) and unstorable_text(v) for v in equals.values()):
            return None
        conditions = self._conditions()
        for name, value in equals.items():
            conditions.add(Filter(name, Op.EQ, value))
        column = conditions.quote(field)
        total = f"bk_decimal_sum({column})" if self._conn.dialect.name == "sqlite" else f"sum({column})"
        table = conditions.quote(self._table.name)
        if group_by is None:
            sql = f"SELECT {total} FROM {table} WHERE {conditions.sql()}"
        else:
            group = conditions.quote(group_by)
            sql = f"SELECT {group}, {total} FROM {table} WHERE {conditions.sql()} GROUP BY {group}"
        return sql.replace("{}", placeholder(self._conn.dialect)), conditions.params

    def sum(self, field: str, /, **equals: Any) -> Decimal:
        check_sum(self._kind, field, None, equals)
        statement = self._sum_sql(field, None, equals)
        if statement is None:
            return Decimal(0)
        rows = self._conn.exec_driver_sql(statement[0], tuple(statement[1])).fetchall()
        # The sum decodes as the field's own column does (decimal text on SQLite).
        (found,) = column_decoder(self._table, self._conn.dialect, (field,)).values(rows)
        total: Decimal | None = found[field]
        return Decimal(0) if total is None else total  # SUM of no rows is NULL

    def sum_by(self, field: str, group_by: str, /, **equals: Any) -> dict[str | None, Decimal]:
        check_sum(self._kind, field, group_by, equals)
        statement = self._sum_sql(field, group_by, equals)
        if statement is None:
            return {}
        rows = self._conn.exec_driver_sql(statement[0], tuple(statement[1])).fetchall()
        found = column_decoder(self._table, self._conn.dialect, (group_by, field)).values(rows)
        return {row[group_by]: Decimal(0) if row[field] is None else row[field] for row in found}

    def settle(self, id: str, /, status: str, *, updated_at: datetime, updated_by: str) -> T:
        check_settle(self._kind, status)
        current = self.get(id)  # NotFound for a row this scope cannot see
        settled = type(current).model_validate(
            {
                **current.model_dump(),
                "transaction_status": status,
                "updated_at": updated_at,
                "updated_by": updated_by,
            }
        )
        encoder = self._encoder()
        columns = ("transaction_status", "updated_at", "updated_by")
        where = (*self._where(False), "transaction_status")
        sql = encoder.update_sql(columns, where)
        # Guarded on the row still being pending: of two concurrent settles, the second finds
        # no pending row (PostgreSQL re-checks the condition after the first commits).
        params = (*encoder.values(settled, columns), *self._match(id, None), PENDING)
        with self._atomic((settled,), many=False):
            rowcount = self._conn.exec_driver_sql(sql, params).rowcount
        if rowcount == 0:
            fresh = self.get(id)
            raise refuse_settle(self._kind, id, settle_status(fresh))
        return settled
