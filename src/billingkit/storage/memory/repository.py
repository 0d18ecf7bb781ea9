"""A repository over one kind's rows in the memory store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Generic, TypeVar

from billingkit.domain.queries import ListQuery, Page
from billingkit.domain.resources import Record, Status
from billingkit.errors import AlreadyExists, NotFound, ValidationError, VersionConflict
from billingkit.storage.kinds import Kind, Level
from billingkit.storage.records import changed_fields, check_fields, field_value, matcher, plain_value

T = TypeVar("T", bound=Record)
Row = dict[str, Record]


class _NullsFirst:
    """Sort key wrapper: None sorts before every value (as in SQL stores, see the SQL adapter)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _NullsFirst) -> bool:
        if self.value is None:
            return other.value is not None
        if other.value is None:
            return False
        return bool(self.value < other.value)


def sort_key(name: str) -> Callable[[Record], _NullsFirst]:
    return lambda item: _NullsFirst(plain_value(field_value(item, name)))


class MemoryRepository(Generic[T]):
    """Reads and writes one kind's rows within one scope; writes go through the undo log."""

    def __init__(
        self,
        kind: Kind,
        rows: Row,
        scope: tuple[str | None, str | None],
        record_undo: Callable[[Any, Any, Any], None],
        unique_index: dict[tuple[object, ...], str] | None = None,
        savepoint: Callable[[], AbstractContextManager[None]] = nullcontext,
    ) -> None:
        self._kind = kind
        self._rows = rows
        # (rule number, tenant, environment, *values) -> id of the item that took those values.
        # Entries are only added (through the undo log, so rollback restores them) and are checked
        # against the stored row on use, so an entry whose item has moved on is simply stale.
        self._unique = {} if unique_index is None else unique_index
        self._tenant_id, self._environment_id = scope
        self._record_undo = record_undo
        self._savepoint = savepoint
        if kind.level is not Level.GLOBAL and self._tenant_id is None:
            raise ValidationError(f"{kind.label} needs a tenant scope", field="tenant_id")
        if kind.level is Level.ENVIRONMENT and self._environment_id is None:
            raise ValidationError(f"{kind.label} needs an environment scope", field="environment_id")

    def _in_scope(self, item: Record) -> bool:
        level = self._kind.level
        if level is Level.GLOBAL:
            return True
        if getattr(item, "tenant_id", None) != self._tenant_id:
            return False
        return level is Level.TENANT or getattr(item, "environment_id", None) == self._environment_id

    def _stamp_scope(self, item: T) -> None:
        if not self._in_scope(item):
            raise ValidationError(
                f"{self._kind.label} belongs to another tenant or environment", field="tenant_id"
            )

    def find(self, id: str) -> T | None:
        item = self._rows.get(id)
        if item is None or not self._in_scope(item):
            return None
        return item  # type: ignore[return-value]

    def find_many(self, ids: Iterable[str]) -> list[T]:
        found = (self.find(id) for id in set(ids))
        return [item for item in found if item is not None]

    def get(self, id: str) -> T:
        item = self.find(id)
        if item is None:
            raise NotFound(f"{self._kind.label} {id} not found")
        return item

    def _scoped(self) -> Iterable[T]:
        return (item for item in self._rows.values() if self._in_scope(item))  # type: ignore[misc]

    def find_one(self, *, include_archived: bool = False, **equals: Any) -> T | None:
        check_fields(self._kind, equals, field="filters")
        for item in self._scoped():
            if not include_archived and item.status is not Status.PUBLISHED:
                continue
            if all(plain_value(field_value(item, k)) == plain_value(v) for k, v in equals.items()):
                return item
        return None

    def _unique_keys(self, item: Record) -> list[tuple[int, tuple[object, ...], tuple[object, ...]]]:
        """(rule number, index key, values) for each uniqueness rule ``item`` takes part in."""
        keys = []
        for number, rule in enumerate(self._kind.unique):
            if rule.live_only and item.status is not Status.PUBLISHED:
                continue
            values = tuple(plain_value(getattr(item, f)) for f in rule.fields)
            if any(v is None for v in values):
                continue
            scope = (getattr(item, "tenant_id", None), getattr(item, "environment_id", None))
            keys.append((number, (number, *scope, *values), values))
        return keys

    def _check_unique(self, item: T) -> None:
        for number, key, values in self._unique_keys(item):
            rule = self._kind.unique[number]
            holder_id = self._unique.get(key)
            if holder_id is None or holder_id == item.id:
                continue
            holder = self._rows.get(holder_id)
            if holder is None or (rule.live_only and holder.status is not Status.PUBLISHED):
                continue
            if tuple(plain_value(getattr(holder, f)) for f in rule.fields) != values:
                continue
            shown = ", ".join(f"{f}={v!r}" for f, v in zip(rule.fields, values, strict=True))
            raise AlreadyExists(
                f"a {self._kind.label} with {shown} already exists", details={"field": rule.fields[0]}
            )

    def _index_unique(self, item: T) -> None:
        for _number, key, _values in self._unique_keys(item):
            if self._unique.get(key) != item.id:
                self._record_undo(self._unique, key, self._unique.get(key))
                self._unique[key] = item.id

    def add(self, item: T) -> T:
        self._stamp_scope(item)
        if item.id in self._rows:
            raise AlreadyExists(f"{self._kind.label} {item.id} already exists", details={"field": "id"})
        self._check_unique(item)
        self._record_undo(self._rows, item.id, None)
        self._rows[item.id] = item
        self._index_unique(item)
        return item

    def update(self, item: T, *, expected_version: int | None = None) -> T:
        self._stamp_scope(item)
        current = self.get(item.id)
        if expected_version is not None:
            stored = getattr(current, "version", None)
            if stored != expected_version:
                raise VersionConflict(
                    f"{self._kind.label} {item.id} is at version {stored}, not {expected_version}"
                )
            item = item.model_copy(update={"version": expected_version + 1})
        self._check_unique(item)
        self._record_undo(self._rows, item.id, current)
        self._rows[item.id] = item
        self._index_unique(item)
        return item

    def add_many(self, items: Sequence[T]) -> None:
        with self._savepoint():
            for item in items:
                self.add(item)

    def update_many(self, changes: Sequence[tuple[T, T]]) -> list[T]:
        saved: list[T] = []
        with self._savepoint():
            for stored, changed in changes:
                if changed.id != stored.id:
                    raise ValidationError("update_many pairs must share an id", field="id")
                current = self.get(stored.id)
                diff = changed_fields(stored, changed)
                merged = current.model_copy(update={name: getattr(changed, name) for name in diff})
                version = stored.version if self._kind.versioned else None  # type: ignore[attr-defined]
                saved.append(self.update(merged, expected_version=version))
        return saved

    def list(self, query: ListQuery) -> Page[T]:
        check_fields(self._kind, (f.field for f in query.filters), field="filters")
        check_fields(self._kind, (s.field for s in query.sort), field="sort")
        tests = [matcher(f) for f in query.filters]
        selected = [
            item
            for item in self._scoped()
            if (query.status is None or item.status == query.status) and all(test(item) for test in tests)
        ]
        direction = query.sort[0].descending if query.sort else True
        selected.sort(key=lambda item: item.id, reverse=direction)  # tie-breaker
        for order in reversed(query.sort):
            selected.sort(key=sort_key(order.field), reverse=order.descending)
        window = selected[query.offset : query.offset + query.limit]
        return Page(items=window, total=len(selected), limit=query.limit, offset=query.offset)
