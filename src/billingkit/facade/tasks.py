"""The tasks areas of ``Scoped``: ``scoped.tasks`` (exports to CSV) and ``scoped.scheduled_tasks``
(recurring exports and the reference's two named schedules).

Example (invoices of March to a CSV file)::

    task = scoped.tasks.export(entity_type="invoice", start_time=march, end_time=april)
    billing.run_due()  # the worker's run writes the file, a page per step
    scoped.tasks.get(task.id).task_status  # "COMPLETED"
    csv_bytes = scoped.tasks.download(task.id)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from billingkit.domain.tasks import ExportPart
from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp
from billingkit.services import scheduled_tasks, task_schedules, tasks
from billingkit.services.billing_runs import RunReport

if TYPE_CHECKING:
    from billingkit.facade.scoped import Scoped

__all__ = ["ScheduledTasks", "Tasks"]


class Tasks(Area):
    """Export tasks: ``export`` makes one (written by the next due-work run), ``get``, ``list``,
    ``set_status`` (cancel with ``FAILED``, retry a failed one with ``PENDING``), ``result`` (the
    task of a workflow id: its own id), ``download``/``iter_file`` (the CSV of a ``COMPLETED``
    task). Rules in :mod:`billingkit.services.tasks`."""

    export = RequestOp(tasks.create_export_task, tasks.TaskExportCreate)
    get = IdOp(tasks.get_task, read_only=True)
    list = RequestOp(tasks.list_tasks, tasks.TaskSearch, read_only=True)
    set_status = IdRequestOp(tasks.update_task_status, tasks.TaskStatusUpdate, conflict_retries=1)
    result = IdOp(tasks.get_task_result, read_only=True)

    def iter_file(self, task_id: str) -> Iterator[bytes]:
        """The CSV file of ``COMPLETED`` task ``task_id``, part by part (UTF-8), each batch of
        parts read in its own read-only unit of work: a big file is never held whole. Raises
        ``NotFound`` (no such task) or ``InvalidOperation`` (not completed) before the first part."""
        _, parts = self._s.read(tasks.get_task_file_parts, task_id=task_id)
        return _file(self._s, task_id, parts)

    def download(self, task_id: str) -> bytes:
        """The whole CSV file of ``COMPLETED`` task ``task_id`` (see :meth:`iter_file`)."""
        return b"".join(self.iter_file(task_id))


def _file(scoped: Scoped, task_id: str, first: list[ExportPart]) -> Iterator[bytes]:
    parts = first
    while parts:
        for part in parts:
            yield part.content.encode()
        _, parts = scoped.read(tasks.get_task_file_parts, task_id=task_id, after=parts[-1].sequence)


class ScheduledTasks(Area):
    """Recurring exports: ``create`` (``entity_type``, ``interval``), ``get``, ``list``,
    ``update`` (``enabled`` only), ``delete``, ``run`` (an export now: of a window you give, or
    of the window since the last run); and the reference's named schedules run now for this
    environment: ``run_draft_finalization`` and ``run_billing_period_update``. Rules in
    :mod:`billingkit.services.scheduled_tasks`."""

    create = RequestOp(scheduled_tasks.create_scheduled_task, scheduled_tasks.ScheduledTaskCreate)
    get = IdOp(scheduled_tasks.get_scheduled_task, read_only=True)
    list = RequestOp(
        scheduled_tasks.list_scheduled_tasks, scheduled_tasks.ScheduledTaskSearch, read_only=True
    )
    update = IdRequestOp(
        scheduled_tasks.update_scheduled_task, scheduled_tasks.ScheduledTaskUpdate, conflict_retries=1
    )
    delete = IdOp(scheduled_tasks.delete_scheduled_task)
    run = IdRequestOp(scheduled_tasks.run_scheduled_task, scheduled_tasks.TriggerRun, conflict_retries=1)

    def run_draft_finalization(self) -> RunReport:
        """Finalize this environment's renewal drafts whose finalization delay has passed, now, as
        the worker does on its schedule (:mod:`billingkit.services.task_schedules`)."""
        return self._now(task_schedules.run_draft_finalization)

    def run_billing_period_update(self) -> RunReport:
        """Carry out this environment's due period work now (pauses, end-of-period changes,
        renewals and their invoices), as the worker does on its schedule."""
        return self._now(task_schedules.run_billing_period_update)

    def _now(self, schedule: task_schedules.NamedSchedule) -> RunReport:
        billing = self._s.billing
        ctx = billing.context(self._s.tenant_id, self._s.environment_id, self._s.actor)
        return schedule(billing.storage, ctx, dispatch=billing._dispatch)
