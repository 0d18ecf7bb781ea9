"""Usage events in SQL: one multi-row insert per batch that skips ids already stored."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection

from billingkit.domain.event_queries import EventFilter, EventPage
from billingkit.domain.usage import UsageEvent
from billingkit.storage.sql.event_queries import EVENT_COLUMNS, query_events, usage_event
from billingkit.storage.sql.mapping import column_decoder, placeholder
from billingkit.storage.sql.tables import events
from billingkit.storage.sql.types import sqlite_time

__all__ = ["SqlEventStore"]

# The columns of one row, in the order insert_new writes them.
_COLUMNS = (
    "tenant_id",
    "environment_id",
    "id",
    "event_name",
    "external_customer_id",
    "customer_id",
    "timestamp",
    "source",
    "properties",
    "ingested_at",
)
# Rows per statement: 10,000 parameters, under SQLite's 32,766 and PostgreSQL's 65,535.
_ROWS_PER_STATEMENT = 1000


@lru_cache(maxsize=64)
def _insert_sql(mark: str | None, rows: int) -> str:
    """``INSERT ... VALUES (...) x rows ON CONFLICT DO NOTHING RETURNING id`` with the driver's
    ``mark`` placeholders, or with ``$n`` ones when ``mark`` is ``None`` (psycopg's RawCursor:
    the statement goes to the server as it is, and is prepared there after a few uses)."""
    width = len(_COLUMNS)
    if mark is None:
        groups = [
            "(" + ", ".join(f"${i + j}" for j in range(1, width + 1)) + ")"
            for i in range(0, rows * width, width)
        ]
    else:
        groups = ["(" + ", ".join([mark] * width) + ")"] * rows
    columns = ", ".join(f'"{c}"' for c in _COLUMNS)
    return (
        f"INSERT INTO events ({columns}) VALUES {', '.join(groups)} "
        "ON CONFLICT (tenant_id, environment_id, id) DO NOTHING RETURNING id"
    )


def _json_writer() -> Callable[[Any], str]:
    """``json.dumps`` with its default settings, minus the per-call setup: the C encoder that
    ``json.dumps`` builds on every call is built once (same output; circular structures, which
    ingestion never produces, fail with RecursionError instead of ValueError)."""
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:  # pragma: no cover - CPython always has the C accelerator
        return json.dumps
    encoder = json.JSONEncoder()
    encode = make_encoder(
        None,  # no circular-reference markers
        encoder.default,
        json.encoder.encode_basestring_ascii,
        None,  # indent
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    return dumps


_DUMPS = _json_writer()


def _as_is(instant: datetime) -> datetime:
    return instant


@contextmanager
def _raw_cursors(conn: Connection) -> Iterator[None]:
    """Within the block, the psycopg connection under ``conn`` makes ``RawCursor``s, which send
    statements with ``$n`` placeholders as they are. SQLAlchemy still runs the statement (its
    events, error wrapping and disconnect handling apply); a unit of work's connection is used by
    one thread at a time, so nobody else sees the switch."""
    from psycopg import RawCursor

    driver: Any = conn.connection.driver_connection
    saved = driver.cursor_factory
    driver.cursor_factory = RawCursor
    try:
        yield
    finally:
        driver.cursor_factory = saved


class SqlEventStore:
    """The SQL adapter of :class:`billingkit.ports.EventStore`. Deduplication is the primary key
    ``(tenant_id, environment_id, id)``: concurrent writers of one id cannot both insert it."""

    def __init__(self, conn: Connection, scope: tuple[str | None, str | None]) -> None:
        self._conn = conn
        self._tenant, self._environment = scope

    def insert_new(self, batch: Sequence[UsageEvent], ingested_at: datetime) -> set[str]:
        """Store the events whose id is new, in statements of up to 1,000 rows.

        Hot path: rows go to the driver as flat parameter lists of values already in the column's
        stored form (UTC text on SQLite, properties as JSON text written by the engine's JSON
        serializer), through ``exec_driver_sql`` and a statement text built once per row count: no
        SQLAlchemy type processing per row. On PostgreSQL with psycopg the statement runs on a
        ``RawCursor`` (``$n`` placeholders), which skips psycopg's client-side rewriting of
        ``%s`` placeholders, the largest cost of a 10,000-parameter statement; other drivers get
        their own placeholders.
        """
        if not batch:
            return set()
        first: dict[str, UsageEvent] = {}
        for event in batch:  # the first of repeated ids wins; repeats never reach the database
            first.setdefault(event.event_id, event)
        unique = list(first.values())
        dialect = self._conn.dialect
        numbered = dialect.name == "postgresql" and dialect.driver == "psycopg"
        return self._insert_rows(unique, ingested_at, None if numbered else placeholder(dialect))

    def _insert_rows(self, batch: list[UsageEvent], ingested_at: datetime, mark: str | None) -> set[str]:
        dumps: Callable[[Any], str] = getattr(self._conn.dialect, "_json_serializer", None) or _DUMPS
        tenant, environment = self._tenant, self._environment
        stamp: Callable[[datetime], Any] = sqlite_time if self._conn.dialect.name == "sqlite" else _as_is
        numbered = mark is None
        ingested = stamp(ingested_at.astimezone(UTC))
        stored: set[str] = set()
        for start in range(0, len(batch), _ROWS_PER_STATEMENT):
            chunk = batch[start : start + _ROWS_PER_STATEMENT]
            params: list[Any] = []
            add = params.extend
            for e in chunk:
                properties = e.properties
                add(
                    (
                        tenant,
                        environment,
                        e.event_id,
                        e.event_name,
                        e.external_customer_id,
                        e.customer_id,
                        stamp(e.timestamp),
                        e.source,
                        dumps(properties if type(properties) is dict else dict(properties)),
                        ingested,
                    )
                )
            sql = _insert_sql(mark, len(chunk))
            if numbered:
                with _raw_cursors(self._conn):
                    result = self._conn.exec_driver_sql(sql, tuple(params))
            else:
                result = self._conn.exec_driver_sql(sql, tuple(params))
            # The ids straight from the driver's cursor: SQLAlchemy Row objects cost about 1.5 ms a
            # batch, the driver's tuples about 0.2 ms.
            with result:
                stored.update(row[0] for row in result.cursor.fetchall())
        return stored

    def find(self, event_id: str) -> UsageEvent | None:
        decoder = column_decoder(events, self._conn.dialect, EVENT_COLUMNS)
        sql = decoder.select_sql("tenant_id = {} AND environment_id = {} AND id = {}")
        rows = self._conn.exec_driver_sql(sql, (self._tenant, self._environment, event_id)).fetchall()
        found = decoder.values(rows)
        return usage_event(found[0]) if found else None

    def query(self, query: EventFilter) -> EventPage:
        """The page of this scope's events ``query`` selects (see :mod:`.event_queries`)."""
        return query_events(self._conn, (self._tenant, self._environment), query)
