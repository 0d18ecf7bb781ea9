"""A repository over one table, bound to one scope and one connection (the unit of work's)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Numeric,
    Table,
    and_,
    cast,
    func,
    not_,
    select,
)
from sqlalchemy.exc import IntegrityError

from billingkit.domain.queries import Filter, ListQuery, Op, Page
from billingkit.domain.resources import Record, Status
from billingkit.errors import AlreadyExists, NotFound, ValidationError, VersionConflict
from billingkit.storage.kinds import Kind, Level
from billingkit.storage.memory.repository import check_fields
from billingkit.storage.sql.mapping import from_row, to_row
from billingkit.storage.sql.types import ExactDecimal

T = TypeVar("T", bound=Record)

__all__ = ["SqlRepository", "is_unique_violation"]


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
    def _scope_clause(self) -> list[ColumnElement[bool]]:
        c = self._table.c
        clauses: list[ColumnElement[bool]] = []
        if self._kind.level is not Level.GLOBAL:
            clauses.append(c.tenant_id == self._tenant_id)
        if self._kind.level is Level.ENVIRONMENT:
            clauses.append(c.environment_id == self._environment_id)
        return clauses

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
    def find(self, id: str) -> T | None:
        stmt = select(self._table).where(self._table.c.id == id, *self._scope_clause())
        row = self._conn.execute(stmt).mappings().first()
        return None if row is None else from_row(row, self._kind.model)  # type: ignore[return-value]

    def get(self, id: str) -> T:
        item = self.find(id)
        if item is None:
            raise NotFound(f"{self._kind.label} {id} not found")
        return item

    def find_one(self, *, include_archived: bool = False, **equals: Any) -> T | None:
        check_fields(self._kind, equals, field="filters")
        clauses = [self._column(k) == _plain(v) for k, v in equals.items()]
        if not include_archived:
            clauses.append(self._table.c.status == Status.PUBLISHED.value)
        stmt = select(self._table).where(*self._scope_clause(), *clauses).order_by(self._table.c.id).limit(1)
        row = self._conn.execute(stmt).mappings().first()
        return None if row is None else from_row(row, self._kind.model)  # type: ignore[return-value]

    def _column(self, name: str) -> Any:
        if name.startswith("metadata."):
            return self._table.c.metadata[name.removeprefix("metadata.")].as_string()
        return self._table.c[name]

    def _ordered(self, name: str) -> Any:
        """The column as compared by ``gt``/``lt`` filters and sorts. SQLite stores decimals as
        text (exactly), which would compare "100.00" < "49.00"; compare their numeric value."""
        column = self._column(name)
        if self._conn.dialect.name == "sqlite" and isinstance(getattr(column, "type", None), ExactDecimal):
            return cast(column, Numeric())
        return column

    def _condition(self, flt: Filter) -> Any:
        col = self._column(flt.field)
        value = flt.value
        op = flt.op
        if op is Op.EQ:
            return col == _plain(value)
        if op is Op.NE:
            return col != _plain(value)
        if op in (Op.IN, Op.NOT_IN):
            options = [_plain(v) for v in value]
            return col.in_(options) if op is Op.IN else not_(col.in_(options))
        if op in (Op.CONTAINS, Op.NOT_CONTAINS):
            pattern = "%" + str(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            found = col.ilike(pattern, escape="\\")
            return found if op is Op.CONTAINS else not_(found)
        col = self._ordered(flt.field)
        if op in (Op.GT, Op.AFTER):
            return col > value
        if op is Op.GTE:
            return col >= value
        if op in (Op.LT, Op.BEFORE):
            return col < value
        if op is Op.LTE:
            return col <= value
        raise ValidationError(f"unsupported operator {op}", field="filters")  # pragma: no cover

    def list(self, query: ListQuery) -> Page[T]:
        check_fields(self._kind, (f.field for f in query.filters), field="filters")
        check_fields(self._kind, (s.field for s in query.sort), field="sort")
        where = [*self._scope_clause(), *(self._condition(f) for f in query.filters)]
        if query.status is not None:
            where.append(self._table.c.status == query.status.value)
        total = self._conn.execute(
            select(func.count()).select_from(self._table).where(and_(*where))
        ).scalar_one()
        order = []
        for s in query.sort:
            col = self._ordered(s.field)
            # Same NULL placement as the memory store: NULL is the smallest value.
            order.append(col.desc().nulls_last() if s.descending else col.asc().nulls_first())
        first_desc = query.sort[0].descending if query.sort else True
        order.append(self._table.c.id.desc() if first_desc else self._table.c.id.asc())
        stmt = select(self._table).where(*where).order_by(*order).limit(query.limit).offset(query.offset)
        rows = self._conn.execute(stmt).mappings().all()
        items: Sequence[T] = [from_row(r, self._kind.model) for r in rows]  # type: ignore[misc]
        return Page(items=items, total=int(total), limit=query.limit, offset=query.offset)

    # -- writes ----------------------------------------------------------------------------
    def _conflict(self, exc: IntegrityError, item: T) -> AlreadyExists:
        field = self._kind.unique[0].fields[0] if self._kind.unique else "id"
        for rule in self._kind.unique:
            if any(f in str(exc.orig) for f in rule.fields):
                field = rule.fields[0]
        value = getattr(item, field, None)
        return AlreadyExists(
            f"a {self._kind.label} with {field}={value!r} already exists", details={"field": field}
        )

    def add(self, item: T) -> T:
        self._check_scope(item)
        try:
            with self._conn.begin_nested():
                self._conn.execute(self._table.insert().values(to_row(item, self._table)))
        except IntegrityError as exc:
            if is_unique_violation(exc):
                raise self._conflict(exc, item) from None
            raise
        return item

    def update(self, item: T, *, expected_version: int | None = None) -> T:
        self._check_scope(item)
        clauses = [self._table.c.id == item.id, *self._scope_clause()]
        if expected_version is not None:
            clauses.append(self._table.c.version == expected_version)
            item = item.model_copy(update={"version": expected_version + 1})
        values = to_row(item, self._table)
        values.pop("id")
        try:
            with self._conn.begin_nested():
                result = self._conn.execute(self._table.update().where(*clauses).values(values))
        except IntegrityError as exc:
            if is_unique_violation(exc):
                raise self._conflict(exc, item) from None
            raise
        if result.rowcount == 0:
            current = self.get(item.id)  # raises NotFound when missing
            raise VersionConflict(
                f"{self._kind.label} {item.id} is at version "
                f"{getattr(current, 'version', None)}, not {expected_version}"
            )
        return item


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value
