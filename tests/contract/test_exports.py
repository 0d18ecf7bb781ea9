"""Exports on every store (memory, SQLite, PostgreSQL): the CSV of events, invoices and credit notes
is exactly the stored records, written in pages; a run that dies mid-export, in process or killed
with SIGKILL, leaves the next run one complete file with no row twice; a scheduled export runs."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from billingkit import Billing, Scoped, Settings, TestClock
from billingkit.domain.resources import iso
from billingkit.domain.tasks import ExportPart, TaskStatus
from billingkit.ports import Storage
from billingkit.services import tasks as task_service
from billingkit.services.access import BootstrapResult
from tests.services.conftest import stored

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, tzinfo=UTC)
PAGE = 2


@pytest.fixture
def billing(storage: Storage, clock: TestClock) -> Billing:
    return Billing(storage, clock, settings=Settings(export_page_size=PAGE))


@pytest.fixture
def env(billing: Billing, setup: BootstrapResult) -> Scoped:
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


def rows(scoped: Scoped, task_id: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(scoped.tasks.download(task_id).decode())))


def ingest(scoped: Scoped, count: int) -> None:
    scoped.events.ingest_bulk(
        [
            {
                "event_id": f"ev-{n:02d}",
                "event_name": "api_call",
                "external_customer_id": f"c-{n % 3}",
                "timestamp": MARCH + timedelta(hours=n, microseconds=n),
                "properties": {"tokens": f"{n}.50", "model": "m,1"},
            }
            for n in range(count)
        ]
    )


def test_exports_are_exactly_the_stored_records(billing: Billing, env: Scoped) -> None:
    ingest(env, 5)
    invoices = [
        stored(
            env,
            "invoices",
            created_at=MARCH + timedelta(days=n),
            subtotal=Decimal(amount),
            total=Decimal(amount),
            amount_due=Decimal(amount),
            amount_remaining=Decimal(amount),
        )
        for n, amount in enumerate(("10.50", "0.000001", "99999999.99"))
    ]
    notes = [stored(env, "credit_notes", created_at=MARCH + timedelta(days=n)) for n in range(3)]
    stored(env, "invoices", created_at=APRIL)  # outside the window
    made = {
        kind: env.tasks.export(entity_type=kind, start_time=MARCH, end_time=APRIL)
        for kind in ("events", "invoice", "credit_notes")
    }
    billing.run_due()

    for task in made.values():
        done = env.tasks.get(task.id)
        assert done.task_status is TaskStatus.COMPLETED
        assert done.processed_records == done.total_records == done.successful_records

    # Events, read back from the store, in time order.
    listed = env.events.query(start_time=MARCH, end_time=APRIL, page_size=100, sort="timestamp", order="asc")
    assert [row["event_id"] for row in rows(env, made["events"].id)] == [e.event_id for e in listed.events]
    assert rows(env, made["events"].id)[1] == {
        "event_id": "ev-01",
        "event_name": "api_call",
        "external_customer_id": "c-1",
        "customer_id": "",
        "timestamp": "2026-03-01T01:00:00.000001Z",
        "source": "",
        "properties": '{"model":"m,1","tokens":"1.50"}',
    }
    # Invoices and credit notes: each row is the stored record read back, exact.
    for kind, records, reread in (
        ("invoice", invoices, env.invoices.get),
        ("credit_notes", notes, env.credit_notes.get),
    ):
        got = rows(env, made[kind].id)
        assert [row["id"] for row in got] == sorted(r.id for r in records)
        for row in got:
            record = reread(row["id"])
            assert row["customer_id"] == record.customer_id
            assert row["created_at"] == iso(record.created_at)
            money = "total" if kind == "invoice" else "total_amount"
            assert row[money] == str(getattr(record, money))
    assert [row["total"] for row in rows(env, made["invoice"].id)] == [
        str(i.total) for i in sorted(invoices, key=lambda i: i.id)
    ]
    assert {row["total"] for row in rows(env, made["invoice"].id)} == {"10.50", "0.000001", "99999999.99"}


def test_a_run_dying_mid_export_leaves_one_complete_file(
    billing: Billing, env: Scoped, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(env, 7)
    task = env.tasks.export(entity_type="events", start_time=MARCH, end_time=APRIL)
    real = task_service.build

    def dies_on_the_third_part(model: Any, fields: dict[str, Any], check: Any = None) -> Any:
        if model is ExportPart and fields["sequence"] == 2:
            raise RuntimeError("the process died")
        return real(model, fields, check)

    monkeypatch.setattr(task_service, "build", dies_on_the_third_part)
    with pytest.raises(RuntimeError):
        billing.run_due()
    assert env.tasks.get(task.id).processed_records == 2 * PAGE
    monkeypatch.setattr(task_service, "build", real)
    billing.run_due()
    assert [row["event_id"] for row in rows(env, task.id)] == [f"ev-{n:02d}" for n in range(7)]
    assert env.tasks.get(task.id).parts == 4


def test_a_scheduled_export_runs_on_every_store(billing: Billing, env: Scoped, clock: TestClock) -> None:
    schedule = env.scheduled_tasks.create(entity_type="invoice", interval="30MIN")
    inv = stored(env, "invoices", created_at=clock.now() + timedelta(minutes=5))
    clock.advance(timedelta(minutes=30))
    billing.run_due()
    (task,) = env.tasks.list(scheduled_task_id=schedule.id).items
    assert task.task_status is TaskStatus.COMPLETED
    assert [row["id"] for row in rows(env, task.id)] == [inv.id]
    assert env.scheduled_tasks.get(schedule.id).id == schedule.id


# -- SIGKILL ------------------------------------------------------------------------------------

EXPORTER = """
import sys, time
from billingkit import Billing, Settings
from billingkit.services import tasks
real = tasks.csv_text
def slow(rows, header=None):
    print("page", flush=True)
    time.sleep(0.1)
    return real(rows, header)
tasks.csv_text = slow
billing = Billing.from_url(sys.argv[1], settings=Settings(export_page_size=1))
print("ready", flush=True)
billing.run_due()
print("finished", flush=True)
"""


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'exports.db'}"
    from tests.conftest import make_storage

    make_storage("postgres", request, tmp_path).close()  # emptied
    return str(request.getfixturevalue("postgres_url"))


def test_an_exporter_killed_mid_export_leaves_the_next_run_one_complete_file(database_url: str) -> None:
    billing = Billing.from_url(database_url)
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    ingest(scoped, 20)
    task = scoped.tasks.export(entity_type="events", start_time=MARCH, end_time=APRIL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", EXPORTER, database_url], stdout=subprocess.PIPE, env=env, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    ends = time.monotonic() + 30
    pages = 0
    while pages < 5:  # a few pages committed, the next one in flight
        assert time.monotonic() < ends and child.poll() is None, "the exporter did not start"
        pages += child.stdout.readline().strip() == "page"
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    halfway = scoped.tasks.get(task.id)
    assert halfway.task_status is TaskStatus.PROCESSING
    assert 3 <= halfway.processed_records < 20  # it died mid-way

    survivor = Billing.from_url(database_url, settings=Settings(export_page_size=7))
    survivor.run_due()
    done = scoped.tasks.get(task.id)
    assert (done.task_status, done.processed_records, done.total_records) == (TaskStatus.COMPLETED, 20, 20)
    assert [row["event_id"] for row in rows(scoped, task.id)] == [f"ev-{n:02d}" for n in range(20)]
    survivor.close()
    billing.close()
