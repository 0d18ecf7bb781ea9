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

from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    String,
    and_,
    bindparam,
    func,
    select,
    text,
    tuple_,
)

from billingkit.domain.event_queries import EventFilter, EventPage
from billingkit.domain.usage import UsageEvent
from billingkit.storage.sql.json_props import Fragment, json_text
from billingkit.storage.sql.tables import events
from billingkit.storage.sql.types import UtcDateTime

__all__ = ["query_events"]

_PROPERTIES = "events.properties"


def _conditions(dialect: str, scope: tuple[str | None, str | None], query: EventFilter) -> list[Any]:
    tenant, environment = scope
    c = events.c
    conditions: list[Any] = [
        c.tenant_id == tenant,
        c.environment_id == environment,
        c.timestamp >= query.start,
        c.timestamp < query.end,
    ]
    if query.external_customer_id is not None:
        conditions.append(c.external_customer_id == query.external_customer_id)
    if query.event_name is not None:
        conditions.append(c.event_name == query.event_name)
    if query.event_id is not None:
        conditions.append(c.id == query.event_id)
    if query.source is not None:
        conditions.append(c.source == query.source)
    if query.property_filters:
        sql = Fragment()
        parts = []
        for f in query.property_filters:
            prop = json_text(dialect, _PROPERTIES, f.key, sql)
            parts.append(f"{prop} IN ({', '.join(sql.bind(v) for v in f.values)})")
        conditions.append(text(" AND ".join(parts)).bindparams(**sql.params))
    return conditions


def _keyset(
    key: tuple[Any, str], newer: bool, ts: ColumnElement[Any], eid: ColumnElement[Any]
) -> ColumnElement[bool]:
    """Rows strictly after ``key`` in ``(timestamp, id)`` order when ``newer``, else before it."""
    at = bindparam(None, key[0], type_=UtcDateTime())
    event_id = bindparam(None, key[1], type_=String())
    row = tuple_(ts, eid)
    bound = tuple_(at, event_id)
    if newer:
        return and_(ts >= at, row > bound)
    return and_(ts <= at, row < bound)


def _event(row: Any) -> UsageEvent:
    return UsageEvent(
        event_id=row.id,
        event_name=row.event_name,
        external_customer_id=row.external_customer_id,
        timestamp=row.timestamp,
        properties=row.properties,
        customer_id=row.customer_id,
        source=row.source,
    )


def query_events(conn: Connection, scope: tuple[str | None, str | None], query: EventFilter) -> EventPage:
    """The page ``query`` selects from the events of ``scope`` (tenant, environment), equal to
    ``filter_events(<the scope's events>, query)``."""
    dialect = conn.dialect.name
    pg = dialect == "postgresql"
    c = events.c
    ts: ColumnElement[Any] = c.timestamp
    eid: ColumnElement[Any] = c.id.collate("C") if pg else c.id
    name: ColumnElement[Any] = c.event_name.collate("C") if pg else c.event_name
    conditions = _conditions(dialect, scope, query)
    total = conn.execute(select(func.count()).select_from(events).where(*conditions)).scalar_one()

    # The direction rows are read in: the listing order, or its opposite when walking back from
    # a ``before`` key (the page is reversed into listing order at the end).
    backwards = query.before is not None
    descending = query.descending != backwards
    keyset = query.after if query.after is not None else query.before
    page_conditions = list(conditions)
    if keyset is not None:
        page_conditions.append(_keyset(keyset, not descending, ts, eid))
    order = [name, ts, eid] if query.sort == "event_name" else [ts, eid]
    stmt = (
        select(
            c.id,
            c.event_name,
            c.external_customer_id,
            c.customer_id,
            c.timestamp,
            c.source,
            c.properties,
        )
        .where(*page_conditions)
        .order_by(*(col.desc() if descending else col.asc() for col in order))
        .limit(query.limit + 1)
        .offset(query.offset)
    )
    rows = conn.execute(stmt).all()
    page = [_event(row) for row in rows[: query.limit]]
    if backwards:
        page.reverse()
    return EventPage(tuple(page), len(rows) > query.limit, total)
