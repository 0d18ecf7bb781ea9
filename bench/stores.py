"""The databases the benchmarks run on: a SQLite file or a PostgreSQL database a benchmark owns
(``Store``), how to reach them with the bare driver, and the bare-driver preload of the ``events``
table that ``bench ingest``, ``bench billing`` and ``bench entitlements`` share (the fastest path:
sqlite3 ``executemany`` / psycopg ``COPY``, the secondary indexes built afterwards)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from billingkit.storage.sql.tables import events as events_table

__all__ = [
    "COLUMNS",
    "DEFAULT_PG_URL",
    "PROTECTED_DATABASES",
    "Store",
    "checkpoint",
    "count_events",
    "index_sql",
    "libpq_url",
    "pg_database",
    "preload_postgres",
    "preload_sqlite",
    "reset_postgres",
    "sqlite_connect",
    "sqlite_path",
]

COLUMNS = (
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
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/billingkit_bench"
PROTECTED_DATABASES = {"postgres", "test", "template0", "template1"}


@dataclass
class Store:
    kind: str  # "sqlite" | "postgres"
    url: str  # SQLAlchemy / billingkit URL
    tenant_id: str = ""
    environment_id: str = ""
    api_key: str = ""


def pg_database(url: str) -> tuple[str, str]:
    """(the database name, the URL of the server's ``postgres`` database)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    name = parsed.database or ""
    admin = parsed.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    return name, admin


def libpq_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def reset_postgres(url: str) -> None:
    """Create the benchmark database when missing; drop and recreate its ``public`` schema."""
    import psycopg

    name, admin_url = pg_database(url)
    if not name or name in PROTECTED_DATABASES or not name.startswith("billingkit_bench"):
        raise SystemExit(f"refusing to use database {name!r}: give a database named billingkit_bench*")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            admin.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")


def sqlite_path(store: Store) -> str:
    return store.url.removeprefix("sqlite:///")


def sqlite_connect(store: Store) -> sqlite3.Connection:
    """A bare connection configured as billingkit configures its own (WAL, synchronous=NORMAL)."""
    conn = sqlite3.connect(sqlite_path(store), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def index_sql(dialect: Any) -> list[tuple[str, str]]:
    """(drop, create) statements of the events table's secondary indexes, as the schema defines
    them (built after the preload: one sort instead of a million random inserts)."""
    from sqlalchemy.schema import CreateIndex

    return [
        (f"DROP INDEX {index.name}", str(CreateIndex(index).compile(dialect=dialect)))
        for index in sorted(events_table.indexes, key=lambda i: str(i.name))
    ]


def preload_sqlite(store: Store, rows: list[tuple[Any, ...]]) -> None:
    from sqlalchemy.dialects import sqlite

    conn = sqlite_connect(store)
    indexes = index_sql(sqlite.dialect())
    for drop, _ in indexes:
        conn.execute(drop)
    insert = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
    step = 100_000
    for start in range(0, len(rows), step):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(insert, rows[start : start + step])
        conn.execute("COMMIT")
    for _, create in indexes:
        conn.execute(create)
    conn.execute("ANALYZE")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def preload_postgres(store: Store, rows: list[tuple[Any, ...]]) -> None:
    import psycopg
    from sqlalchemy.dialects import postgresql

    indexes = index_sql(postgresql.dialect())
    with psycopg.connect(libpq_url(store.url), autocommit=True) as conn:
        for drop, _ in indexes:
            conn.execute(drop)
        conn.execute("ALTER TABLE events DROP CONSTRAINT pk_events")
        copy_sql = f"COPY events ({', '.join(COLUMNS)}) FROM STDIN"
        with conn.transaction(), conn.cursor() as cur, cur.copy(copy_sql) as copy:
            for row in rows:
                copy.write_row(row)
        conn.execute(
            "ALTER TABLE events ADD CONSTRAINT pk_events PRIMARY KEY (tenant_id, environment_id, id)"
        )
        for _, create in indexes:
            conn.execute(create)
        conn.execute("VACUUM ANALYZE events")
        conn.execute("CHECKPOINT")


def checkpoint(store: Store) -> None:
    """Start each measurement from the same state: a checkpoint just done. Right after one,
    PostgreSQL writes every page an insert touches first in full into the WAL (about 16 MB per
    1,000 events here, falling to about 7 MB as the pages are touched again), and it checkpoints
    every few hundred MB of WAL: without this, whichever mode runs after a checkpoint pays more."""
    if store.kind == "sqlite":
        conn = sqlite_connect(store)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        return
    import psycopg

    with psycopg.connect(libpq_url(store.url), autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def count_events(store: Store) -> int:
    if store.kind == "sqlite":
        conn = sqlite_connect(store)
        (n,) = conn.execute("SELECT count(*) FROM events").fetchone()
        conn.close()
        return int(n)
    import psycopg

    with psycopg.connect(libpq_url(store.url)) as conn:
        row = conn.execute("SELECT count(*) FROM events").fetchone()
        return int(row[0]) if row else 0
