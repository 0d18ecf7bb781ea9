"""A ledger (a repository over an append-only kind) in the memory store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from billingkit.domain.resources import Record
from billingkit.domain.usage import EXACT
from billingkit.errors import ValidationError
from billingkit.storage.ledgers import (
    PENDING,
    check_settle,
    check_sum,
    refuse_change,
    refuse_settle,
    settle_status,
)
from billingkit.storage.memory.repository import MemoryRepository
from billingkit.storage.records import plain_value

T = TypeVar("T", bound=Record)

__all__ = ["MemoryLedger"]


class MemoryLedger(MemoryRepository[T]):
    """Adds, reads and sums rows; refuses every change to a stored row (``AppendOnly``)."""

    def update(self, item: T, *, expected_version: int | None = None) -> T:
        self._stamp_scope(item)
        self.get(item.id)  # NotFound for a row this scope cannot see, as on every kind
        raise refuse_change(self._kind, item.id)

    def update_many(self, changes: Sequence[tuple[T, T]]) -> list[T]:
        for stored, changed in changes:
            if changed.id != stored.id:
                raise ValidationError("update_many pairs must share an id", field="id")
            self._stamp_scope(changed)
            self.get(stored.id)
        if changes:
            raise refuse_change(self._kind, changes[0][0].id)
        return []

    def _matching(self, equals: dict[str, Any]) -> Iterator[T]:
        wanted = {name: plain_value(value) for name, value in equals.items()}
        for item in self._scoped():
            if all(plain_value(getattr(item, name)) == value for name, value in wanted.items()):
                yield item

    def sum(self, field: str, /, **equals: Any) -> Decimal:
        check_sum(self._kind, field, None, equals)
        total = Decimal(0)
        for item in self._matching(equals):
            value = getattr(item, field)
            if value is not None:
                total = EXACT.add(total, value)  # exact whatever the caller's decimal context
        return total

    def sum_by(self, field: str, group_by: str, /, **equals: Any) -> dict[str | None, Decimal]:
        check_sum(self._kind, field, group_by, equals)
        totals: dict[str | None, Decimal] = {}
        for item in self._matching(equals):
            key = plain_value(getattr(item, group_by))
            value = getattr(item, field)
            current = totals.get(key, Decimal(0))
            totals[key] = current if value is None else EXACT.add(current, value)
        return totals

    def settle(self, id: str, /, status: str, *, updated_at: datetime, updated_by: str) -> T:
        check_settle(self._kind, status)
        current = self.get(id)
        if settle_status(current) != PENDING:
            raise refuse_settle(self._kind, id, settle_status(current))
        settled = type(current).model_validate(
            {
                **current.model_dump(),
                "transaction_status": status,
                "updated_at": updated_at,
                "updated_by": updated_by,
            }
        )
        self._record_undo(self._rows, id, current)
        self._rows[id] = settled
        return settled
