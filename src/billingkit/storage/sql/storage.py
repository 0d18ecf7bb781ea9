"""The SQL store's entry object and unit of work."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from billingkit.domain.access import Account, ApiKey
from billingkit.domain.resources import Record, Status
from billingkit.errors import (
    ConfigurationError,
    InternalError,
    InvalidOperation,
    ReadOnlyTransaction,
    ServiceUnavailable,
)
from billingkit.storage.kinds import KINDS, due_field
from billingkit.storage.sql import schema
from billingkit.storage.sql.access import find_api_key_with_account
from billingkit.storage.sql.counters import SqlCounterStore
from billingkit.storage.sql.events import SqlEventStore
from billingkit.storage.sql.ledger import SqlLedger, register_sqlite_ledger_functions
from billingkit.storage.sql.mapping import placeholder, row_decoder, row_encoder
from billingkit.storage.sql.repository import SqlRepository
from billingkit.storage.sql.tables import TABLES
from billingkit.storage.sql.usage import SqlUsageStore, register_sqlite_functions

__all__ = ["SqlStorage", "SqlUnitOfWork", "normalize_url"]


def normalize_url(url: str) -> str:
    """Use psycopg 3 for ``postgresql://`` URLs (the driver of the ``postgres`` extra)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


#: The execution option marking the connection of a read-only unit of work.
READ_ONLY = "billingkit_read_only"
# Whether PRAGMA query_only is on for a pooled SQLite connection (its pool record's ``info``).
_QUERY_ONLY = "billingkit_query_only"
_SQLITE_READONLY = 8  # SQLite's result code for a write refused by query_only (extended codes share it)
_PG_NO_ACTIVE_TRANSACTION = "25P01"
_PG_READ_ONLY_SQL_TRANSACTION = "25006"


def _refused_write(exc: BaseException | None) -> bool:
    """Whether the driver error is the database refusing a write in a read-only transaction."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF == _SQLITE_READONLY
    # A write that starts with a savepoint (an update guarding its uniqueness rules) is refused
    # earlier on PostgreSQL's read pool: its autocommit sessions have no transaction to nest in.
    return getattr(exc, "sqlstate", None) in (_PG_READ_ONLY_SQL_TRANSACTION, _PG_NO_ACTIVE_TRANSACTION)


def _refuse_writes_loudly(engine: Engine) -> None:
    """A write in a read-only unit of work, refused by the database itself (SQLite's
    ``query_only``, PostgreSQL's ``READ ONLY``), surfaces as :class:`ReadOnlyTransaction`
    rather than a driver error."""

    @event.listens_for(engine, "handle_error")
    def _handle_error(context: Any) -> None:
        conn = context.connection
        if conn is None or not conn.get_execution_options().get(READ_ONLY):
            return
        if _refused_write(context.original_exception):
            raise ReadOnlyTransaction(
                "a read-only unit of work cannot write; open a write unit of work for this call"
            ) from context.original_exception


def _configure_sqlite(engine: Engine) -> None:
    # pysqlite's own transaction handling defers BEGIN; take control so a unit of work is one
    # real transaction. A write unit of work takes the write lock up front (BEGIN IMMEDIATE) so
    # concurrent writers queue on busy_timeout instead of failing with "database is locked"
    # halfway through. A read-only one starts a deferred BEGIN, which under WAL reads a snapshot
    # without ever asking for the write lock, with query_only on so that a write fails instead of
    # silently upgrading to the lock.
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout = 30000")
        cursor.execute("PRAGMA foreign_keys = ON")
        register_sqlite_functions(dbapi_connection)
        register_sqlite_ledger_functions(dbapi_connection)
        if engine.url.database not in (None, "", ":memory:"):
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        read_only = bool(conn.get_execution_options().get(READ_ONLY))
        info = conn.connection.info
        if info.get(_QUERY_ONLY, False) != read_only:
            conn.exec_driver_sql(f"PRAGMA query_only = {'ON' if read_only else 'OFF'}")
            info[_QUERY_ONLY] = read_only
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def _create_engine(url: str, backend: str, kwargs: dict[str, Any]) -> Engine:
    """``create_engine``, with a missing database driver reported as the extra to install."""
    try:
        return create_engine(url, **kwargs)
    except ModuleNotFoundError as exc:
        if backend == "postgresql":
            raise ConfigurationError(
                f"PostgreSQL needs the psycopg driver ({exc.name} is not installed): "
                "pip install 'billingkit[postgres]'"
            ) from exc
        raise ConfigurationError(f"the database driver for {backend} is not installed ({exc.name})") from exc


class SqlStorage:
    """SQLite or PostgreSQL through SQLAlchemy 2.

    >>> storage = SqlStorage.from_url("sqlite:///billing.db")   # migrated automatically when new
    >>> storage = SqlStorage.from_url("postgresql://localhost/billing", migrate=True)
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._read_engine: Engine | None = None

    @property
    def read_engine(self) -> Engine:
        """Where read-only units of work get their connections. SQLite: the one engine (a read is
        a deferred ``BEGIN``). PostgreSQL: a second pool of its own, made on first use, whose
        connections run in autocommit with ``default_transaction_read_only`` on (the database still
        refuses every write) and are not pinged on checkout: a read is one round trip per
        statement instead of four (ping, ``BEGIN``, statement, ``ROLLBACK``). Each statement
        reads the latest committed data, as it does at READ COMMITTED inside a transaction.
        A connection the server dropped fails the read that finds it and is discarded with the
        pool's older connections (SQLAlchemy's disconnect handling); the next read reconnects."""
        if self.engine.dialect.name != "postgresql":
            return self.engine
        if self._read_engine is None:
            # No reset on return either: an autocommit session has no transaction to roll back,
            # and the reset's no-op rollback costs a few percent of a usage read.
            reads = create_engine(
                self.engine.url, isolation_level="AUTOCOMMIT", pool_pre_ping=False, pool_reset_on_return=None
            )

            @event.listens_for(reads, "connect")
            def _read_only_session(dbapi_connection: Any, _record: Any) -> None:
                cursor = dbapi_connection.cursor()
                cursor.execute("SET default_transaction_read_only = on")
                cursor.close()

            _refuse_writes_loudly(reads)
            self._read_engine = reads
        return self._read_engine

    @classmethod
    def from_url(cls, url: str, *, migrate: bool | None = None, echo: bool = False) -> SqlStorage:
        """Connect to ``url``.

        ``migrate=None`` (default) applies the migrations to a new SQLite database and otherwise
        checks that the schema is current (run ``billingkit migrate`` to upgrade it);
        ``migrate=True`` always upgrades; ``migrate=False`` skips the check.
        """
        url = normalize_url(url)
        parsed = make_url(url)
        is_sqlite = parsed.get_backend_name() == "sqlite"
        kwargs: dict[str, Any] = {"echo": echo, "future": True}
        if is_sqlite:
            kwargs["connect_args"] = {"check_same_thread": False}
            if parsed.database in (None, "", ":memory:"):
                kwargs["poolclass"] = StaticPool
        else:
            kwargs["pool_pre_ping"] = True
        engine = _create_engine(url, parsed.get_backend_name(), kwargs)
        if is_sqlite:
            _configure_sqlite(engine)
        _refuse_writes_loudly(engine)
        storage = cls(engine)
        if migrate is True:
            storage.migrate()
        elif migrate is None:
            current = schema.current_revision(engine)
            if current is None and is_sqlite:
                storage.migrate()
            elif current != schema.head_revision():
                engine.dispose()
                raise InvalidOperation(
                    f"the database schema is at revision {current}, not "
                    f"{schema.head_revision()}; run `billingkit migrate --database-url ...`"
                )
        return storage

    def migrate(self) -> None:
        """Apply every pending migration."""
        schema.upgrade(self.engine)

    def unit_of_work(
        self, tenant_id: str | None = None, environment_id: str | None = None, *, read_only: bool = False
    ) -> SqlUnitOfWork:
        """See :meth:`billingkit.ports.Storage.unit_of_work`."""
        engine = self.read_engine if read_only else self.engine
        return SqlUnitOfWork(engine, tenant_id, environment_id, read_only=read_only)

    def ping(self) -> None:
        """``SELECT 1`` on a pooled DBAPI connection: no SQLAlchemy transaction, so SQLite's
        ``BEGIN IMMEDIATE`` (the write lock) is not taken. The cause is chained, not shown."""
        try:
            connection = self.engine.raw_connection()
            try:
                cursor = connection.cursor()
                cursor.execute("SELECT 1")
                cursor.fetchall()
                cursor.close()
            finally:
                connection.close()
        except Exception as exc:  # the driver's own errors as well as SQLAlchemy's
            raise ServiceUnavailable("the database does not answer") from exc

    def close(self) -> None:
        self.engine.dispose()
        if self._read_engine is not None:
            self._read_engine.dispose()
            self._read_engine = None

    def __repr__(self) -> str:
        return f"SqlStorage({self.engine.url.render_as_string(hide_password=True)!r})"


class SqlUnitOfWork:
    """The SQL store's :class:`~billingkit.ports.UnitOfWork`; its repositories (the attributes
    :class:`~billingkit.ports.Repositories` declares) are made on first access."""

    def __init__(
        self, engine: Engine, tenant_id: str | None, environment_id: str | None, *, read_only: bool = False
    ) -> None:
        self._engine = engine
        self._scope = (tenant_id, environment_id)
        self._read_only = read_only
        self._conn: Connection | None = None
        self._repositories: dict[str, SqlRepository[Any]] = {}

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def connection(self) -> Connection:
        if self._conn is None:
            raise InvalidOperation("use the unit of work inside a `with` block")
        return self._conn

    def __getattr__(self, name: str) -> Any:
        if name == "events":
            return SqlEventStore(self.connection, self._scope)
        if name == "usage":
            return SqlUsageStore(self.connection, self._scope)
        if name == "counters":
            return SqlCounterStore(self.connection, self._scope)
        kind = KINDS.get(name)
        if kind is None:
            raise AttributeError(name)
        repo = self._repositories.get(name)
        if repo is None:
            repo = (SqlLedger if kind.append_only else SqlRepository)(
                kind, TABLES[name], self.connection, self._scope
            )
            self._repositories[name] = repo
        return repo

    def for_scope(self, tenant_id: str | None, environment_id: str | None) -> SqlUnitOfWork:
        """The same transaction, with repositories bound to another scope (system use only)."""
        view = SqlUnitOfWork(self._engine, tenant_id, environment_id, read_only=self._read_only)
        view._conn = self.connection
        return view

    def __enter__(self) -> SqlUnitOfWork:
        try:
            conn = self._conn = self._engine.connect()
            if self._read_only:
                # The SQLite "begin" hook reads the mark (a deferred BEGIN with query_only on);
                # on PostgreSQL the connection comes from the read pool (SqlStorage.read_engine:
                # autocommit, read-only sessions), where this begin sends nothing.
                conn.execution_options(**{READ_ONLY: True})
            conn.begin()
        except SQLAlchemyError as exc:
            raise InternalError("the database is unavailable") from exc
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn = self._conn
        self._conn = None
        self._repositories.clear()
        if conn is None:
            return
        try:
            if conn.in_transaction():
                conn.rollback()
        finally:
            conn.close()
        if self._read_only and isinstance(exc, DBAPIError) and exc.connection_invalidated:
            # The read pool pings no connection on checkout: one the server dropped fails the read
            # that finds it (the pool has discarded it and its older siblings). A read can simply
            # run again: Scoped.read does, once.
            raise ServiceUnavailable("the database connection was lost; the read can be retried") from exc

    def commit(self) -> None:
        self.connection.commit()

    def rollback(self) -> None:
        self.connection.rollback()

    def find_api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        decoder = row_decoder(ApiKey, TABLES["api_keys"], self.connection.dialect)
        rows = self.connection.exec_driver_sql(decoder.select_sql("key_hash = {}"), (key_hash,)).fetchall()
        found: list[ApiKey] = decoder.models(rows)
        return found[0] if found else None

    def find_api_key_with_account(self, key_hash: str) -> tuple[ApiKey, bool] | None:
        return find_api_key_with_account(self.connection, key_hash)

    def find_accounts_by_email(self, email: str) -> Sequence[Account]:
        decoder = row_decoder(Account, TABLES["accounts"], self.connection.dialect)
        sql = decoder.select_sql("email = {} AND status = {}")
        rows = self.connection.exec_driver_sql(sql, (email.lower(), Status.PUBLISHED.value)).fetchall()
        return decoder.models(rows)

    def claim_due(self, kind: str, now: datetime, limit: int) -> list[Record]:
        if self._read_only:
            raise ReadOnlyTransaction("a read-only unit of work cannot claim due work")
        field = due_field(kind, limit)
        table, model, dialect = TABLES[kind], KINDS[kind].model, self.connection.dialect
        decoder = row_decoder(model, table, dialect)
        tail = f"ORDER BY {field}, id LIMIT {{}}"
        if dialect.name == "postgresql":
            # Rows another claimer holds are skipped, not waited for: two runners split the work.
            tail += " FOR UPDATE SKIP LOCKED"
        sql = decoder.select_sql(f"{field} <= {{}} AND status = {{}}", tail)
        due = row_encoder(model, table, dialect).encode(field, now)
        rows = self.connection.exec_driver_sql(sql, (due, Status.PUBLISHED.value, limit)).fetchall()
        return decoder.models(rows)

    def has_due(self, kind: str, now: datetime) -> bool:
        field = due_field(kind, 1)
        table, model, dialect = TABLES[kind], KINDS[kind].model, self.connection.dialect
        due = row_encoder(model, table, dialect).encode(field, now)
        mark = placeholder(dialect)
        # The same condition as claim_due's, so the same index serves it.
        name = dialect.identifier_preparer.quote(table.name)
        sql = f"SELECT 1 FROM {name} WHERE {field} <= {mark} AND status = {mark} LIMIT 1"
        return self.connection.exec_driver_sql(sql, (due, Status.PUBLISHED.value)).first() is not None
