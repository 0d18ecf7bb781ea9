"""Export tasks and the scheduled tasks that make them (reference: ``/tasks``, ``/tasks/scheduled``).

A :class:`Task` exports the records of one ``entity_type`` (usage events, invoices or credit
notes) in a time window to CSV. It is ``PENDING`` when made, ``PROCESSING`` while the due-work
runner writes it (one page of records per committed step: the page's part of the file, the
cursor and the counts move together, so a crash loses at most the page in flight and the rerun
continues after the last committed one), then ``COMPLETED`` or ``FAILED`` (``error_summary``).
The file is stored as numbered :class:`ExportPart` records (the first holds the header row).

A :class:`ScheduledTask` makes one export task per ``interval`` for the window since its last
run: windows follow each other exactly (each starts where the previous ended), so no record is
exported twice or missed by the schedule.

Pure: the CSV columns and formatting of each entity type, the intervals, the windows.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from billingkit.domain.credit_notes import CreditNote
from billingkit.domain.invoices import Invoice
from billingkit.domain.resources import EnvironmentResource, iso
from billingkit.domain.usage import UsageEvent
from billingkit.domain.validation import UtcDatetime

__all__ = [
    "COLUMNS",
    "INTERVALS",
    "ExportEntityType",
    "ExportPart",
    "FileType",
    "ScheduledTask",
    "ScheduledTaskInterval",
    "Task",
    "TaskStatus",
    "TaskType",
    "csv_text",
    "event_row",
    "export_file_name",
    "record_row",
    "schedule_window",
]


class TaskType(StrEnum):
    IMPORT = "IMPORT"
    EXPORT = "EXPORT"


class TaskStatus(StrEnum):
    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class FileType(StrEnum):
    CSV = "CSV"
    JSON = "JSON"


class ExportEntityType(StrEnum):
    """What an export holds: the reference's ``types.ScheduledTaskEntityType`` values billingkit
    exports (``events``, ``invoice``) and ``credit_notes``, which the reference lacks."""

    EVENTS = "events"
    INVOICE = "invoice"
    CREDIT_NOTES = "credit_notes"


class ScheduledTaskInterval(StrEnum):
    EVERY_15_MINUTES = "15MIN"
    EVERY_30_MINUTES = "30MIN"
    CUSTOM = "custom"
    HOURLY = "hourly"
    DAILY = "daily"


#: How long each interval is. ``custom`` is ten minutes, as the reference describes it.
INTERVALS: dict[ScheduledTaskInterval, timedelta] = {
    ScheduledTaskInterval.EVERY_15_MINUTES: timedelta(minutes=15),
    ScheduledTaskInterval.EVERY_30_MINUTES: timedelta(minutes=30),
    ScheduledTaskInterval.CUSTOM: timedelta(minutes=10),
    ScheduledTaskInterval.HOURLY: timedelta(hours=1),
    ScheduledTaskInterval.DAILY: timedelta(days=1),
}

#: Fields a task keeps for billingkit only; never on the wire.
TASK_INTERNAL = {"run_at", "cursor", "parts", "version"}


class Task(EnvironmentResource):
    """An export of ``entity_type`` records to a CSV file; the window and filters are in
    ``metadata`` (``start_time``, ``end_time``). See the module doc for the statuses.

    Internal: ``run_at`` (when the runner next writes a page: set while PENDING or PROCESSING),
    ``cursor`` (where the next page starts: the last record written) and ``parts`` (how many parts
    of the file are stored)."""

    task_type: TaskType = TaskType.EXPORT
    entity_type: ExportEntityType
    scheduled_task_id: str | None = None
    workflow_id: str | None = None
    file_name: str | None = None
    file_type: FileType = FileType.CSV
    task_status: TaskStatus = TaskStatus.PENDING
    total_records: int | None = None
    processed_records: int = 0
    successful_records: int = 0
    failed_records: int = 0
    error_summary: str | None = None
    metadata: dict[str, Any] = {}
    started_at: UtcDatetime | None = None
    completed_at: UtcDatetime | None = None
    failed_at: UtcDatetime | None = None
    run_at: UtcDatetime | None = None
    cursor: str | None = None
    parts: int = 0
    version: int = 1

    @property
    def start_time(self) -> datetime:
        return datetime.fromisoformat(str(self.metadata["start_time"]))

    @property
    def end_time(self) -> datetime:
        return datetime.fromisoformat(str(self.metadata["end_time"]))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude=TASK_INTERNAL)

    def __repr__(self) -> str:
        return (
            f"<Task {self.id} {self.task_type.value} {self.entity_type.value} {self.task_status.value} "
            f"{self.processed_records}/{self.total_records}>"
        )


class ExportPart(EnvironmentResource):
    """Part ``sequence`` (from 0) of task ``task_id``'s file: ``content`` is CSV text (part 0
    starts with the header row) holding ``record_count`` records."""

    task_id: str
    sequence: int
    content: str
    record_count: int


class ScheduledTask(EnvironmentResource):
    """Exports ``entity_type`` every ``interval`` while ``enabled``.

    Internal: ``window_start`` (where the next scheduled export's window starts: the end of the
    previous one) and ``next_run_at`` (when the worker makes it: ``window_start`` + interval;
    ``None`` while disabled or deleted)."""

    connection_id: str | None = None
    entity_type: ExportEntityType
    interval: ScheduledTaskInterval
    enabled: bool = True
    job_config: dict[str, Any] = {}
    window_start: UtcDatetime
    next_run_at: UtcDatetime | None = None
    version: int = 1

    @property
    def every(self) -> timedelta:
        return INTERVALS[self.interval]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude={"window_start", "next_run_at", "version"})

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"<ScheduledTask {self.id} {self.entity_type.value} {self.interval.value} {state}>"


def schedule_window(
    window_start: datetime, every: timedelta, now: datetime
) -> tuple[datetime, datetime] | None:
    """The window a scheduled run at ``now`` exports: from ``window_start`` to the last interval
    boundary at or before ``now``, or ``None`` when not one whole interval has passed. A late run
    covers every interval it missed in one window. Example: start 10:00, hourly, now 12:30 →
    (10:00, 12:00)."""
    whole = (now - window_start) // every
    if whole < 1:
        return None
    return window_start, window_start + every * whole


def export_file_name(entity_type: ExportEntityType, task_id: str, start: datetime, end: datetime) -> str:
    """``invoice-20260301T000000Z-20260401T000000Z-task_….csv``: what, when, and which task."""
    stamp = "%Y%m%dT%H%M%SZ"
    return f"{entity_type.value}-{start.strftime(stamp)}-{end.strftime(stamp)}-{task_id}.csv"


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_row(event: UsageEvent) -> list[str]:
    """One usage event's row (``properties`` as compact JSON with sorted keys)."""
    return [
        event.event_id,
        event.event_name,
        event.external_customer_id,
        event.customer_id or "",
        iso(event.timestamp) or "",
        event.source or "",
        _json(dict(event.properties)),
    ]


_INVOICE_COLUMNS = (
    "id",
    "invoice_number",
    "customer_id",
    "subscription_id",
    "invoice_type",
    "invoice_status",
    "payment_status",
    "billing_reason",
    "currency",
    "subtotal",
    "total_discount",
    "total_tax",
    "total",
    "amount_due",
    "amount_paid",
    "amount_remaining",
    "period_start",
    "period_end",
    "due_date",
    "finalized_at",
    "created_at",
)
_CREDIT_NOTE_COLUMNS = (
    "id",
    "credit_note_number",
    "invoice_id",
    "customer_id",
    "subscription_id",
    "credit_note_type",
    "credit_note_status",
    "reason",
    "currency",
    "total_amount",
    "finalized_at",
    "voided_at",
    "created_at",
)

#: The header row of each entity type's file.
COLUMNS: dict[ExportEntityType, tuple[str, ...]] = {
    ExportEntityType.EVENTS: (
        "event_id",
        "event_name",
        "external_customer_id",
        "customer_id",
        "timestamp",
        "source",
        "properties",
    ),
    ExportEntityType.INVOICE: _INVOICE_COLUMNS,
    ExportEntityType.CREDIT_NOTES: _CREDIT_NOTE_COLUMNS,
}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return iso(value) or ""
    if isinstance(value, StrEnum):
        return value.value
    return str(value)  # Decimal: its exact text, never a float


def record_row(entity_type: ExportEntityType, record: Invoice | CreditNote) -> list[str]:
    """One invoice's or credit note's row: money as exact decimal text, instants ISO 8601 UTC."""
    return [_cell(getattr(record, column)) for column in COLUMNS[entity_type]]


def csv_text(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    """``rows`` (after ``header`` when given) as CSV text, ``\\r\\n`` line ends (RFC 4180)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    if header is not None:
        writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()
