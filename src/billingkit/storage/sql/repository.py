"""A repository over one table, bound to one scope and one connection (the unit of work's)."""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Table
from sqlalchemy.exc import IntegrityError

from billingkit.domain.queries import Filter, ListQuery, Op, Page
from billingkit.domain.resources import Record, Status
from billingkit.domain.validation import unstorable_text
from billingkit.errors import AlreadyExists, NotFound, ValidationError, VersionConflict
from billingkit.storage.kinds import Kind, Level
from billingkit.storage.records import changed_fields, check_fields
from billingkit.storage.sql.mapping import (
    RowDecoder,
    RowEncoder,
    column_decoder,
    placeholder,
    row_decoder,
    row_encoder,
)
from billingkit.storage.sql.queries import Conditions, order_by

T = TypeVar("T", bound=Record)

__all__ = ["SqlRepository", "is_unique_violation"]

_IDS_PER_STATEMENT = 500  # well under SQLite's 32,766 parameters and PostgreSQL's 65,535


def is_unique_violation(exc: IntegrityError) -> bool:
    """True for a unique/primary-key violation on SQLite or PostgreSQL."""
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate is not None:
        return bool(sqlstate == "23505")
    return "UNIQUE constraint failed" in str(exc.orig)


class SqlRepository(Generic[T]):
    def __init__(
        self,
        kind: Kind,
        table: Table,
        connection: Connection,
        scope: tuple[str | None, str | None],
    ) -> None:
        self._kind = kind
        self._table = table
        self._conn = connection
        self._tenant_id, self._environment_id = scope
        if kind.level is not Level.GLOBAL and self._tenant_id is None:
            raise ValidationError(f"{kind.label} needs a tenant scope", field="tenant_id")
        if kind.level is Level.ENVIRONMENT and self._environment_id is None:
            raise ValidationError(f"{kind.label} needs an environment scope", field="environment_id")

    # -- scoping ---------------------------------------------------------------------------
    def _check_scope(self, item: T) -> None:
        level = self._kind.level
        wrong = (level is not Level.GLOBAL and getattr(item, "tenant_id", None) != self._tenant_id) or (
            level is Level.ENVIRONMENT and getattr(item, "environment_id", None) != self._environment_id
        )
        if wrong:
            raise ValidationError(
                f"{self._kind.label} belongs to another tenant or environment", field="tenant_id"
            )

    # -- reads -----------------------------------------------------------------------------
    def _scope_values(self) -> dict[str, str | None]:
        """The scope columns of this kind and the values this repository is bound to."""
        if self._kind.level is Level.GLOBAL:
            return {}
        if self._kind.level is Level.TENANT:
            return {"tenant_id": self._tenant_id}
        return {"tenant_id": self._tenant_id, "environment_id": self._environment_id}

    def _decoder(self) -> RowDecoder:
        return row_decoder(self._kind.model, self._table, self._conn.dialect)

    def _conditions(self) -> Conditions:
        """Conditions holding this repository's scope."""
        conditions = Conditions(self._table, self._conn.dialect, self._encoder())
        for column, value in self._scope_values().items():
            conditions.equal(column, value)
        return conditions

    def _select(
        self, conditions: Conditions, tail: str = "", tail_params: Sequence[Any] = ()
    ) -> builtins.list[T]:
        decoder = self._decoder()
        sql = decoder.select_sql(conditions.sql(), tail)
        return decoder.models(self._conn.exec_driver_sql(sql, (*conditions.params, *tail_params)).fetchall())

    def find(self, id: str) -> T | None:
        found = self.find_many((id,))
        return found[0] if found else None

    def find_many(self, ids: Iterable[str]) -> builtins.list[T]:
        # An id no database can hold (NUL, lone surrogate) names nothing, as on the memory store.
        wanted = sorted({id for id in ids if not unstorable_text(id)})
        found: builtins.list[T] = []
        for start in range(0, len(wanted), _IDS_PER_STATEMENT):
            # Found by primary key, the scope a guard (Conditions.guard: no scope index is used).
            conditions = Conditions(self._table, self._conn.dialect, self._encoder())
            conditions.add(Filter("id", Op.IN, wanted[start : start + _IDS_PER_STATEMENT]))
            for column, value in self._scope_values().items():
                conditions.guard(column, value)
            found += self._select(conditions)
        return found

    def get(self, id: str) -> T:
        item = self.find(id)
        if item is None:
            raise NotFound(f"{self._kind.label} {id} not found")
        return item

    def find_one(self, *, include_archived: bool = False, **equals: Any) -> T | None:
        check_fields(self._kind, equals, field="filters")
        if any(isinstance(v, str) and unstorable_text(v) for v in equals.values()):
            return None  # no stored value holds a NUL or a lone surrogate
        conditions = self._conditions()
        for name, value in equals.items():
            conditions.add(Filter(name, Op.EQ, value))
        if not include_archived:
            conditions.equal("status", Status.PUBLISHED.value)
        found = self._select(conditions, f"ORDER BY {conditions.quote('id')} LIMIT 1")
        return found[0] if found else None

    def list(self, query: ListQuery) -> Page[T]:
        check_fields(self._kind, (f.field for f in query.filters), field="filters")
        check_fields(self._kind, (s.field for s in query.sort), field="sort")
        conditions = self._conditions()
        for flt in query.filters:
            conditions.add(flt)
        if query.status is not None:
            conditions.equal("status", query.status.value)
        where = conditions.sql()
        count_params = tuple(conditions.params)  # before order_by adds the sort's parameters
        order_params: builtins.list[Any] = []
        order = order_by(conditions, query.sort, order_params)
        items = self._select(
            conditions, f"{order} LIMIT {{}} OFFSET {{}}", (*order_params, query.limit, query.offset)
        )
        if len(items) < query.limit and (items or not query.offset):
            # A page that is not full is the last: the total is known without a COUNT (the
            # meter lookup of every ingested batch, and most lists, are one page).
            return Page(items=items, total=query.offset + len(items), limit=query.limit, offset=query.offset)
        count = f"SELECT count(*) FROM {conditions.quote(self._table.name)} WHERE {where}"
        mark = placeholder(self._conn.dialect)
        total = self._conn.exec_driver_sql(count.replace("{}", mark), count_params).scalar_one()
        return Page(items=items, total=int(total), limit=query.limit, offset=query.offset)

    # -- writes ----------------------------------------------------------------------------
    # Rows go to the driver as positional parameters in their stored form (``RowEncoder``), with
    # statement texts made once per table and column set: building, compiling and processing a
    # SQLAlchemy statement per row cost more than the database's own work.

    def _conflict(self, exc: IntegrityError, items: Sequence[T]) -> AlreadyExists:
        field = self._kind.unique[0].fields[0] if self._kind.unique else "id"
        for rule in self._kind.unique:
            if any(f in str(exc.orig) for f in rule.fields):
                field = rule.fields[0]
        if len(items) == 1:
            value = getattr(items[0], field, None)
            message = f"a {self._kind.label} with {field}={value!r} already exists"
        else:
            message = f"one of {len(items)} {self._kind.label} records repeats an existing {field}"
        return AlreadyExists(message, details={"field": field})

    @contextmanager
    def _atomic(self, items: Sequence[T], *, many: bool) -> Iterator[None]:
        """Run a write so that a failure leaves nothing of it and the transaction usable: a
        savepoint on PostgreSQL (where an error aborts the transaction) and around several rows
        (SQLite undoes only the failing statement of an executemany); a uniqueness violation
        becomes :class:`AlreadyExists`."""
        try:
            if many or self._conn.dialect.name != "sqlite":
                with self._conn.begin_nested():
                    yield
            else:
                yield
        except IntegrityError as exc:
            if is_unique_violation(exc):
                raise self._conflict(exc, items) from None
            raise

    def _encoder(self) -> RowEncoder:
        return row_encoder(self._kind.model, self._table, self._conn.dialect)

    def _where(self, versioned: bool) -> tuple[str, ...]:
        """The columns an update matches on: the id, the scope, and the version when checked."""
        return ("id", *self._scope_values(), *(("version",) if versioned else ()))

    def _match(self, id: str, version: int | None) -> builtins.list[Any]:
        """The values of :meth:`_where`'s columns for one row."""
        return [id, *self._scope_values().values(), *(() if version is None else (version,))]

    def add(self, item: T) -> T:
        self._check_scope(item)
        encoder = self._encoder()
        with self._atomic((item,), many=False):
            self._conn.exec_driver_sql(encoder.insert_sql(), tuple(encoder.values(item)))
        return item

    def add_many(self, items: Sequence[T]) -> None:
        if not items:
            return
        for item in items:
            self._check_scope(item)
        encoder = self._encoder()
        rows = [tuple(encoder.values(item)) for item in items]
        with self._atomic(items, many=len(rows) > 1):
            self._conn.exec_driver_sql(encoder.insert_sql(), rows)

    def update(self, item: T, *, expected_version: int | None = None) -> T:
        self._check_scope(item)
        if expected_version is not None:
            item = item.model_copy(update={"version": expected_version + 1})
        encoder = self._encoder()
        columns = tuple(name for name in encoder.columns if name != "id")
        sql = encoder.update_sql(columns, self._where(expected_version is not None))
        params = (*encoder.values(item, columns), *self._match(item.id, expected_version))
        with self._atomic((item,), many=False):
            rowcount = self._conn.exec_driver_sql(sql, params).rowcount
        if rowcount == 0:
            raise self._stale(item.id, expected_version)
        return item

    def update_many(self, changes: Sequence[tuple[T, T]]) -> builtins.list[T]:
        versioned = self._kind.versioned
        encoder = self._encoder()
        saved: builtins.list[T] = []
        # Rows that change the same columns share one executemany.
        groups: dict[tuple[str, ...], builtins.list[tuple[Any, ...]]] = defaultdict(list)
        for stored, changed in changes:
            self._check_scope(changed)
            if changed.id != stored.id:
                raise ValidationError("update_many pairs must share an id", field="id")
            version: int | None = stored.version if versioned else None  # type: ignore[attr-defined]
            if version is not None:
                changed = changed.model_copy(update={"version": version + 1})
            columns = tuple(name for name in changed_fields(stored, changed) if name != "id")
            groups[columns].append((*encoder.values(changed, columns), *self._match(stored.id, version)))
            saved.append(changed)
        if not saved:
            return saved
        where = self._where(versioned)
        with self._atomic(saved, many=True):
            for columns, rows in groups.items():
                ids = [row[len(columns)] for row in rows]
                if not columns:  # nothing to write: the resource must still be there
                    found = {item.id for item in self.find_many(ids)}
                    missing = next((id for id in ids if id not in found), None)
                    if missing is not None:
                        raise NotFound(f"{self._kind.label} {missing} not found")
                    continue
                result = self._conn.exec_driver_sql(encoder.update_sql(columns, where), rows)
                if result.rowcount != len(rows):
                    versions = [row[-1] for row in rows] if versioned else [None] * len(rows)
                    raise self._first_stale(ids, versions)
        return saved

    def _stale(self, id: str, expected_version: int | None) -> NotFound | VersionConflict:
        current = self.find(id)
        if current is None:
            return NotFound(f"{self._kind.label} {id} not found")
        return VersionConflict(
            f"{self._kind.label} {id} is at version {getattr(current, 'version', None)}, "
            f"not {expected_version}"
        )

    def _first_stale(self, ids: Sequence[str], versions: Sequence[int | None]) -> NotFound | VersionConflict:
        """The error for the first of ``ids`` that is missing or not at its expected version."""
        conditions = self._conditions()
        conditions.add(Filter("id", Op.IN, list(ids)))
        decoder = column_decoder(self._table, self._conn.dialect, ("id", "version"))
        rows = self._conn.exec_driver_sql(decoder.select_sql(conditions.sql()), tuple(conditions.params))
        stored = {row["id"]: row["version"] for row in decoder.values(rows.fetchall())}
        for id, version in zip(ids, versions, strict=True):
            if id not in stored or (version is not None and stored[id] != version):
                return self._stale(id, version)
        # Unreachable: a short rowcount means some row is missing or at another version.
        return VersionConflict(f"{self._kind.label} records changed while they were saved")
