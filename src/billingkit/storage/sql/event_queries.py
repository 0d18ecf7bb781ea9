"""Event queries in SQL: the page :func:`billingkit.domain.event_queries.filter_events` returns,
computed by the database.

Two statements per query: the page (filters, keyset, ``ORDER BY``, ``LIMIT limit + 1 OFFSET``)
and ``COUNT(*)`` over the same filters without keyset or paging (``total_count``).

- Order: ``(timestamp, id)`` or ``(event_name, timestamp, id)``; on PostgreSQL text columns are
  ordered and compared ``COLLATE "C"`` (by code point, like Python); SQLite's default ``BINARY``
  collation compares UTF-8 bytes, which is code point order too.
- Keyset: a row-value comparison ``(timestamp, id) < (:ts, :id)`` (or ``>``), plus the redundant
  ``timestamp <= :ts`` that lets the index ``ix_events_time`` (scope, timestamp, id) bound the scan
  whatever the collation of ``id``. ``before`` walks away from the key (the opposite order),
  then the page is reversed back into listing order, exactly as the reference does.
- Property filters: :func:`billingkit.storage.sql.json_props.json_text` ``IN`` the bound values,
  the same text rule as :func:`billingkit.domain.usage.property_text` on both dialects (SQLite
  needs ``bk_plain``, registered on every connection by the storage).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from billingkit.domain.event_queries import EventFilter, EventPage
from billingkit.domain.usage import UsageEvent
from billingkit.storage.sql.json_props import Fragment, json_text
from billingkit.storage.sql.mapping import column_decoder
from billingkit.storage.sql.tables import events
from billingkit.storage.sql.types import sqlite_time

__all__ = ["EVENT_COLUMNS", "query_events", "usage_event"]

#: The columns a stored event is read back from, in the order statements select them.
EVENT_COLUMNS = (
    "id",
    "event_name",
    "external_customer_id",
    "customer_id",
    "timestamp",
    "source",
    "properties",
)
_PROPERTIES = "events.properties"


def usage_event(values: dict[str, Any]) -> UsageEvent:
    """The event of one decoded row of :data:`EVENT_COLUMNS`."""
    return UsageEvent(
        event_id=values["id"],
        event_name=values["event_name"],
        external_customer_id=values["external_customer_id"],
        timestamp=values["timestamp"],
        properties=values["properties"],
        customer_id=values["customer_id"],
        source=values["source"],
    )


def _instant(dialect: str, instant: datetime, sql: Fragment) -> str:
    """A bound instant in its stored form (fixed-width UTC text on SQLite)."""
    return sql.bind(sqlite_time(instant) if dialect == "sqlite" else instant)


def _conditions(
    dialect: str, scope: tuple[str | None, str | None], query: EventFilter, sql: Fragment
) -> list[str]:
    tenant, environment = scope
    conditions = [
        f"events.tenant_id = {sql.bind(tenant)}",
        f"events.environment_id = {sql.bind(environment)}",
        f"events.timestamp >= {_instant(dialect, query.start, sql)}",
        f"events.timestamp < {_instant(dialect, query.end, sql)}",
    ]
    for column, value in (
        ("external_customer_id", query.external_customer_id),
        ("event_name", query.event_name),
        ("id", query.event_id),
        ("source", query.source),
    ):
        if value is not None:
            conditions.append(f"events.{column} = {sql.bind(value)}")
    for f in query.property_filters:
        prop = json_text(dialect, _PROPERTIES, f.key, sql)
        conditions.append(f"{prop} IN ({', '.join(sql.bind(v) for v in f.values)})")
    return conditions


def _keyset(dialect: str, key: tuple[datetime, str], newer: bool, event_id: str, sql: Fragment) -> str:
    """Rows strictly after ``key`` in ``(timestamp, id)`` order when ``newer``, else before it."""
    at = _instant(dialect, key[0], sql)
    bound = f"({at}, {sql.bind(key[1])})"
    if newer:
        return f"events.timestamp >= {at} AND (events.timestamp, {event_id}) > {bound}"
    return f"events.timestamp <= {at} AND (events.timestamp, {event_id}) < {bound}"


def query_events(conn: Connection, scope: tuple[str | None, str | None], query: EventFilter) -> EventPage:
    """The page ``query`` selects from the events of ``scope`` (tenant, environment), equal to
    ``filter_events(<the scope's events>, query)``."""
    dialect = conn.dialect.name
    collate = ' COLLATE "C"' if dialect == "postgresql" else ""
    event_id, name = f"events.id{collate}", f"events.event_name{collate}"
    sql = Fragment()
    conditions = _conditions(dialect, scope, query, sql)
    count = f"SELECT count(*) FROM events WHERE {' AND '.join(conditions)}"
    total = conn.execute(text(count), dict(sql.params)).scalar_one()

    # The direction rows are read in: the listing order, or its opposite when walking back from
    # a ``before`` key (the page is reversed into listing order at the end).
    backwards = query.before is not None
    descending = query.descending != backwards
    keyset = query.after if query.after is not None else query.before
    if keyset is not None:
        conditions.append(_keyset(dialect, keyset, not descending, event_id, sql))
    order = (
        [name, "events.timestamp", event_id] if query.sort == "event_name" else ["events.timestamp", event_id]
    )
    direction = " DESC" if descending else " ASC"
    decoder = column_decoder(events, conn.dialect, EVENT_COLUMNS)
    page_sql = decoder.select_sql(
        " AND ".join(conditions),
        f"ORDER BY {', '.join(column + direction for column in order)} "
        f"LIMIT {sql.bind(query.limit + 1)} OFFSET {sql.bind(query.offset)}",
    )
    rows = decoder.values(conn.execute(text(page_sql), sql.params).fetchall())
    page = [usage_event(row) for row in rows[: query.limit]]
    if backwards:
        page.reverse()
    return EventPage(tuple(page), len(rows) > query.limit, total)
