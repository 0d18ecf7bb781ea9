"""The due-work handler of subscription schedules: changes that were asked for "at the end of the
period" are carried out when their time comes.

A schedule is due when its ``run_at`` has come (only schedules the worker must act on set it:
end-of-period plan changes; a scheduled cancellation needs no run of its own, the billing run
ends the subscription at its ``cancel_at``). The handler is taken after pauses and before the
billing run, so a plan change due at a period boundary is in place when the renewal invoice of
that boundary is computed: the closing period's ARREAR charges bill the old lines up to the
boundary, the next period's ADVANCE charges bill the new ones, and nothing is prorated.

Each schedule names its executor in ``configuration["executor"]`` (default: its
``schedule_type``); :data:`EXECUTORS` maps the name to the function that carries it out. An
executor runs in the claiming unit of work, in the schedule's scope, and returns the schedule
as it leaves it, unstored (the handler stores it): ``executed`` with its ``execution_result``,
or ``failed`` with its ``error_message`` when the change can no longer be made (e.g. its target
plan was archived); ``run_at`` cleared either way. Checks come before writes: an executor that raises a
``BillingError`` has its batch rolled back, and the schedule stays due for the next run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import cast

from billingkit.domain.resources import Record
from billingkit.domain.subscription_schedules import ScheduleStatus, SubscriptionSchedule
from billingkit.ports import UnitOfWork
from billingkit.services import plan_change_in_place, plan_change_replace
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import Context, DueRun
from billingkit.services.subscription_schedules import failed_schedule

__all__ = ["EXECUTORS", "ScheduleExecutor", "executor_name", "run_due_schedules"]

#: Carries out one due schedule in ``uow`` (the schedule's scope) and returns it settled, unstored.
ScheduleExecutor = Callable[[UnitOfWork, Context, SubscriptionSchedule], SubscriptionSchedule]

#: Executor name (``configuration["executor"]``, default the schedule type) -> executor.
EXECUTORS: Mapping[str, ScheduleExecutor] = MappingProxyType(
    {
        plan_change_in_place.EXECUTOR: plan_change_in_place.run_scheduled_change,
        plan_change_replace.EXECUTOR: plan_change_replace.run_scheduled_change,
    }
)


def executor_name(schedule: SubscriptionSchedule) -> str:
    """The executor ``schedule`` names: ``configuration["executor"]``, else its type."""
    return str(schedule.configuration.get("executor") or schedule.schedule_type.value)


def _due(schedule: SubscriptionSchedule, now: datetime) -> bool:
    return (
        schedule.schedule_status is ScheduleStatus.PENDING
        and schedule.run_at is not None
        and schedule.run_at <= now
    )


def _carry_out(uow: UnitOfWork, ctx: Context, schedule: SubscriptionSchedule) -> SubscriptionSchedule:
    executor = EXECUTORS.get(executor_name(schedule))
    if executor is None:
        return failed_schedule(ctx, schedule, f"no executor for schedule {executor_name(schedule)}")
    return executor(uow, ctx, schedule)


def run_due_schedules(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """Carry out the claimed schedules whose ``run_at`` has come, oldest first, each in its scope,
    writing in ``uow`` (the runner commits). A schedule that is no longer due (a retry re-reads
    it, or it was withdrawn meanwhile) is left alone."""
    result = BatchResult()
    by_scope: dict[tuple[str, str], list[SubscriptionSchedule]] = defaultdict(list)
    for schedule in cast("Sequence[SubscriptionSchedule]", items):
        if _due(schedule, run.now):
            by_scope[(schedule.tenant_id, schedule.environment_id)].append(schedule)
    for (tenant_id, environment_id), group in by_scope.items():
        ctx = run.context(tenant_id, environment_id)
        scoped = uow.for_scope(tenant_id, environment_id)
        for schedule in sorted(group, key=lambda s: (s.run_at, s.id)):
            settled = _carry_out(scoped, ctx, schedule)
            scoped.subscription_schedules.update(settled, expected_version=schedule.version)
        result.report.notification_count += len(ctx.recorded)
        result.recorded += ctx.recorded
    return result
