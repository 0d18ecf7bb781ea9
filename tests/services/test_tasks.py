"""Export tasks and scheduled tasks, on the memory store: the file's content, progress per page,
a crash in the middle of an export, failures, what a caller may set, the scheduled windows moved
by the test clock, and the two named schedules.

Storage (the same exports on SQLite and PostgreSQL) is in tests/contract/test_exports.py."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, NotFound, Scoped, Settings, TestClock, ValidationError
from billingkit.domain.tasks import ExportPart, TaskStatus
from billingkit.services import tasks as task_service
from billingkit.services.access import BootstrapResult
from billingkit.storage.memory import MemoryStorage
from tests.services.conftest import stored
from tests.stories import weekly_subscription

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
MARCH = datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, tzinfo=UTC)


@pytest.fixture
def storage() -> Iterator[MemoryStorage]:
    """Memory only: the logic; storage is covered by tests/contract/test_exports.py."""
    store = MemoryStorage()
    yield store
    store.close()


@pytest.fixture
def billing(storage: MemoryStorage, clock: TestClock) -> Billing:
    return Billing(storage, clock, settings=Settings(export_page_size=2, renewal_notice=None))


@pytest.fixture
def env(billing: Billing, setup: BootstrapResult) -> Scoped:
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


def rows(scoped: Scoped, task_id: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(scoped.tasks.download(task_id).decode())))


def ingest(scoped: Scoped, *stamps: datetime) -> list[str]:
    ids = [f"ev-{i}" for i in range(len(stamps))]
    scoped.events.ingest_bulk(
        [
            {
                "event_id": event_id,
                "event_name": "api_call",
                "external_customer_id": "c-1" if i % 2 == 0 else "c-2",
                "timestamp": stamp,
                "properties": {"path": "/v1", "bytes": i * 10},
            }
            for i, (event_id, stamp) in enumerate(zip(ids, stamps, strict=True))
        ]
    )
    return ids


# -- exports ------------------------------------------------------------------------------------


def test_an_event_export_writes_every_event_of_the_window_once_in_time_order(
    billing: Billing, env: Scoped
) -> None:
    at = [MARCH + timedelta(days=d) for d in (3, 1, 2, 40, 5)]  # the fourth is in April
    ingest(env, *at)
    task = env.tasks.export(entity_type="events", start_time=MARCH, end_time=APRIL)
    assert task.task_status is TaskStatus.PENDING
    assert task.workflow_id == task.id
    assert task.metadata == {"start_time": "2026-03-01T00:00:00Z", "end_time": "2026-04-01T00:00:00Z"}

    billing.run_due()

    done = env.tasks.get(task.id)
    assert done.task_status is TaskStatus.COMPLETED
    assert (done.total_records, done.processed_records, done.successful_records) == (4, 4, 4)
    assert done.failed_records == 0
    assert done.parts == 2  # two pages of two
    assert done.started_at == NOW and done.completed_at == NOW
    assert done.file_name == f"events-20260301T000000Z-20260401T000000Z-{task.id}.csv"
    text = env.tasks.download(task.id).decode()
    assert (
        text.splitlines()[0]
        == "event_id,event_name,external_customer_id,customer_id,timestamp,source,properties"
    )
    assert text.endswith("\r\n")
    assert rows(env, task.id) == [
        {
            "event_id": f"ev-{i}",
            "event_name": "api_call",
            "external_customer_id": "c-1" if i % 2 == 0 else "c-2",
            "customer_id": "",
            "timestamp": f"2026-03-0{day}T00:00:00Z",
            "source": "",
            "properties": f'{{"bytes":{i * 10},"path":"/v1"}}',
        }
        for i, day in ((1, 2), (2, 3), (0, 4), (4, 6))
    ]


def test_filters_narrow_an_export_and_are_kept_in_its_metadata(billing: Billing, env: Scoped) -> None:
    ingest(env, MARCH, MARCH + timedelta(hours=1), MARCH + timedelta(hours=2))
    task = env.tasks.export(
        entity_type="events", start_time=MARCH, end_time=APRIL, external_customer_id="c-1"
    )
    assert task.metadata["external_customer_id"] == "c-1"
    billing.run_due()
    assert [row["event_id"] for row in rows(env, task.id)] == ["ev-0", "ev-2"]


def test_an_invoice_export_writes_exact_money_and_utc_instants(billing: Billing, env: Scoped) -> None:
    inside = [
        stored(
            env,
            "invoices",
            created_at=MARCH + timedelta(days=d),
            total=Decimal(total),
            subtotal=Decimal(total),
        )
        for d, total in ((1, "10.50"), (2, "0.000001"), (3, "1234567890.12"))
    ]
    stored(env, "invoices", created_at=APRIL)  # end of the window: not in it
    task = env.tasks.export(entity_type="invoice", start_time=MARCH, end_time=APRIL)
    billing.run_due()

    got = rows(env, task.id)
    assert [row["id"] for row in got] == sorted(invoice.id for invoice in inside)
    by_id = {row["id"]: row for row in got}
    for invoice in inside:
        row = by_id[invoice.id]
        assert row["total"] == str(invoice.total)  # "10.50", "0.000001": the stored digits
        assert Decimal(row["amount_due"]) == invoice.amount_due
        assert row["currency"] == invoice.currency
        assert row["invoice_status"] == invoice.invoice_status.value
        assert row["created_at"] == invoice.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert {row["total"] for row in got} == {"10.50", "0.000001", "1234567890.12"}
    assert env.tasks.get(task.id).total_records == 3


def test_a_credit_note_export_names_its_notes(billing: Billing, env: Scoped) -> None:
    notes = [stored(env, "credit_notes", created_at=MARCH + timedelta(days=d)) for d in (1, 2)]
    task = env.tasks.export(entity_type="credit_notes", start_time=MARCH, end_time=APRIL)
    billing.run_due()
    got = rows(env, task.id)
    assert [row["id"] for row in got] == sorted(note.id for note in notes)
    assert [row["total_amount"] for row in got] == [
        str(n.total_amount) for n in sorted(notes, key=lambda n: n.id)
    ]


def test_an_empty_window_gives_a_file_with_the_header_only(billing: Billing, env: Scoped) -> None:
    task = env.tasks.export(entity_type="invoice", start_time=MARCH, end_time=APRIL)
    billing.run_due()
    done = env.tasks.get(task.id)
    assert (done.task_status, done.total_records, done.processed_records) == (TaskStatus.COMPLETED, 0, 0)
    assert env.tasks.download(task.id).decode().count("\r\n") == 1


def test_progress_is_committed_page_by_page(billing: Billing, env: Scoped, clock: TestClock) -> None:
    ingest(env, *(MARCH + timedelta(hours=h) for h in range(5)))
    task = env.tasks.export(entity_type="events", start_time=MARCH, end_time=APRIL)
    seen: list[tuple[str, int, int | None]] = []
    real = task_service._write_page

    def spy(uow: Any, ctx: Any, item: Any) -> None:
        seen.append((item.task_status.value, item.processed_records, item.total_records))
        real(uow, ctx, item)

    task_service._write_page = spy  # type: ignore[assignment]
    try:
        billing.run_due()
    finally:
        task_service._write_page = real  # type: ignore[assignment]
    assert seen == [("PENDING", 0, None), ("PROCESSING", 2, 5), ("PROCESSING", 4, 5)]
    assert env.tasks.get(task.id).processed_records == 5


def test_a_crash_mid_export_loses_the_page_in_flight_only_and_the_rerun_completes_the_file(
    billing: Billing, env: Scoped, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(env, *(MARCH + timedelta(hours=h) for h in range(5)))
    task = env.tasks.export(entity_type="events", start_time=MARCH, end_time=APRIL)
    real = task_service.build
    made: list[int] = []

    def dies_on_the_second_part(model: Any, fields: dict[str, Any], check: Any = None) -> Any:
        if model is ExportPart:
            made.append(fields["sequence"])
            if fields["sequence"] == 1:
                raise RuntimeError("the process died")
        return real(model, fields, check)

    monkeypatch.setattr(task_service, "build", dies_on_the_second_part)
    with pytest.raises(RuntimeError):
        billing.run_due()
    halfway = env.tasks.get(task.id)
    assert (halfway.task_status, halfway.processed_records, halfway.parts) == (TaskStatus.PROCESSING, 2, 1)
    with pytest.raises(InvalidOperation):
        env.tasks.download(task.id)

    monkeypatch.setattr(task_service, "build", real)
    billing.run_due()
    done = env.tasks.get(task.id)
    assert (done.task_status, done.processed_records, done.parts) == (TaskStatus.COMPLETED, 5, 3)
    assert [row["event_id"] for row in rows(env, task.id)] == [f"ev-{i}" for i in range(5)]


def test_an_export_whose_records_cannot_be_read_fails_with_its_reason(billing: Billing, env: Scoped) -> None:
    ingest(env, MARCH)
    broken = stored(
        env,
        "tasks",
        entity_type="events",
        metadata={"start_time": "2026-03-01T00:00:00Z", "end_time": "2026-04-01T00:00:00Z"},
        cursor="not a key",
        run_at=MARCH,
        scheduled_task_id=None,
    )
    billing.run_due()
    failed = env.tasks.get(broken.id)
    assert failed.task_status is TaskStatus.FAILED
    assert failed.error_summary == "validation_error: cursor is not a key returned by an event query"
    assert failed.failed_at == NOW and failed.run_at is None


def test_an_export_request_is_checked(env: Scoped) -> None:
    with pytest.raises(ValidationError, match="end_time must be after start_time"):
        env.tasks.export(entity_type="events", start_time=APRIL, end_time=MARCH)
    with pytest.raises(ValidationError, match="customer_id does not filter an export of events"):
        env.tasks.export(entity_type="events", start_time=MARCH, end_time=APRIL, customer_id="cust_1")
    with pytest.raises(ValidationError) as caught:
        env.tasks.export(entity_type="prices", start_time=MARCH, end_time=APRIL)
    assert caught.value.field == "entity_type"
    assert env.tasks.list().total == 0


def test_a_caller_cancels_a_pending_task_and_retries_a_failed_one(billing: Billing, env: Scoped) -> None:
    ingest(env, MARCH)
    task = env.tasks.export(entity_type="events", start_time=MARCH, end_time=APRIL)
    cancelled = env.tasks.set_status(task.id, task_status="FAILED")
    assert (cancelled.task_status, cancelled.error_summary) == (TaskStatus.FAILED, "cancelled by the caller")
    billing.run_due()
    assert env.tasks.get(task.id).processed_records == 0  # not written

    assert env.tasks.set_status(task.id, task_status="PENDING").task_status is TaskStatus.PENDING
    billing.run_due()
    assert env.tasks.get(task.id).task_status is TaskStatus.COMPLETED
    assert env.tasks.set_status(task.id, task_status="COMPLETED").version == env.tasks.get(task.id).version
    for refused in ("PENDING", "FAILED", "PROCESSING"):
        with pytest.raises(InvalidOperation, match="a COMPLETED task cannot be set to"):
            env.tasks.set_status(task.id, task_status=refused)


def test_download_needs_a_completed_task_and_result_finds_it_by_workflow_id(env: Scoped) -> None:
    task = env.tasks.export(entity_type="invoice", start_time=MARCH, end_time=APRIL)
    with pytest.raises(InvalidOperation, match="it is PENDING"):
        env.tasks.download(task.id)
    with pytest.raises(NotFound):
        env.tasks.download("task_missing")
    assert env.tasks.result(task.id).id == task.id
    with pytest.raises(NotFound, match="no task has workflow id wf-1"):
        env.tasks.result("wf-1")


def test_tasks_list_by_their_fields_and_scope(billing: Billing, env: Scoped, setup: BootstrapResult) -> None:
    events = env.tasks.export(entity_type="events", start_time=MARCH, end_time=APRIL)
    invoices = env.tasks.export(entity_type="invoice", start_time=MARCH, end_time=APRIL)
    other = billing.scope(setup.tenant.id, setup.environments[1][0].id)
    other.tasks.export(entity_type="invoice", start_time=MARCH, end_time=APRIL)
    assert [t.id for t in env.tasks.list(entity_type="invoice").items] == [invoices.id]
    assert {t.id for t in env.tasks.list(task_status="PENDING").items} == {events.id, invoices.id}
    with pytest.raises(NotFound):
        other.tasks.get(events.id)


# -- scheduled tasks ----------------------------------------------------------------------------


def test_scheduled_exports_cover_consecutive_windows_with_no_gap_and_no_overlap(
    billing: Billing, env: Scoped, clock: TestClock
) -> None:
    schedule = env.scheduled_tasks.create(entity_type="events", interval="hourly", connection_id="conn-1")
    # Events on each boundary and between them.
    stamps = [NOW + timedelta(minutes=m) for m in (0, 59, 60, 61, 120, 179, 180, 200)]
    env.events.ingest_bulk(
        [
            {"event_id": f"e{m}", "event_name": "x", "external_customer_id": "c", "timestamp": s}
            for m, s in zip((0, 59, 60, 61, 120, 179, 180, 200), stamps, strict=True)
        ]
    )
    clock.advance(timedelta(minutes=30))
    billing.run_due()
    assert env.tasks.list().total == 0  # not one whole hour yet

    clock.advance(timedelta(minutes=30))  # 10:30: the first window ends
    billing.run_due()
    clock.advance(timedelta(hours=2, minutes=15))  # 12:45: a late run covers both hours missed
    billing.run_due()

    made = sorted(env.tasks.list(scheduled_task_id=schedule.id).items, key=lambda t: t.metadata["start_time"])
    assert [(t.metadata["start_time"], t.metadata["end_time"]) for t in made] == [
        ("2026-05-01T09:30:00Z", "2026-05-01T10:30:00Z"),
        ("2026-05-01T10:30:00Z", "2026-05-01T12:30:00Z"),
    ]
    assert all(t.task_status is TaskStatus.COMPLETED for t in made)  # written in the same run
    exported = [row["event_id"] for t in made for row in rows(env, t.id)]
    assert exported == ["e0", "e59", "e60", "e61", "e120", "e179"]  # each once; e180 is next
    assert env.scheduled_tasks.get(schedule.id).enabled


def test_a_disabled_schedule_makes_nothing_and_catches_up_when_enabled(
    billing: Billing, env: Scoped, clock: TestClock
) -> None:
    schedule = env.scheduled_tasks.create(entity_type="invoice", interval="15MIN")
    assert env.scheduled_tasks.update(schedule.id, enabled=False).enabled is False
    clock.advance(timedelta(minutes=40))
    billing.run_due()
    assert env.tasks.list().total == 0
    env.scheduled_tasks.update(schedule.id, enabled=True)
    billing.run_due()
    (task,) = env.tasks.list().items
    assert (task.metadata["start_time"], task.metadata["end_time"]) == (
        "2026-05-01T09:30:00Z",
        "2026-05-01T10:00:00Z",
    )


def test_custom_means_ten_minutes_and_a_deleted_schedule_stops(
    billing: Billing, env: Scoped, clock: TestClock
) -> None:
    schedule = env.scheduled_tasks.create(entity_type="credit_notes", interval="custom")
    clock.advance(timedelta(minutes=10))
    billing.run_due()
    assert env.tasks.list().total == 1
    env.scheduled_tasks.delete(schedule.id)
    with pytest.raises(NotFound):
        env.scheduled_tasks.get(schedule.id)
    clock.advance(timedelta(hours=1))
    billing.run_due()
    assert env.tasks.list().total == 1


def test_a_forced_run_exports_a_window_given_or_the_one_since_the_last_run(
    billing: Billing, env: Scoped, clock: TestClock
) -> None:
    schedule = env.scheduled_tasks.create(entity_type="events", interval="daily", job_config={"bucket": "b"})
    custom = env.scheduled_tasks.run(schedule.id, start_time=MARCH, end_time=APRIL)
    assert (custom.mode, custom.start_time, custom.end_time) == ("custom", MARCH, APRIL)
    assert custom.task.scheduled_task_id == schedule.id

    with pytest.raises(InvalidOperation, match="nothing to export since its last run"):
        env.scheduled_tasks.run(schedule.id)
    clock.advance(timedelta(hours=5))
    automatic = env.scheduled_tasks.run(schedule.id)
    assert (automatic.mode, automatic.start_time, automatic.end_time) == (
        "automatic",
        NOW,
        NOW + timedelta(hours=5),
    )
    clock.advance(timedelta(days=1))  # the schedule goes on from the forced run's end
    billing.run_due()
    latest = env.tasks.list(limit=1).items[0]
    assert latest.metadata["start_time"] == "2026-05-01T14:30:00Z"
    assert latest.metadata["end_time"] == "2026-05-02T14:30:00Z"
    with pytest.raises(ValidationError, match="give both start_time and end_time"):
        env.scheduled_tasks.run(schedule.id, start_time=MARCH)


def test_a_scheduled_task_request_is_checked(env: Scoped) -> None:
    with pytest.raises(ValidationError) as caught:
        env.scheduled_tasks.create(entity_type="events", interval="weekly")
    assert caught.value.field == "interval"
    with pytest.raises(ValidationError) as caught:
        env.scheduled_tasks.create(entity_type="events", interval="daily", job_config={"bukket": "b"})
    assert caught.value.field == "job_config.bukket"
    made = env.scheduled_tasks.create(
        entity_type="events", interval="daily", job_config={"compression": "gzip"}
    )
    assert made.job_config == {"compression": "gzip"}
    assert env.scheduled_tasks.list(interval="daily").total == 1
    assert env.scheduled_tasks.list(enabled=False).total == 0


# -- the named schedules ------------------------------------------------------------------------


def test_draft_finalization_finalizes_this_environments_due_drafts_only(clock: TestClock) -> None:
    billing = Billing(
        MemoryStorage(), clock, settings=Settings(invoice_finalization_delay=timedelta(hours=1))
    )
    setup, sub = weekly_subscription(billing)
    other_setup, other_sub = weekly_subscription(billing, "w-2")
    clock.advance(timedelta(days=7))
    for s in (setup, other_setup):
        billing.scope(s.tenant.id, s.environments[0][0].id).scheduled_tasks.run_billing_period_update()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    other = billing.scope(other_setup.tenant.id, other_setup.environments[0][0].id)

    def renewal(where: Scoped, subscription_id: str) -> Any:
        (invoice,) = [
            i for i in where.invoices.list().items if i.billing_reason.value == "SUBSCRIPTION_CYCLE"
        ]
        assert invoice.subscription_id == subscription_id
        return invoice

    assert renewal(scoped, sub.id).invoice_status.value == "DRAFT"
    report = scoped.scheduled_tasks.run_draft_finalization()
    assert renewal(scoped, sub.id).invoice_status.value == "DRAFT"  # its delay has not passed
    assert report.notification_count == 0

    clock.advance(timedelta(hours=1))
    report = scoped.scheduled_tasks.run_draft_finalization()
    assert report.notification_count == 1
    assert renewal(scoped, sub.id).invoice_status.value == "FINALIZED"
    assert renewal(other, other_sub.id).invoice_status.value == "DRAFT"  # another environment's


def test_billing_period_update_bills_this_environments_due_periods_only(clock: TestClock) -> None:
    billing = Billing(MemoryStorage(), clock)
    setup, sub = weekly_subscription(billing)
    other_setup, other_sub = weekly_subscription(billing, "w-2")
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    clock.advance(timedelta(days=7))
    report = scoped.scheduled_tasks.run_billing_period_update()
    assert (report.subscription_count, report.invoice_count, report.failures) == (1, 1, [])
    assert scoped.subscriptions.get(sub.id).current_period_start == sub.current_period_end
    other = billing.scope(other_setup.tenant.id, other_setup.environments[0][0].id)
    assert other.subscriptions.get(other_sub.id).current_period_start == other_sub.current_period_start
    assert scoped.scheduled_tasks.run_billing_period_update().invoice_count == 0  # nothing due twice
