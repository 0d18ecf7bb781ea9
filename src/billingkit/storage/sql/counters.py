"""Named counters of one scope, advanced with one upsert inside the caller's transaction."""

from __future__ import annotations

from sqlalchemy import Connection, Dialect

from billingkit.errors import ValidationError
from billingkit.storage.kinds import check_count
from billingkit.storage.sql.mapping import placeholder

__all__ = ["SqlCounterStore"]


class SqlCounterStore:
    """``INSERT ... ON CONFLICT DO UPDATE SET value = value + count RETURNING value``: the row
    lock it takes makes concurrent transactions queue, and a rollback returns the numbers."""

    def __init__(self, connection: Connection, scope: tuple[str | None, str | None]) -> None:
        tenant_id, environment_id = scope
        if tenant_id is None or environment_id is None:
            raise ValidationError("counters need a tenant and an environment", field="environment_id")
        self._conn = connection
        self._scope = (tenant_id, environment_id)

    def next(self, name: str, *, count: int = 1) -> int:
        check_count(count)
        sql = _advance_sql(self._conn.dialect)
        value = self._conn.exec_driver_sql(sql, (*self._scope, name, count, count)).scalar_one()
        return int(value) - count + 1


def _advance_sql(dialect: Dialect) -> str:
    """The upsert that takes ``count`` numbers of one counter (SQLite and PostgreSQL alike)."""
    mark = placeholder(dialect)
    marks = ", ".join(mark for _ in range(4))
    return (
        f"INSERT INTO counters (tenant_id, environment_id, name, value) VALUES ({marks}) "
        f"ON CONFLICT (tenant_id, environment_id, name) DO UPDATE SET value = counters.value + {mark} "
        "RETURNING value"
    )
