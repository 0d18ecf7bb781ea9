"""Usage events in SQL: one multi-row insert per batch that skips ids already stored."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Insert, select
from sqlalchemy.dialects import postgresql, sqlite

from billingkit.domain.usage import UsageEvent
from billingkit.storage.sql.tables import events

__all__ = ["SqlEventStore"]


def _insert(dialect: str) -> Insert:
    module = postgresql if dialect == "postgresql" else sqlite
    stmt = module.insert(events).on_conflict_do_nothing(index_elements=["tenant_id", "environment_id", "id"])
    return stmt.returning(events.c.id)  # type: ignore[no-any-return]


class SqlEventStore:
    """The SQL adapter of :class:`billingkit.ports.EventStore`. Deduplication is the primary key
    ``(tenant_id, environment_id, id)``: concurrent writers of one id cannot both insert it."""

    def __init__(self, conn: Connection, scope: tuple[str | None, str | None]) -> None:
        self._conn = conn
        self._tenant, self._environment = scope

    def insert_new(self, batch: Sequence[UsageEvent], ingested_at: datetime) -> set[str]:
        if not batch:
            return set()
        rows: list[dict[str, Any]] = [
            {
                "tenant_id": self._tenant,
                "environment_id": self._environment,
                "id": e.event_id,
                "event_name": e.event_name,
                "external_customer_id": e.external_customer_id,
                "customer_id": e.customer_id,
                "timestamp": e.timestamp,
                "source": e.source,
                "properties": dict(e.properties),
                "ingested_at": ingested_at,
            }
            for e in batch
        ]
        result = self._conn.execute(_insert(self._conn.dialect.name), rows)
        return {row[0] for row in result}

    def find(self, event_id: str) -> UsageEvent | None:
        row = (
            self._conn.execute(
                select(events).where(
                    events.c.tenant_id == self._tenant,
                    events.c.environment_id == self._environment,
                    events.c.id == event_id,
                )
            )
            .mappings()
            .first()
        )
        if row is None:
            return None
        return UsageEvent(
            event_id=row["id"],
            event_name=row["event_name"],
            external_customer_id=row["external_customer_id"],
            timestamp=row["timestamp"],
            properties=row["properties"],
            customer_id=row["customer_id"],
            source=row["source"],
        )
