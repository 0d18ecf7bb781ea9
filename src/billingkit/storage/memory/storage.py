"""The in-memory store and its unit of work.

Concurrency: one re-entrant lock serialises units of work, so every unit of work sees a consistent
state and commits atomically. Rollback replays an undo log, so a failed unit of work leaves no trace,
exactly as a database transaction would. Read-only units of work take the same lock: writes change
the rows in place, so a reader beside a writer would see what the writer has not committed (and
could meet a dict changing under its iteration); they refuse every write instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any

from billingkit.domain.access import Account, ApiKey
from billingkit.domain.resources import Record, Status
from billingkit.errors import InvalidOperation, ReadOnlyTransaction, ValidationError
from billingkit.storage.kinds import KINDS, check_count, due_field
from billingkit.storage.memory.events import EventRows, MemoryEventStore, MemoryUsageStore
from billingkit.storage.memory.ledger import MemoryLedger
from billingkit.storage.memory.repository import MemoryRepository, Row

__all__ = ["MemoryStorage", "MemoryUnitOfWork"]


class MemoryStorage:
    """Everything in process memory; gone when the process ends. ``Billing()`` uses it by default."""

    def __init__(self) -> None:
        self._rows: dict[str, Row] = {name: {} for name in KINDS}
        # Per kind: (rule index, scope, values) -> id of the item holding them (see MemoryRepository).
        self._unique: dict[str, dict[tuple[object, ...], str]] = {name: {} for name in KINDS}
        self._counters: dict[tuple[str, str, str], int] = {}
        self._events = EventRows()
        self._lock = threading.RLock()

    def unit_of_work(
        self, tenant_id: str | None = None, environment_id: str | None = None, *, read_only: bool = False
    ) -> MemoryUnitOfWork:
        """See :meth:`billingkit.ports.Storage.unit_of_work`."""
        return MemoryUnitOfWork(self, tenant_id, environment_id, read_only=read_only)

    def ping(self) -> None:
        """Always answers: the data lives in this process."""

    def close(self) -> None:
        """Nothing to release; present so every store has the same shape."""

    def __repr__(self) -> str:
        return f"MemoryStorage({sum(len(r) for r in self._rows.values())} rows)"


class MemoryUnitOfWork:
    """The memory store's :class:`~billingkit.ports.UnitOfWork`; its repositories (the
    attributes :class:`~billingkit.ports.Repositories` declares) are made on first access."""

    def __init__(
        self,
        storage: MemoryStorage,
        tenant_id: str | None,
        environment_id: str | None,
        *,
        read_only: bool = False,
    ) -> None:
        self._storage = storage
        self._scope = (tenant_id, environment_id)
        self._read_only = read_only
        self._undo: list[tuple[dict[Any, Any], Any, Any]] = []
        self._active = False
        self._repositories: dict[str, MemoryRepository[Any]] = {}

    def __getattr__(self, name: str) -> Any:
        # Repositories are made on first use so a tenant-only unit of work can still reach
        # tenant-level repositories without an environment.
        if name in ("events", "usage", "counters"):
            if not self._active:
                raise InvalidOperation("use the unit of work inside a `with` block")
            if name == "usage":
                return MemoryUsageStore(self._storage._events, self._scope)
            if name == "counters":
                return MemoryCounterStore(self._storage._counters, self._scope, self._record)
            return MemoryEventStore(self._storage._events, self._scope, self._record)
        kind = KINDS.get(name)
        if kind is None:
            raise AttributeError(name)
        if not self._active:
            raise InvalidOperation("use the unit of work inside a `with` block")
        repo = self._repositories.get(name)
        if repo is None:
            repo = (MemoryLedger if kind.append_only else MemoryRepository)(
                kind,
                self._storage._rows[name],
                self._scope,
                self._record,
                self._storage._unique[name],
                self._savepoint,
            )
            self._repositories[name] = repo
        return repo

    @property
    def read_only(self) -> bool:
        return self._read_only

    def for_scope(self, tenant_id: str | None, environment_id: str | None) -> MemoryUnitOfWork:
        """The same transaction, with repositories bound to another scope (system use only)."""
        view = MemoryUnitOfWork(self._storage, tenant_id, environment_id, read_only=self._read_only)
        view._undo = self._undo
        view._active = self._active
        view._record = self._record  # type: ignore[method-assign]
        view._savepoint = self._savepoint  # type: ignore[method-assign]
        return view

    def _record(self, rows: dict[Any, Any], key: Any, previous: Any) -> None:
        # Every write records its undo entry before it changes anything: refusing here refuses
        # the write with nothing changed.
        if self._read_only:
            raise ReadOnlyTransaction(
                "a read-only unit of work cannot write; open a write unit of work for this call"
            )
        self._undo.append((rows, key, previous))

    @contextmanager
    def _savepoint(self) -> Iterator[None]:
        """Undo what the block wrote if it raises (the rest of the unit of work stays)."""
        mark = len(self._undo)
        try:
            yield
        except BaseException:
            self._undo_to(mark)
            raise

    def _undo_to(self, mark: int) -> None:
        while len(self._undo) > mark:
            rows, key, previous = self._undo.pop()
            if previous is None:
                rows.pop(key, None)
            else:
                rows[key] = previous

    def __enter__(self) -> MemoryUnitOfWork:
        self._storage._lock.acquire()
        self._active = True
        self._undo = []
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.rollback()
        finally:
            self._active = False
            self._repositories.clear()
            self._storage._lock.release()

    def commit(self) -> None:
        self._undo.clear()  # in place: for_scope views share this log

    def rollback(self) -> None:
        self._undo_to(0)

    def find_api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        for item in self._storage._rows["api_keys"].values():
            if isinstance(item, ApiKey) and item.key_hash == key_hash:
                return item
        return None

    def find_api_key_with_account(self, key_hash: str) -> tuple[ApiKey, bool] | None:
        key = self.find_api_key_by_hash(key_hash)
        if key is None:
            return None
        live = any(
            isinstance(item, Account)
            and item.id == key.account_id
            and item.tenant_id == key.tenant_id
            and item.status is Status.PUBLISHED
            for item in self._storage._rows["accounts"].values()
        )
        return key, live

    def find_accounts_by_email(self, email: str) -> Sequence[Account]:
        return [
            item
            for item in self._storage._rows["accounts"].values()
            if isinstance(item, Account)
            and item.email is not None
            and item.email.lower() == email.lower()
            and item.status is Status.PUBLISHED
        ]

    def claim_due(self, kind: str, now: datetime, limit: int) -> list[Record]:
        if self._read_only:
            raise ReadOnlyTransaction("a read-only unit of work cannot claim due work")
        # The store's lock, held for the whole unit of work, already keeps other claimers out.
        field = due_field(kind, limit)
        due = [
            (at, item.id, item)
            for item in self._storage._rows[kind].values()
            if item.status is Status.PUBLISHED and (at := getattr(item, field)) is not None and at <= now
        ]
        due.sort(key=lambda entry: entry[:2])
        return [item for _, _, item in due[:limit]]

    def has_due(self, kind: str, now: datetime) -> bool:
        field = due_field(kind, 1)
        return any(
            item.status is Status.PUBLISHED and (at := getattr(item, field)) is not None and at <= now
            for item in self._storage._rows[kind].values()
        )


class MemoryCounterStore:
    """Counters in a dict; changes go through the unit of work's undo log like every write."""

    def __init__(
        self,
        counters: dict[tuple[str, str, str], int],
        scope: tuple[str | None, str | None],
        record_undo: Callable[[dict[Any, Any], Any, Any], None],
    ) -> None:
        tenant_id, environment_id = scope
        if tenant_id is None or environment_id is None:
            raise ValidationError("counters need a tenant and an environment", field="environment_id")
        self._counters = counters
        self._scope = (tenant_id, environment_id)
        self._record_undo = record_undo

    def next(self, name: str, *, count: int = 1) -> int:
        check_count(count)
        key = (*self._scope, name)
        current = self._counters.get(key)
        self._record_undo(self._counters, key, current)
        self._counters[key] = (current or 0) + count
        return (current or 0) + 1
