"""Export tasks (``/tasks``): make an export, read and list tasks, cancel or retry one, read its
file; and the due-work handler that writes the files.

Rules (docs/api.md "Tasks and exports"):

- An export names ``entity_type`` (``events``: usage events with a ``timestamp`` in the window;
  ``invoice`` and ``credit_notes``: records created in the window) and the window
  ``[start_time, end_time)``; optional filters: ``external_customer_id`` and ``event_name`` for
  events, ``customer_id`` for invoices and credit notes. They are kept in the task's ``metadata``.
- The worker writes the file one page (``Settings.export_page_size`` records) per committed step:
  the page's part of the file, the cursor and the counts move together, so a crash (even
  ``kill -9``) loses only the page in flight and the next run continues after the last committed
  page: one complete file, no row twice. Rows come in a stable order (events by timestamp then id,
  invoices and credit notes by id).
- A caller may cancel a task that has not ended (``FAILED``, ``error_summary`` saying so) and
  retry a ``FAILED`` one (``PENDING`` again: it continues where it stopped); nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, ClassVar, cast

from pydantic import model_validator

from billingkit.domain.access import Action
from billingkit.domain.event_queries import EventFilter, format_key, parse_key
from billingkit.domain.queries import Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import Record, Status, iso
from billingkit.domain.tasks import (
    COLUMNS,
    ExportEntityType,
    ExportPart,
    Task,
    TaskStatus,
    TaskType,
    csv_text,
    event_row,
    export_file_name,
    record_row,
)
from billingkit.domain.validation import Identifier, InputModel, UtcDatetime
from billingkit.errors import BillingError, InvalidOperation, NotFound, ServiceUnavailable, VersionConflict
from billingkit.ports import UnitOfWork
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import Context, DueRun
from billingkit.services.records import build, get_live, new_fields
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "FILE_PARTS_PAGE",
    "TaskExportCreate",
    "TaskSearch",
    "TaskStatusUpdate",
    "create_export_task",
    "get_task",
    "get_task_file_parts",
    "get_task_result",
    "list_tasks",
    "new_export_task",
    "update_task_status",
    "write_due_exports",
]

ENTITY = "task"
LABEL = "task"
#: Parts of a file read per unit of work when a file is downloaded.
FILE_PARTS_PAGE = 50
#: What a task cancelled by its caller says.
CANCELLED = "cancelled by the caller"

_EVENT_FILTERS = ("external_customer_id", "event_name")
_RECORD_FILTERS = ("customer_id",)


class TaskExportCreate(InputModel):
    """An export of ``entity_type`` records in ``[start_time, end_time)``, optionally narrowed
    (``external_customer_id``, ``event_name``: events only; ``customer_id``: invoices and credit
    notes only)."""

    entity_type: ExportEntityType
    start_time: UtcDatetime
    end_time: UtcDatetime
    external_customer_id: Identifier | None = None
    event_name: Identifier | None = None
    customer_id: Identifier | None = None

    @model_validator(mode="after")
    def _window_and_filters(self) -> TaskExportCreate:
        if self.end_time <= self.start_time:
            raise ValueError("end_time must be after start_time")
        events = self.entity_type is ExportEntityType.EVENTS
        wrong = _RECORD_FILTERS if events else _EVENT_FILTERS
        for name in wrong:
            if getattr(self, name) is not None:
                raise ValueError(f"{name} does not filter an export of {self.entity_type.value}")
        return self


class TaskStatusUpdate(InputModel):
    """``FAILED`` cancels a task that has not ended; ``PENDING`` retries a ``FAILED`` one."""

    task_status: TaskStatus


class TaskSearch(SearchRequest):
    """``GET /tasks``'s filters; ``start_time``/``end_time`` bound when the task was made."""

    kind: ClassVar[str] = "tasks"

    task_type: Annotated[TaskType | None, Searches("task_type", Op.EQ)] = None
    entity_type: Annotated[ExportEntityType | None, Searches("entity_type", Op.EQ)] = None
    task_status: Annotated[TaskStatus | None, Searches("task_status", Op.EQ)] = None
    scheduled_task_id: Annotated[str | None, Searches("scheduled_task_id", Op.EQ)] = None
    created_by: Annotated[str | None, Searches("created_by", Op.EQ)] = None


def new_export_task(
    ctx: Context,
    entity_type: ExportEntityType,
    start: datetime,
    end: datetime,
    *,
    filters: dict[str, str] | None = None,
    scheduled_task_id: str | None = None,
) -> Task:
    """A ``PENDING`` export task of ``entity_type`` records in ``[start, end)``, due at once."""
    fields = new_fields(ctx, "task")
    return build(
        Task,
        {
            **fields,
            "task_type": TaskType.EXPORT,
            "entity_type": entity_type,
            "scheduled_task_id": scheduled_task_id,
            "workflow_id": fields["id"],
            "file_name": export_file_name(entity_type, fields["id"], start, end),
            "metadata": {"start_time": iso(start), "end_time": iso(end), **(filters or {})},
            "run_at": ctx.now,
        },
    )


def create_export_task(uow: UnitOfWork, ctx: Context, *, data: TaskExportCreate) -> Task:
    """Make a ``PENDING`` export (see the module doc); the next due-work run writes its file."""
    ctx.require(ENTITY, Action.WRITE)
    names = _EVENT_FILTERS if data.entity_type is ExportEntityType.EVENTS else _RECORD_FILTERS
    filters = {name: getattr(data, name) for name in names if getattr(data, name) is not None}
    task = new_export_task(ctx, data.entity_type, data.start_time, data.end_time, filters=filters)
    return uow.tasks.add(task)


def get_task(uow: UnitOfWork, ctx: Context, *, task_id: str) -> Task:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.tasks, LABEL, task_id)


def list_tasks(uow: UnitOfWork, ctx: Context, *, search: TaskSearch) -> Page[Task]:
    ctx.require(ENTITY, Action.READ)
    return uow.tasks.list(search.to_query())


def get_task_result(uow: UnitOfWork, ctx: Context, *, workflow_id: str) -> Task:
    """The task of ``workflow_id`` (billingkit runs no workflow engine: a task's workflow id is
    its own id). ``NotFound`` when no task has it."""
    ctx.require(ENTITY, Action.READ)
    found = uow.tasks.find_one(workflow_id=workflow_id)
    if found is None:
        raise NotFound(f"no task has workflow id {workflow_id}")
    return found


def update_task_status(uow: UnitOfWork, ctx: Context, *, task_id: str, data: TaskStatusUpdate) -> Task:
    """Cancel (``FAILED``) a task that has not ended, or retry (``PENDING``) a failed one; asking
    for the status a task has changes nothing. Anything else is ``InvalidOperation``."""
    ctx.require(ENTITY, Action.WRITE)
    task = get_live(uow.tasks, LABEL, task_id)
    wanted, current = data.task_status, task.task_status
    if wanted is current:
        return task
    changes: dict[str, Any]
    if wanted is TaskStatus.FAILED and current in (TaskStatus.PENDING, TaskStatus.PROCESSING):
        changes = {"error_summary": CANCELLED, "failed_at": ctx.now, "run_at": None}
    elif wanted is TaskStatus.PENDING and current is TaskStatus.FAILED:
        changes = {"error_summary": None, "failed_at": None, "run_at": ctx.now}
    else:
        raise InvalidOperation(
            f"a {current.value} task cannot be set to {wanted.value}: a caller may cancel (FAILED) "
            "a task that has not ended, or retry (PENDING) a FAILED one"
        )
    changed = task.model_copy(update={"task_status": wanted, **changes, **ctx.touch()})
    return uow.tasks.update(changed, expected_version=task.version)


def get_task_file_parts(
    uow: UnitOfWork, ctx: Context, *, task_id: str, after: int = -1, limit: int = FILE_PARTS_PAGE
) -> tuple[Task, list[ExportPart]]:
    """A ``COMPLETED`` task and up to ``limit`` parts of its file after part ``after``, in order.
    ``InvalidOperation`` while the file is not complete."""
    ctx.require(ENTITY, Action.READ)
    task = get_live(uow.tasks, LABEL, task_id)
    if task.task_status is not TaskStatus.COMPLETED:
        raise InvalidOperation(f"task {task_id} has no file to download: it is {task.task_status.value}")
    page = uow.export_parts.list(
        ListQuery(
            filters=(Filter("task_id", Op.EQ, task.id), Filter("sequence", Op.GT, after)),
            sort=(Sort("sequence", descending=False),),
            limit=limit,
        )
    )
    return task, list(page.items)


# -- the worker ---------------------------------------------------------------------------------


def write_due_exports(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of tasks: write the next page of each claimed export and commit it
    with the task's progress (the runner commits). A task not finished stays due at ``run.now``,
    so the run claims it again for its next page; a finished one is ``COMPLETED`` (or ``FAILED``
    when its records cannot be read) and no longer due."""
    result = BatchResult()
    for task in cast("Sequence[Task]", items):
        if task.run_at is None or task.run_at > run.now or task.status is not Status.PUBLISHED:
            continue
        if task.task_status not in (TaskStatus.PENDING, TaskStatus.PROCESSING):
            uow.for_scope(task.tenant_id, task.environment_id).tasks.update(
                task.model_copy(update={"run_at": None}), expected_version=task.version
            )
            continue
        ctx = run.context(task.tenant_id, task.environment_id)
        _write_page(uow.for_scope(task.tenant_id, task.environment_id), ctx, task)
        result.recorded += ctx.recorded
    return result


def _write_page(uow: UnitOfWork, ctx: Context, task: Task) -> None:
    size = ctx.settings.export_page_size
    try:
        rows, cursor, remaining, more = _read_page(uow, task, size)
    except (VersionConflict, ServiceUnavailable):
        raise
    except BillingError as exc:
        failed = {"task_status": TaskStatus.FAILED, "failed_at": ctx.now, "run_at": None}
        failed["error_summary"] = f"{exc.code}: {exc.message}"
        uow.tasks.update(task.model_copy(update={**failed, **ctx.touch()}), expected_version=task.version)
        return
    changes: dict[str, Any] = {"task_status": TaskStatus.PROCESSING, **ctx.touch()}
    if task.started_at is None:
        changes["started_at"] = ctx.now
    if task.total_records is None:
        changes["total_records"] = task.processed_records + remaining
    if rows or task.parts == 0:
        header = COLUMNS[task.entity_type] if task.parts == 0 else None
        part = build(
            ExportPart,
            {
                **new_fields(ctx, "expp"),
                "task_id": task.id,
                "sequence": task.parts,
                "content": csv_text(rows, header),
                "record_count": len(rows),
            },
        )
        uow.export_parts.add(part)
        changes["parts"] = task.parts + 1
    changes["processed_records"] = task.processed_records + len(rows)
    changes["successful_records"] = task.successful_records + len(rows)
    if cursor is not None:
        changes["cursor"] = cursor
    if not more:
        changes.update(task_status=TaskStatus.COMPLETED, completed_at=ctx.now, run_at=None)
    uow.tasks.update(task.model_copy(update=changes), expected_version=task.version)


def _read_page(uow: UnitOfWork, task: Task, size: int) -> tuple[list[list[str]], str | None, int, bool]:
    """The rows of the page after ``task.cursor``, the cursor after them, how many records were
    left to export before this page, and whether more follow."""
    meta = task.metadata
    if task.entity_type is ExportEntityType.EVENTS:
        page = uow.events.query(
            EventFilter(
                start=task.start_time,
                end=task.end_time,
                external_customer_id=meta.get("external_customer_id"),
                event_name=meta.get("event_name"),
                sort="timestamp",
                descending=False,
                after=parse_key(task.cursor, "cursor") if task.cursor else None,
                limit=size,
            )
        )
        events = page.events
        cursor = format_key(events[-1]) if events else None
        # ``total_count`` counts the whole window; the task's first page sets the total from it.
        remaining = page.total_count - task.processed_records
        return [event_row(event) for event in events], cursor, remaining, page.has_more
    filters = [
        Filter("created_at", Op.GTE, task.start_time),
        Filter("created_at", Op.LT, task.end_time),
    ]
    if meta.get("customer_id") is not None:
        filters.append(Filter("customer_id", Op.EQ, meta["customer_id"]))
    if task.cursor is not None:
        filters.append(Filter("id", Op.GT, task.cursor))
    query = ListQuery(filters=tuple(filters), sort=(Sort("id", descending=False),), limit=size)
    repo = uow.invoices if task.entity_type is ExportEntityType.INVOICE else uow.credit_notes
    records = repo.list(query)
    items = list(records.items)
    cursor = items[-1].id if items else None
    rows = [record_row(task.entity_type, item) for item in items]  # type: ignore[arg-type]
    return rows, cursor, records.total, records.has_more
