"""Reads through the public API answer while a long write transaction holds the write lock.

A writer thread opens a write unit of work on the same store (on SQLite a file database in WAL
mode: ``BEGIN IMMEDIATE``, the write lock), changes a customer and adds another, then sleeps
before it commits. Meanwhile reads through ``billing.scope(...)`` (a get, a search, a list, a
meter's usage) must return before the writer commits and must not see its
uncommitted writes. Before read-only units of work, every SQLite read began with ``BEGIN
IMMEDIATE`` and waited here for the writer's commit.

The memory store serialises every unit of work (decision: its writes change rows in place), so it
is not part of this test. The PostgreSQL case skips when the server is unreachable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from billingkit import Billing, TestClock
from billingkit.domain.queries import ListQuery
from billingkit.errors import ReadOnlyTransaction
from billingkit.services import customers
from billingkit.storage.sql import SqlStorage
from tests.conftest import make_storage

#: How long the writer holds its transaction open.
HOLD = 3.0
#: A read must answer within this (generous, so a loaded machine does not fail it); far below
#: HOLD, so a read that waited for the writer's commit fails.
BOUND = 1.5
NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def sql_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    store = make_storage(request.param, request, tmp_path)
    if request.param == "sqlite":
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    yield store
    store.close()


def test_reads_answer_while_a_long_write_transaction_holds_the_lock(sql_storage: SqlStorage) -> None:
    billing = Billing(sql_storage, TestClock(NOW))
    setup = billing.bootstrap()
    tenant_id, environment_id = setup.tenant.id, setup.environments[0][0].id
    scoped = billing.scope(tenant_id, environment_id)
    customer = scoped.customers.create(external_id="c-1", name="Before")
    meter = scoped.meters.create(name="Calls", event_name="api", aggregation={"type": "COUNT"})
    scoped.events.ingest_bulk(
        [
            {"event_name": "api", "external_customer_id": "c-1", "timestamp": NOW - timedelta(hours=h)}
            for h in range(1, 4)
        ]
    )

    holding = threading.Event()
    committed = threading.Event()
    failure: list[BaseException] = []

    def writer() -> None:
        try:
            with sql_storage.unit_of_work(tenant_id, environment_id) as uow:
                stored = uow.customers.get(customer.id)
                uow.customers.update(stored.model_copy(update={"name": "Uncommitted"}))
                uow.customers.add(
                    stored.model_copy(
                        update={"id": billing.ids.new("cust"), "external_id": "c-2", "name": "New"}
                    )
                )
                holding.set()
                time.sleep(HOLD)
                uow.commit()
            committed.set()
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)
            holding.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(10) and not failure, failure
        window = {"external_customer_id": "c-1", "start_time": NOW - timedelta(days=1), "end_time": NOW}
        calls: dict[str, Callable[[], Any]] = {
            "get": lambda: scoped.customers.get(customer.id),
            "search": lambda: scoped.customers.search(),
            "list": lambda: scoped.customers.list(ListQuery()),
            "usage": lambda: scoped.usage.for_meter(meter.id, **window),
        }
        reads: dict[str, Any] = {}
        timings: dict[str, float] = {}
        for label, call in calls.items():
            started = time.perf_counter()
            reads[label] = call()
            timings[label] = time.perf_counter() - started
        still_holding = not committed.is_set()
    finally:
        thread.join(HOLD + 30)
    assert not failure, failure

    assert still_holding, f"the writer committed before the reads ended ({timings})"
    slow = {label: round(seconds, 3) for label, seconds in timings.items() if seconds >= BOUND}
    assert not slow, f"reads waited for the writer: {slow}"
    # Nothing uncommitted was seen.
    assert reads["get"].name == "Before"
    assert [c.external_id for c in reads["search"].items] == ["c-1"]
    assert [c.external_id for c in reads["list"].items] == ["c-1"]
    assert reads["usage"].value == 3
    # After the commit, the same reads see it.
    assert scoped.customers.get(customer.id).name == "Uncommitted"
    assert sorted(c.external_id for c in scoped.customers.search().items) == ["c-1", "c-2"]


def test_a_write_through_the_read_path_is_refused(storage: Any) -> None:
    billing = Billing(storage, TestClock(NOW))
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    data = customers.CustomerCreate(external_id="c-1", name="Ada")
    with pytest.raises(ReadOnlyTransaction) as refused:
        scoped.read(customers.create_customer, data=data)
    assert (refused.value.code, refused.value.http_status) == ("read_only_transaction", 500)
    assert scoped.customers.search().items == []
    # The write path still writes (on SQLite the pooled connection's query_only is reset).
    assert scoped.customers.create(data).external_id == "c-1"
