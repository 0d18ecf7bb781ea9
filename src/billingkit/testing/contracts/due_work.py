"""The due-work claim contract: what ``UnitOfWork.claim_due`` must do on every store.

Every kind whose ``storage.kinds`` entry declares ``due_at`` is checked. Subclass and provide a
``storage`` fixture returning a fresh, empty store::

    class TestMyStoreClaims(DueWorkContract):
        @pytest.fixture
        def storage(self):
            return MyStorage()

A store that lets a second claimer skip the items an open transaction claimed (PostgreSQL's
``FOR UPDATE SKIP LOCKED``) says so in :meth:`DueWorkContract.skips_claimed_items`; a store that
serialises writers instead (SQLite, the memory store) makes the second claimer wait. Either way
two claimers never take the same item.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from billingkit.domain.resources import Record, Status
from billingkit.errors import ValidationError
from billingkit.ports import Storage
from billingkit.storage.kinds import KINDS
from billingkit.testing.contracts.samples import T0, sample

__all__ = ["DUE_KINDS", "DueWorkContract"]

#: The kinds that carry due work, by the registry.
DUE_KINDS = [name for name, kind in KINDS.items() if kind.due_at is not None]
DUE = T0 + timedelta(days=31)


def _due_field(kind: str) -> str:
    field = KINDS[kind].due_at
    assert field is not None
    return field


def due_item(kind: str, at: datetime | None, **fields: Any) -> Any:
    """A valid item of ``kind`` whose due field is ``at`` (``None``: nothing due)."""
    values: dict[str, Any] = {_due_field(kind): at, **fields}
    return sample(kind, **values)


def _scope(item: Record) -> tuple[str | None, str | None]:
    return getattr(item, "tenant_id", None), getattr(item, "environment_id", None)


def _store(storage: Storage, kind: str, items: list[Any]) -> None:
    for item in items:
        with storage.unit_of_work(*_scope(item)) as uow:
            getattr(uow, kind).add(item)
            uow.commit()


class DueWorkContract:
    """Subclass and provide a ``storage`` fixture (see the module docstring)."""

    def skips_claimed_items(self, storage: Storage) -> bool:
        """Whether a claim passes over items another open transaction claimed instead of waiting
        for that transaction to end. True for the SQL store on PostgreSQL; override for yours."""
        engine = getattr(storage, "engine", None)
        return engine is not None and engine.dialect.name == "postgresql"

    @pytest.mark.parametrize("kind", DUE_KINDS)
    def test_due_items_of_every_scope_are_claimed_earliest_first(self, storage: Storage, kind: str) -> None:
        now = DUE + timedelta(hours=2)
        items = [
            due_item(kind, now),  # due exactly now
            due_item(kind, DUE, tenant_id="tenant_b", environment_id="env_b"),  # earliest, another scope
            due_item(kind, now + timedelta(seconds=1)),  # not due yet
            due_item(kind, None),  # nothing due (a draft subscription)
            due_item(kind, DUE, status=Status.ARCHIVED),
            due_item(kind, DUE, status=Status.DELETED),
        ]
        _store(storage, kind, items)
        with storage.unit_of_work() as uow:
            claimed = uow.claim_due(kind, now, 10)
            assert claimed == [items[1], items[0]]  # the stored items, whole
            assert uow.claim_due(kind, now, 1) == [items[1]]
            assert uow.claim_due(kind, DUE - timedelta(microseconds=1), 10) == []

    @pytest.mark.parametrize("kind", DUE_KINDS)
    def test_has_due_answers_what_a_claim_would_take_without_claiming(
        self, storage: Storage, kind: str
    ) -> None:
        """``has_due`` sees exactly the items ``claim_due`` claims (any scope, published, due at
        or before ``now``), in a read-only unit of work, and leaves them claimable."""
        now = DUE + timedelta(hours=2)
        with storage.unit_of_work(read_only=True) as uow:
            assert uow.has_due(kind, now) is False
        later = [
            due_item(kind, now + timedelta(seconds=1)),
            due_item(kind, None),
            due_item(kind, DUE, status=Status.ARCHIVED),
        ]
        _store(storage, kind, later)
        with storage.unit_of_work(read_only=True) as uow:
            assert uow.has_due(kind, now) is False
            assert uow.has_due(kind, now + timedelta(seconds=1)) is True
        elsewhere = due_item(kind, DUE, tenant_id="tenant_b", environment_id="env_b")
        _store(storage, kind, [elsewhere])
        with storage.unit_of_work(read_only=True) as uow:
            assert uow.has_due(kind, DUE) is True
            assert uow.has_due(kind, DUE - timedelta(microseconds=1)) is False
        with storage.unit_of_work() as uow:
            assert uow.claim_due(kind, now, 10) == [elsewhere]

    @pytest.mark.parametrize("kind", DUE_KINDS)
    def test_items_due_at_the_same_instant_are_claimed_in_id_order(self, storage: Storage, kind: str) -> None:
        first, second, third = (due_item(kind, DUE) for _ in range(3))
        _store(storage, kind, [third, first, second])  # stored out of id order
        with storage.unit_of_work() as uow:
            assert [item.id for item in uow.claim_due(kind, DUE, 2)] == [first.id, second.id]

    @pytest.mark.parametrize("kind", DUE_KINDS)
    def test_a_claim_changes_nothing_and_uncommitted_work_is_due_again(
        self, storage: Storage, kind: str
    ) -> None:
        items = [due_item(kind, DUE + timedelta(minutes=i)) for i in range(3)]
        _store(storage, kind, items)
        with storage.unit_of_work() as uow:
            claimed = uow.claim_due(kind, DUE + timedelta(hours=1), 2)
            _move_past(uow, kind, claimed, DUE + timedelta(days=30))
            # no commit: the work is rolled back, so the items are due again
        with storage.unit_of_work() as uow:
            assert uow.claim_due(kind, DUE + timedelta(hours=1), 10) == items
            claimed = uow.claim_due(kind, DUE + timedelta(hours=1), 2)
            _move_past(uow, kind, claimed, DUE + timedelta(days=30))
            uow.commit()
        with storage.unit_of_work() as uow:
            assert uow.claim_due(kind, DUE + timedelta(hours=1), 10) == [items[2]]

    def test_a_kind_without_due_work_and_a_limit_below_one_are_refused(self, storage: Storage) -> None:
        with storage.unit_of_work() as uow:
            for kind in ("customers", "no_such_kind"):
                with pytest.raises(ValidationError) as caught:
                    uow.claim_due(kind, DUE, 10)
                assert caught.value.field == "kind"
                assert all(name in caught.value.message for name in DUE_KINDS)
                with pytest.raises(ValidationError) as caught:
                    uow.has_due(kind, DUE)
                assert caught.value.field == "kind"
            for kind in DUE_KINDS:
                for limit in (0, -1):
                    with pytest.raises(ValidationError) as caught:
                        uow.claim_due(kind, DUE, limit)
                    assert caught.value.field == "limit"

    @pytest.mark.parametrize("kind", DUE_KINDS)
    def test_two_concurrent_claimers_take_disjoint_items(self, storage: Storage, kind: str) -> None:
        """The first claimer claims three of six due items, moves them past ``now`` and holds its
        transaction open; a second claimer asks for all six meanwhile. It gets the other three:
        at once where claimed items are skipped, after the first committed where writers queue."""
        now, later = DUE + timedelta(hours=1), DUE + timedelta(days=30)
        items = [due_item(kind, DUE + timedelta(minutes=i)) for i in range(6)]
        _store(storage, kind, items)
        skips = self.skips_claimed_items(storage)
        first_claimed, second_claimed = threading.Event(), threading.Event()
        timeline: list[str] = []
        taken: dict[str, list[str]] = {}
        errors: list[BaseException] = []

        def first() -> None:
            try:
                with storage.unit_of_work() as uow:
                    claimed = uow.claim_due(kind, now, 3)
                    taken["first"] = [item.id for item in claimed]
                    _move_past(uow, kind, claimed, later)
                    first_claimed.set()
                    # Where claims skip claimed rows, hold until the second claimer got its items;
                    # where writers queue, it cannot claim before this commit: wait briefly only.
                    second_claimed.wait(timeout=30 if skips else 0.3)
                    timeline.append("first committed")
                    uow.commit()
            except BaseException as exc:
                errors.append(exc)
                first_claimed.set()

        def second() -> None:
            try:
                first_claimed.wait(timeout=30)
                with storage.unit_of_work() as uow:
                    claimed = uow.claim_due(kind, now, 6)
                    timeline.append("second claimed")
                    second_claimed.set()
                    taken["second"] = [item.id for item in claimed]
                    _move_past(uow, kind, claimed, later)
                    uow.commit()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        ids = [item.id for item in items]
        assert taken == {"first": ids[:3], "second": ids[3:]}
        expected = ["second claimed", "first committed"] if skips else ["first committed", "second claimed"]
        assert timeline == expected
        with storage.unit_of_work() as uow:
            assert uow.claim_due(kind, now, 10) == []  # every item was carried out once


def _move_past(uow: Any, kind: str, claimed: list[Record], later: datetime) -> None:
    """Do the claimed work: each item is next due at ``later``."""
    field = _due_field(kind)
    for item in claimed:
        getattr(uow.for_scope(*_scope(item)), kind).update(item.model_copy(update={field: later}))
