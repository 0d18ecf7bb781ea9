"""Named counters of one scope, advanced with one upsert inside the caller's transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from billingkit.errors import ValidationError
from billingkit.storage.kinds import check_count
from billingkit.storage.sql.tables import counters

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
        tenant_id, environment_id = self._scope
        insert: Any = pg_insert if self._conn.dialect.name == "postgresql" else sqlite_insert
        stmt = (
            insert(counters)
            .values(tenant_id=tenant_id, environment_id=environment_id, name=name, value=count)
            .on_conflict_do_update(
                index_elements=["tenant_id", "environment_id", "name"],
                set_={"value": counters.c.value + count},
            )
            .returning(counters.c.value)
        )
        return int(self._conn.execute(stmt).scalar_one()) - count + 1
