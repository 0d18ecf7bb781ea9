"""Export tasks and scheduled tasks on the wire (the reference's ``TaskResponse``,
``ScheduledTaskResponse``, their lists, ``TriggerForceRunResponse`` and
``models.TemporalWorkflowResult``)."""

from __future__ import annotations

from typing import Any

from billingkit.domain.tasks import (
    ExportEntityType,
    FileType,
    ScheduledTaskInterval,
    TaskStatus,
    TaskType,
)
from billingkit.http.schemas.base import EnvironmentRecordResponse, PaginationResponse, Timestamp, WireModel

__all__ = [
    "ListScheduledTasksResponse",
    "ListTasksResponse",
    "NamedScheduleResponse",
    "ScheduledTaskResponse",
    "TaskDownloadResponse",
    "TaskResponse",
    "TaskResultResponse",
    "TriggerForceRunResponse",
]


class TaskResponse(EnvironmentRecordResponse):
    """An export task: ``task_status`` ``PENDING`` → ``PROCESSING`` → ``COMPLETED`` or ``FAILED``
    (``error_summary``), with its progress (``total_records``, ``processed_records``,
    ``successful_records``, ``failed_records``); the window and filters in ``metadata``;
    ``file_url`` (where the CSV is downloaded) once completed."""

    task_type: TaskType
    entity_type: ExportEntityType
    scheduled_task_id: str | None
    workflow_id: str | None
    file_name: str | None
    file_type: FileType
    task_status: TaskStatus
    total_records: int | None
    processed_records: int
    successful_records: int
    failed_records: int
    error_summary: str | None
    metadata: dict[str, Any]
    started_at: Timestamp | None
    completed_at: Timestamp | None
    failed_at: Timestamp | None
    file_url: str | None = None


class ListTasksResponse(WireModel):
    items: list[TaskResponse]
    pagination: PaginationResponse


class TaskResultResponse(WireModel):
    """The reference's ``models.TemporalWorkflowResult``: the task of ``workflow_id`` (``run_id``
    is the task's id) and a ``message`` saying how it stands."""

    workflow_id: str
    run_id: str
    message: str


class TaskDownloadResponse(WireModel):
    """Where a completed task's CSV file is downloaded (``GET /tasks/{id}/file``)."""

    download_url: str


class ScheduledTaskResponse(EnvironmentRecordResponse):
    """A recurring export of ``entity_type`` every ``interval`` while ``enabled``;
    ``connection_id`` and ``job_config`` as given."""

    connection_id: str | None
    entity_type: ExportEntityType
    interval: ScheduledTaskInterval
    enabled: bool
    job_config: dict[str, Any]


class ListScheduledTasksResponse(WireModel):
    items: list[ScheduledTaskResponse]
    pagination: PaginationResponse


class TriggerForceRunResponse(WireModel):
    """What ``POST /tasks/scheduled/{id}/run`` made: the export task (``workflow_id``, its id)
    of ``[start_time, end_time)``, ``mode`` ``custom`` (the window given) or ``automatic`` (since
    the last run)."""

    workflow_id: str
    message: str
    mode: str
    start_time: Timestamp
    end_time: Timestamp


class RunFailure(WireModel):
    id: str
    code: str
    message: str


class NamedScheduleResponse(WireModel):
    """What a named schedule run now did in the caller's environment."""

    message: str
    subscription_count: int
    invoice_count: int
    notification_count: int
    failures: list[RunFailure]
