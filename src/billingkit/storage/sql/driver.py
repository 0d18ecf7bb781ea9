"""Statements on the driver's own cursor, for the hot paths where SQLAlchemy's result objects cost
more than the statement: usage reads (about 0.18 ms of a 0.8 ms PostgreSQL read, measured in
docs/performance.md) and event ingestion's pipelined inserts.

SQLAlchemy still owns the connection and its transaction; only the execution and the result
skip it. A driver error is handed to SQLAlchemy's own error handling (``Connection.
_handle_dbapi_exception``, what its execution calls), so it surfaces exactly as from
``exec_driver_sql``: wrapped in ``sqlalchemy.exc.DBAPIError``, the engine's ``handle_error`` hooks
run (a write in a read-only unit of work is ``ReadOnlyTransaction``), a lost connection is
invalidated. Statements run here are not echoed by ``echo=True``.
"""

from __future__ import annotations

from collections import namedtuple
from functools import lru_cache
from typing import Any, NoReturn

from sqlalchemy import Connection

__all__ = ["fetch_rows", "raise_driver_error"]


def raise_driver_error(
    conn: Connection, error: BaseException, sql: str, params: Any, cursor: Any = None
) -> NoReturn:
    """Raise ``error``, a driver error of a statement run under ``conn``, as SQLAlchemy would."""
    conn._handle_dbapi_exception(error, sql, params, cursor, None)


@lru_cache(maxsize=256)
def _row_type(names: tuple[str, ...]) -> Any:
    return namedtuple("Row", names)  # the columns are known only when the statement has run


def fetch_rows(conn: Connection, sql: str, params: Any) -> list[Any]:
    """Every row of ``sql`` (the driver's placeholders) with ``params``, run on the DBAPI cursor of
    ``conn``: named tuples of the statement's columns, values as the driver returns them (what
    ``exec_driver_sql`` gives, without its result objects)."""
    driver_error = conn.dialect.loaded_dbapi.Error
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        names = tuple(column[0] for column in cursor.description)
    except driver_error as error:
        raise_driver_error(conn, error, sql, params, cursor)
    finally:
        cursor.close()
    make = _row_type(names)._make
    return [make(row) for row in rows]
