"""Scheduled tasks (``/tasks/scheduled``): recurring exports. Create, read, list, enable or
disable, delete, run now; and the due-work handler that makes each scheduled export.

Rules (docs/api.md "Tasks and exports"):

- A scheduled task exports ``entity_type`` every ``interval`` (``15MIN``, ``30MIN``, ``hourly``,
  ``daily``, ``custom``: ten minutes). Its windows follow each other exactly: the first starts when
  it is made, each next one where the previous ended, so the schedule exports every record once.
  A run that comes late (or after the task was disabled) covers all the whole intervals it missed
  in one window.
- ``connection_id`` and ``job_config`` (the reference's S3 settings) are kept and echoed; the file
  stays in billingkit's store and is downloaded from the task (``GET /tasks/{id}/download``).
- Only ``enabled`` changes after creation. Delete archives (no further runs; its tasks stay).
- Run now: with ``start_time`` and ``end_time`` (mode ``custom``) one export of that window, the
  schedule untouched; without (mode ``automatic``) the export of the window since the last run up
  to now, and the schedule continues from now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, cast

from pydantic import Field, model_validator

from billingkit.domain.access import Action
from billingkit.domain.queries import Op, Page
from billingkit.domain.resources import Record, Status
from billingkit.domain.tasks import (
    ExportEntityType,
    ScheduledTask,
    ScheduledTaskInterval,
    Task,
    schedule_window,
)
from billingkit.domain.validation import InputModel, Key, UtcDatetime
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import Context, DueRun
from billingkit.services.records import archive, build, get_live, new_fields
from billingkit.services.search import Searches, SearchRequest
from billingkit.services.tasks import new_export_task

__all__ = [
    "ExportMetadataField",
    "ForcedRun",
    "JobConfig",
    "ScheduledTaskCreate",
    "ScheduledTaskSearch",
    "ScheduledTaskUpdate",
    "TriggerRun",
    "create_scheduled_task",
    "delete_scheduled_task",
    "get_scheduled_task",
    "list_scheduled_tasks",
    "make_due_scheduled_exports",
    "run_scheduled_task",
    "update_scheduled_task",
]

ENTITY = "task"
LABEL = "scheduled task"


class ExportMetadataField(InputModel):
    """The reference's ``types.ExportMetadataField`` (kept and echoed)."""

    entity_type: Key
    field_key: Key
    column_name: Key | None = None


class JobConfig(InputModel):
    """The reference's ``types.S3JobConfig``: kept and echoed, billingkit uploads nowhere."""

    bucket: Key | None = None
    region: Key | None = None
    key_prefix: Annotated[str, Field(max_length=255)] | None = None
    compression: Literal["none", "gzip"] | None = None
    encryption: Literal["AES256", "aws:kms", "aws:kms:dsse"] | None = None
    endpoint_url: Annotated[str, Field(max_length=2048)] | None = None
    use_path_style: bool | None = None
    provider: Key | None = None
    export_metadata_fields: list[ExportMetadataField] | None = None


class ScheduledTaskCreate(InputModel):
    entity_type: ExportEntityType
    interval: ScheduledTaskInterval
    enabled: bool = True
    connection_id: Key | None = None
    job_config: JobConfig | None = None


class ScheduledTaskUpdate(InputModel):
    """Only ``enabled`` changes (as the reference)."""

    enabled: bool


class ScheduledTaskSearch(SearchRequest):
    kind: ClassVar[str] = "scheduled_tasks"

    entity_type: Annotated[ExportEntityType | None, Searches("entity_type", Op.EQ)] = None
    interval: Annotated[ScheduledTaskInterval | None, Searches("interval", Op.EQ)] = None
    enabled: Annotated[bool | None, Searches("enabled", Op.EQ)] = None
    connection_id: Annotated[str | None, Searches("connection_id", Op.EQ)] = None


class TriggerRun(InputModel):
    """Run a scheduled export now: both ``start_time`` and ``end_time`` (a window of your own), or
    neither (the window since the last run)."""

    start_time: UtcDatetime | None = None
    end_time: UtcDatetime | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> TriggerRun:
        if (self.start_time is None) != (self.end_time is None):
            raise ValueError("give both start_time and end_time, or neither")
        if self.start_time is not None and self.end_time is not None and self.end_time <= self.start_time:
            raise ValueError("end_time must be after start_time")
        return self


@dataclass(frozen=True, slots=True)
class ForcedRun:
    """What running a scheduled task now did: the export ``task`` made for ``[start_time,
    end_time)`` in ``mode`` ``custom`` or ``automatic``."""

    task: Task
    mode: Literal["custom", "automatic"]
    start_time: datetime
    end_time: datetime


def create_scheduled_task(uow: UnitOfWork, ctx: Context, *, data: ScheduledTaskCreate) -> ScheduledTask:
    """Schedule an export every ``interval``; the first window starts now."""
    ctx.require(ENTITY, Action.WRITE)
    task = build(
        ScheduledTask,
        {
            **new_fields(ctx, "schtask"),
            "connection_id": data.connection_id,
            "entity_type": data.entity_type,
            "interval": data.interval,
            "enabled": data.enabled,
            "job_config": data.job_config.model_dump(exclude_none=True) if data.job_config else {},
            "window_start": ctx.now,
        },
    )
    return uow.scheduled_tasks.add(_next_run(task))


def _next_run(task: ScheduledTask) -> ScheduledTask:
    """``task`` due at the end of its current window while enabled and live, else not due."""
    due = task.enabled and task.status is Status.PUBLISHED
    return task.model_copy(update={"next_run_at": task.window_start + task.every if due else None})


def get_scheduled_task(uow: UnitOfWork, ctx: Context, *, scheduled_task_id: str) -> ScheduledTask:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.scheduled_tasks, LABEL, scheduled_task_id)


def list_scheduled_tasks(
    uow: UnitOfWork, ctx: Context, *, search: ScheduledTaskSearch
) -> Page[ScheduledTask]:
    ctx.require(ENTITY, Action.READ)
    return uow.scheduled_tasks.list(search.to_query())


def update_scheduled_task(
    uow: UnitOfWork, ctx: Context, *, scheduled_task_id: str, data: ScheduledTaskUpdate
) -> ScheduledTask:
    """Enable or disable. Enabled again, the next window starts where the last one ended (a run
    due at once when whole intervals passed meanwhile)."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.scheduled_tasks, LABEL, scheduled_task_id)
    if current.enabled is data.enabled:
        return current
    changed = _next_run(current.model_copy(update={"enabled": data.enabled, **ctx.touch()}))
    return uow.scheduled_tasks.update(changed, expected_version=current.version)


def delete_scheduled_task(uow: UnitOfWork, ctx: Context, *, scheduled_task_id: str) -> ScheduledTask:
    """Archive: no further runs; the tasks it made stay."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.scheduled_tasks, LABEL, scheduled_task_id)
    return archive(uow.scheduled_tasks, current.model_copy(update={"next_run_at": None}), ctx)


def run_scheduled_task(
    uow: UnitOfWork, ctx: Context, *, scheduled_task_id: str, data: TriggerRun
) -> ForcedRun:
    """Make an export of the scheduled task now (see the module doc)."""
    ctx.require(ENTITY, Action.WRITE)
    current = get_live(uow.scheduled_tasks, LABEL, scheduled_task_id)
    if data.start_time is not None and data.end_time is not None:
        task = _export(uow, ctx, current, data.start_time, data.end_time)
        return ForcedRun(task=task, mode="custom", start_time=data.start_time, end_time=data.end_time)
    start, end = current.window_start, ctx.now
    if end <= start:
        raise InvalidOperation(f"scheduled task {current.id} has nothing to export since its last run")
    task = _export(uow, ctx, current, start, end)
    moved = _next_run(current.model_copy(update={"window_start": end, **ctx.touch()}))
    uow.scheduled_tasks.update(moved, expected_version=current.version)
    return ForcedRun(task=task, mode="automatic", start_time=start, end_time=end)


def _export(uow: UnitOfWork, ctx: Context, scheduled: ScheduledTask, start: datetime, end: datetime) -> Task:
    return uow.tasks.add(
        new_export_task(ctx, scheduled.entity_type, start, end, scheduled_task_id=scheduled.id)
    )


def make_due_scheduled_exports(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of scheduled tasks: for each claimed task due at ``run.now``, make the
    export task of the window since its last run up to the last whole interval, and move the
    schedule to the end of that window. The export is written by the tasks handler, which runs
    next in the same run."""
    result = BatchResult()
    for scheduled in cast("Sequence[ScheduledTask]", items):
        if scheduled.next_run_at is None or scheduled.next_run_at > run.now:
            continue
        scoped = uow.for_scope(scheduled.tenant_id, scheduled.environment_id)
        ctx = run.context(scheduled.tenant_id, scheduled.environment_id)
        changes: dict[str, Any] = {}
        window = schedule_window(scheduled.window_start, scheduled.every, run.now)
        if window is not None and scheduled.enabled and scheduled.status is Status.PUBLISHED:
            _export(scoped, ctx, scheduled, *window)
            changes = {"window_start": window[1], **ctx.touch()}
        moved = _next_run(scheduled.model_copy(update=changes))
        scoped.scheduled_tasks.update(moved, expected_version=scheduled.version)
        result.recorded += ctx.recorded
    return result
