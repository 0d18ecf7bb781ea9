"""Usage events in SQL: one multi-row insert per batch that skips ids already stored."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection

from billingkit.domain.event_queries import EventFilter, EventPage
from billingkit.domain.usage import UsageEvent
from billingkit.storage.sql.driver import raise_driver_error
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
# Rows per pipelined statement on PostgreSQL (see SqlEventStore.insert_new): small enough that the
# server starts on the first part while the caller still validates the rest, large enough that a
# statement's fixed cost stays small. Measured in docs/performance.md (issue 22).
_PIPELINED_ROWS = 250


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


def _first_of_each_id(events: Iterable[UsageEvent]) -> Iterator[UsageEvent]:
    """``events`` without repeats of an id already seen (the first one wins), lazily."""
    seen: set[str] = set()
    remember = seen.add
    for event in events:
        if event.event_id not in seen:
            remember(event.event_id)
            yield event


def _parts(events: Iterable[UsageEvent], size: int) -> Iterator[list[UsageEvent]]:
    """``events`` in lists of ``size`` (the last may be shorter), each as soon as it is full."""
    part: list[UsageEvent] = []
    for event in events:
        part.append(event)
        if len(part) == size:
            yield part
            part = []
    if part:
        yield part


def _answers(pipeline: Any, cursors: list[Any]) -> set[str]:
    """Wait for the answers of every statement sent in ``pipeline``: the ids each one stored."""
    pipeline.sync()
    stored: set[str] = set()
    for cursor in cursors:
        stored.update(row[0] for row in cursor.fetchall())
    return stored


class SqlEventStore:
    """The SQL adapter of :class:`billingkit.ports.EventStore`. Deduplication is the primary key
    ``(tenant_id, environment_id, id)``: concurrent writers of one id cannot both insert it."""

    def __init__(self, conn: Connection, scope: tuple[str | None, str | None]) -> None:
        self._conn = conn
        self._tenant, self._environment = scope

    def insert_new(self, batch: Iterable[UsageEvent], ingested_at: datetime) -> set[str]:
        """Store the events whose id is new (the first of repeated ids wins; repeats never reach
        the database) and return their ids.

        Hot path: rows go to the driver as flat parameter lists of values already in the column's
        stored form (UTC text on SQLite, properties as JSON text written by the engine's JSON
        serializer), through a statement text built once per row count: no SQLAlchemy type
        processing per row.

        On PostgreSQL with psycopg, ``batch`` is consumed in parts of 250 events, each sent as
        soon as it is built in psycopg's pipeline mode on a ``RawCursor`` (``$n`` placeholders,
        which skips psycopg's client-side rewriting of ``%s``): the server inserts one part while
        the caller validates the next (``batch`` may be a lazy iterable), and the answers are read
        once, at the end. Other drivers get one statement of up to 1,000 rows at a time, with
        their own placeholders.
        """
        dialect = self._conn.dialect
        if dialect.name == "postgresql" and dialect.driver == "psycopg":
            return self._insert_pipelined(batch, ingested_at)
        unique = list(_first_of_each_id(batch))
        if not unique:
            return set()
        mark = placeholder(dialect)
        stored: set[str] = set()
        for start in range(0, len(unique), _ROWS_PER_STATEMENT):
            chunk = unique[start : start + _ROWS_PER_STATEMENT]
            result = self._conn.exec_driver_sql(
                _insert_sql(mark, len(chunk)), self._parameters(chunk, ingested_at)
            )
            # The ids straight from the driver's cursor: SQLAlchemy Row objects cost about 1.5 ms a
            # batch, the driver's tuples about 0.2 ms.
            with result:
                stored.update(row[0] for row in result.cursor.fetchall())
        return stored

    def _parameters(self, chunk: list[UsageEvent], ingested_at: datetime) -> tuple[Any, ...]:
        """The flat parameters of ``chunk``'s rows, in :data:`_COLUMNS` order."""
        dialect = self._conn.dialect
        dumps: Callable[[Any], str] = getattr(dialect, "_json_serializer", None) or _DUMPS
        tenant, environment = self._tenant, self._environment
        stamp: Callable[[datetime], Any] = sqlite_time if dialect.name == "sqlite" else _as_is
        ingested = stamp(ingested_at.astimezone(UTC))
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
        return tuple(params)

    def _insert_pipelined(self, batch: Iterable[UsageEvent], ingested_at: datetime) -> set[str]:
        """psycopg: one statement per part of :data:`_PIPELINED_ROWS`, sent without waiting.

        The statements bypass SQLAlchemy's execution (it would read each cursor's answer at once,
        which is the wait this avoids); a driver error goes to SQLAlchemy's own error handling
        (:func:`billingkit.storage.sql.driver.raise_driver_error`). An error raised by
        ``batch`` itself (an invalid event) propagates after the parts already sent have been
        answered; the unit of work then rolls them back with everything else.
        """
        from psycopg import Error as DriverError
        from psycopg import RawCursor

        driver: Any = self._conn.connection.driver_connection
        cursors: list[Any] = []
        sql = ""
        params: tuple[Any, ...] = ()
        try:
            with driver.pipeline() as pipeline:
                for part in _parts(_first_of_each_id(batch), _PIPELINED_ROWS):
                    sql, params = _insert_sql(None, len(part)), self._parameters(part, ingested_at)
                    cursor = RawCursor(driver)
                    cursors.append(cursor)
                    cursor.execute(sql, params)
                return _answers(pipeline, cursors)
        except DriverError as exc:
            raise_driver_error(self._conn, exc, sql, params)
        finally:
            for cursor in cursors:
                cursor.close()

    def find(self, event_id: str) -> UsageEvent | None:
        decoder = column_decoder(events, self._conn.dialect, EVENT_COLUMNS)
        sql = decoder.select_sql("tenant_id = {} AND environment_id = {} AND id = {}")
        rows = self._conn.exec_driver_sql(sql, (self._tenant, self._environment, event_id)).fetchall()
        found = decoder.values(rows)
        return usage_event(found[0]) if found else None

    def query(self, query: EventFilter) -> EventPage:
        """The page of this scope's events ``query`` selects (see :mod:`.event_queries`)."""
        return query_events(self._conn, (self._tenant, self._environment), query)
