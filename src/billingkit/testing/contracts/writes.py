"""The storage contract, part two: how a store writes (counters, claims, versions, batches,
transactions)."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from billingkit.domain.queries import ListQuery
from billingkit.errors import AlreadyExists, NotFound, ValidationError, VersionConflict
from billingkit.ports import Storage
from billingkit.testing.contracts.samples import T0, sample

__all__ = ["WriteContract"]


class WriteContract:
    """Counters, the due-subscription claim, versions, batch writes and transactions."""

    def test_counters_are_gap_free_per_scope_and_roll_back(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert [uow.counters.next("inv:202603") for _ in range(3)] == [1, 2, 3]
            assert uow.counters.next("inv:202604") == 1
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.counters.next("inv:202603") == 4  # taken, then rolled back below
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.counters.next("inv:202603") == 4
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_b") as uow:
            assert uow.counters.next("inv:202603") == 1
            uow.commit()

    def test_counters_hand_out_blocks(self, storage: Storage) -> None:
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.counters.next("blocks", count=5) == 1  # 1..5 taken
            assert uow.counters.next("blocks") == 6
            assert uow.counters.next("blocks", count=3) == 7  # 7..9
            bad: Any
            for bad in (0, -1, True, 1.5):
                with pytest.raises(ValidationError):
                    uow.counters.next("blocks", count=bad)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.counters.next("blocks", count=2) == 10
            assert uow.counters.next("fresh", count=4) == 1

    def test_concurrent_counters_hand_out_each_number_once(self, storage: Storage) -> None:
        taken: list[int] = []
        lock = threading.Lock()

        def take() -> None:
            for _ in range(10):
                with storage.unit_of_work("tenant_a", "env_a") as uow:
                    value = uow.counters.next("n")
                    uow.commit()
                with lock:
                    taken.append(value)

        threads = [threading.Thread(target=take) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(taken) == list(range(1, 41))

    def test_subscription_updates_check_the_version(self, storage: Storage) -> None:
        sub = sample("subscriptions")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.subscriptions.add(sub)
            updated = uow.subscriptions.update(
                sub.model_copy(update={"billing_sequence": 1}), expected_version=1
            )
            assert updated.version == 2
            with pytest.raises(VersionConflict):
                uow.subscriptions.update(sub.model_copy(update={"billing_sequence": 2}), expected_version=1)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = uow.subscriptions.get(sub.id)
            assert (stored.version, stored.billing_sequence) == (2, 1)

    def test_add_many_stores_all_or_none(self, storage: Storage) -> None:
        kept = sample("customers", external_id="kept")
        batch = [sample("customers", external_id=f"b{n}") for n in range(3)]
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(kept)
            uow.customers.add_many(batch)
            uow.customers.add_many([])
            clash = [sample("customers", external_id="new"), sample("customers", external_id="b1")]
            with pytest.raises(AlreadyExists):
                uow.customers.add_many(clash)
            twice = sample("customers", external_id="twice")
            with pytest.raises(AlreadyExists):
                uow.customers.add_many([twice, twice.model_copy(update={"external_id": "other"})])
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = {c.external_id for c in uow.customers.list(ListQuery(limit=100)).items}
            assert stored == {"kept", "b0", "b1", "b2"}

    def test_add_many_refuses_another_scope(self, storage: Storage) -> None:
        ours, theirs = sample("customers"), sample("customers", environment_id="env_b")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(ValidationError):
                uow.customers.add_many([ours, theirs])
            assert uow.customers.find(ours.id) is None

    def test_update_many_writes_changes_and_checks_versions(self, storage: Storage) -> None:
        subs = [sample("subscriptions") for _ in range(3)]
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.subscriptions.add_many(subs)
            uow.commit()
        later = T0 + timedelta(days=31)
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            changes = [
                (subs[0], subs[0].model_copy(update={"billing_sequence": 5, "next_run_at": later})),
                (subs[1], subs[1].model_copy(update={"billing_sequence": 7})),
                (subs[2], subs[2]),  # nothing changed but the version
            ]
            saved = uow.subscriptions.update_many(changes)
            assert [s.version for s in saved] == [2, 2, 2]
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            stored = [uow.subscriptions.get(s.id) for s in subs]
            assert stored == saved
            assert (stored[0].billing_sequence, stored[0].next_run_at) == (5, later)
            assert (stored[1].billing_sequence, stored[1].next_run_at) == (7, subs[1].next_run_at)
            # A stale pair (version 1, stored 2) refuses the whole call.
            stale = [
                (stored[0], stored[0].model_copy(update={"billing_sequence": 6})),
                (subs[1], subs[1].model_copy(update={"billing_sequence": 8})),
            ]
            with pytest.raises(VersionConflict):
                uow.subscriptions.update_many(stale)
            assert [uow.subscriptions.get(s.id) for s in subs] == saved
            missing = sample("subscriptions")
            with pytest.raises(NotFound):
                uow.subscriptions.update_many([(missing, missing.model_copy(update={"billing_sequence": 1}))])

    def test_update_many_writes_only_the_fields_that_changed(self, storage: Storage) -> None:
        item = sample("customers", name="Ada", email="ada@old.test")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(item)
            uow.customers.update(item.model_copy(update={"email": "ada@new.test"}))  # someone else
            (saved,) = uow.customers.update_many([(item, item.model_copy(update={"name": "Ada L."}))])
            assert saved.name == "Ada L."
            stored = uow.customers.get(item.id)
            assert (stored.name, stored.email) == ("Ada L.", "ada@new.test")
            with pytest.raises(NotFound):
                ghost = sample("customers")
                uow.customers.update_many([(ghost, ghost)])
            with pytest.raises(ValidationError):
                uow.customers.update_many([(item, sample("customers"))])  # not the same resource

    def test_update_that_breaks_uniqueness_is_refused(self, storage: Storage) -> None:
        a = sample("customers", external_id="a")
        b = sample("customers", external_id="b")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(a)
            uow.customers.add(b)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            with pytest.raises(AlreadyExists):
                uow.customers.update(b.model_copy(update={"external_id": "a"}))
            assert uow.customers.get(b.id).external_id == "b"

    def test_duplicate_id_is_already_exists(self, storage: Storage) -> None:
        item = sample("customers")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(item)
            with pytest.raises(AlreadyExists):
                uow.customers.add(item.model_copy(update={"external_id": "other"}))

    # -- transactions ----------------------------------------------------------------------
    def test_uncommitted_work_is_rolled_back(self, storage: Storage) -> None:
        item = sample("customers")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(item)
        with pytest.raises(RuntimeError), storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(sample("customers"))
            raise RuntimeError("boom")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.list(ListQuery()).total == 0

    def test_rollback_restores_updated_rows(self, storage: Storage) -> None:
        item = sample("customers", name="before")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(item)
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.update(item.model_copy(update={"name": "after"}))
            uow.rollback()
            assert uow.customers.get(item.id).name == "before"

    def test_a_refused_write_does_not_undo_earlier_writes(self, storage: Storage) -> None:
        kept = sample("customers", external_id="kept")
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            uow.customers.add(kept)
            with pytest.raises(AlreadyExists):
                uow.customers.add(sample("customers", external_id="kept"))
            uow.commit()
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.get(kept.id) == kept

    def test_concurrent_writers_of_one_external_id_produce_one_customer(self, storage: Storage) -> None:
        outcomes: list[str] = []
        barrier = threading.Barrier(4)

        def create() -> None:
            barrier.wait()
            try:
                with storage.unit_of_work("tenant_a", "env_a") as uow:
                    uow.customers.add(sample("customers", external_id="race"))
                    uow.commit()
                outcomes.append("created")
            except AlreadyExists:
                outcomes.append("conflict")

        threads = [threading.Thread(target=create) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["conflict", "conflict", "conflict", "created"]
        with storage.unit_of_work("tenant_a", "env_a") as uow:
            assert uow.customers.list(ListQuery()).total == 1
