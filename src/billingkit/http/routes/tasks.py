"""``/v1/tasks`` (export tasks: list, read, status, result, download) and ``/v1/tasks/scheduled``
(recurring exports: create, read, list, enable or disable, delete, run now; and the reference's
two named schedules run now for the caller's environment).

``GET /tasks/{id}/download`` answers as the reference (a JSON object with the file's address,
``download_url``); ``GET /tasks/{id}/file`` serves the CSV itself (``text/csv``), streamed part by
part. The scheduled routes are declared first: ``/tasks/scheduled`` and ``/tasks/result`` are no
task ids.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse

from billingkit.domain.resources import Status
from billingkit.domain.tasks import ExportEntityType, ScheduledTaskInterval, Task, TaskStatus, TaskType
from billingkit.domain.validation import InputModel, parse_input
from billingkit.errors import ValidationError
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand, Limit, Offset, Order, SortField, StatusParam, sort_by
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.tasks import (
    ListScheduledTasksResponse,
    ListTasksResponse,
    NamedScheduleResponse,
    ScheduledTaskResponse,
    TaskDownloadResponse,
    TaskResponse,
    TaskResultResponse,
    TriggerForceRunResponse,
)
from billingkit.services.billing_runs import RunReport
from billingkit.services.scheduled_tasks import (
    ScheduledTaskCreate,
    ScheduledTaskSearch,
    ScheduledTaskUpdate,
    TriggerRun,
)
from billingkit.services.tasks import TaskSearch, TaskStatusUpdate

router = APIRouter(prefix="/tasks", tags=["tasks"], route_class=WireRoute)
#: The CSV file itself: bytes, not a JSON answer, so left out of the OpenAPI document (as the
#: sandbox checkout page); ``GET /tasks/{id}/download`` names its address.
files = APIRouter(prefix="/tasks", tags=["tasks"], include_in_schema=False)

Text = Annotated[str | None, Query(min_length=1, max_length=255)]


class NamedScheduleRequest(InputModel):
    """The named schedules take no parameters: an empty object (or no body)."""


def _task(request: Request, task: Task) -> TaskResponse:
    answer = TaskResponse.model_validate(task.to_dict())
    if task.task_status is TaskStatus.COMPLETED:
        answer.file_url = str(request.url_for("download_task_file", task_id=task.id))
    return answer


def _entity_type(value: str | None) -> ExportEntityType | None:
    """``events``, ``invoice``, ``credit_notes``; the reference's upper-case ``EVENTS`` too."""
    if value is None:
        return None
    try:
        return ExportEntityType(value.lower())
    except ValueError:
        accepted = ", ".join(e.value for e in ExportEntityType)
        raise ValidationError(f"entity_type must be one of {accepted}", field="entity_type") from None


def _schedule_answer(what: str, report: RunReport) -> NamedScheduleResponse:
    return NamedScheduleResponse.model_validate(
        {
            "message": f"{what} ran for this environment",
            "subscription_count": report.subscription_count,
            "invoice_count": report.invoice_count,
            "notification_count": report.notification_count,
            "failures": [{"id": i, "code": c, "message": m} for i, c, m in report.failures],
        }
    )


# -- scheduled tasks ----------------------------------------------------------------------------


@router.get("/scheduled")
def list_scheduled_tasks(
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    entity_type: Text = None,
    interval: ScheduledTaskInterval | None = None,
    enabled: bool | None = None,
    connection_id: Text = None,
) -> ListScheduledTasksResponse:
    search = parse_input(
        ScheduledTaskSearch,
        {
            "limit": limit,
            "offset": offset,
            "entity_type": _entity_type(entity_type),
            "interval": interval,
            "enabled": enabled,
            "connection_id": connection_id,
        },
    )
    return ListScheduledTasksResponse.model_validate(caller.scheduled_tasks.list(search).to_dict())


@router.post("/scheduled", status_code=201)
def create_scheduled_task(caller: EnvCaller, body: ScheduledTaskCreate) -> ScheduledTaskResponse:
    """A recurring export; the first window starts now."""
    return ScheduledTaskResponse.model_validate(caller.scheduled_tasks.create(body).to_dict())


@router.post("/scheduled/schedule-draft-finalization")
def schedule_draft_finalization(caller: EnvCaller) -> NamedScheduleResponse:
    """Finalize now this environment's renewal drafts whose finalization delay has passed."""
    return _schedule_answer("draft finalization", caller.scheduled_tasks.run_draft_finalization())


@router.post("/scheduled/schedule-update-billing-period")
def schedule_update_billing_period(
    caller: EnvCaller, body: NamedScheduleRequest | None = None
) -> NamedScheduleResponse:
    """Carry out now this environment's due period work (pauses, end-of-period changes,
    renewals and their invoices). The body, when sent, is an empty object."""
    return _schedule_answer("billing period update", caller.scheduled_tasks.run_billing_period_update())


@router.get("/scheduled/{scheduled_task_id}")
def get_scheduled_task(caller: EnvCaller, scheduled_task_id: str) -> ScheduledTaskResponse:
    return ScheduledTaskResponse.model_validate(caller.scheduled_tasks.get(scheduled_task_id).to_dict())


@router.put("/scheduled/{scheduled_task_id}")
def update_scheduled_task(
    caller: EnvCaller, scheduled_task_id: str, body: ScheduledTaskUpdate
) -> ScheduledTaskResponse:
    """Only ``enabled`` changes."""
    updated = caller.scheduled_tasks.update(scheduled_task_id, body)
    return ScheduledTaskResponse.model_validate(updated.to_dict())


@router.delete("/scheduled/{scheduled_task_id}", status_code=204)
def delete_scheduled_task(caller: EnvCaller, scheduled_task_id: str) -> Response:
    caller.scheduled_tasks.delete(scheduled_task_id)
    return Response(status_code=204)


@router.post("/scheduled/{scheduled_task_id}/run")
def trigger_scheduled_task_run(
    caller: EnvCaller, scheduled_task_id: str, body: TriggerRun | None = None
) -> TriggerForceRunResponse:
    """An export now: of ``start_time``..``end_time`` when given, else since the last run."""
    ran = caller.scheduled_tasks.run(scheduled_task_id, body or TriggerRun())
    return TriggerForceRunResponse.model_validate(
        {
            "workflow_id": ran.task.id,
            "message": f"export task {ran.task.id} created",
            "mode": ran.mode,
            "start_time": ran.task.metadata["start_time"],
            "end_time": ran.task.metadata["end_time"],
        }
    )


# -- tasks --------------------------------------------------------------------------------------


@router.get("")
def list_tasks(
    request: Request,
    caller: EnvCaller,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    sort: SortField = None,
    status: StatusParam = Status.PUBLISHED,
    task_type: TaskType | None = None,
    entity_type: Text = None,
    task_status: TaskStatus | None = None,
    scheduled_task_id: Text = None,
    created_by: Text = None,
    start_time: Text = None,
    end_time: Text = None,
    expand: Expand = None,
) -> ListTasksResponse:
    fields: dict[str, Any] = {
        "limit": limit,
        "offset": offset,
        "order": order,
        "sort": sort_by(sort, order),
        "status": status,
        "task_type": task_type,
        "entity_type": _entity_type(entity_type),
        "task_status": task_status,
        "scheduled_task_id": scheduled_task_id,
        "created_by": created_by,
        "start_time": start_time,
        "end_time": end_time,
        "expand": expand,
    }
    page = caller.tasks.list(parse_input(TaskSearch, fields))
    return ListTasksResponse.model_validate(
        {
            "items": [_task(request, task) for task in page.items],
            "pagination": {"limit": page.limit, "offset": page.offset, "total": page.total},
        }
    )


@router.get("/result")
def get_task_result(
    caller: EnvCaller, workflow_id: Annotated[str, Query(min_length=1, max_length=255)]
) -> TaskResultResponse:
    """The task of ``workflow_id`` (a task's workflow id is its own id); 404 when none has it."""
    task = caller.tasks.result(workflow_id)
    message = f"task {task.task_status.value}"
    if task.error_summary:
        message += f": {task.error_summary}"
    return TaskResultResponse(workflow_id=task.workflow_id or task.id, run_id=task.id, message=message)


@router.get("/{task_id}")
def get_task(request: Request, caller: EnvCaller, task_id: str) -> TaskResponse:
    return _task(request, caller.tasks.get(task_id))


@router.get("/{task_id}/download")
def download_task_export(request: Request, caller: EnvCaller, task_id: str) -> TaskDownloadResponse:
    """Where the CSV of a ``COMPLETED`` task is downloaded (``download_url``); 400 while it is not
    complete, 404 for no such task."""
    caller.tasks.iter_file(task_id)  # the same checks as the file itself
    return TaskDownloadResponse(download_url=str(request.url_for("download_task_file", task_id=task_id)))


@files.get("/{task_id}/file", response_class=StreamingResponse, name="download_task_file")
def download_task_file(caller: EnvCaller, task_id: str) -> StreamingResponse:
    """The CSV file of a ``COMPLETED`` task (``text/csv``, UTF-8), streamed part by part."""
    task = caller.tasks.get(task_id)
    parts = caller.tasks.iter_file(task_id)
    name = task.file_name or f"{task_id}.csv"
    return StreamingResponse(
        parts,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.put("/{task_id}/status")
def update_task_status(caller: EnvCaller, task_id: str, body: TaskStatusUpdate) -> SuccessResponse:
    """Cancel (``FAILED``) a task that has not ended, or retry (``PENDING``) a failed one."""
    task = caller.tasks.set_status(task_id, body)
    return SuccessResponse(message=f"task {task.id} is {task.task_status.value}")
