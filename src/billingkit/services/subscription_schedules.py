"""Subscription schedules: reading them and withdrawing a pending one (reference notes §1.7).

A schedule is a change of a subscription kept for later (a ``cancellation`` made by an
``end_of_period`` or ``scheduled_date`` cancellation, :mod:`billingkit.services.subscription_cancel`).
The billing run carries a cancellation out when the subscription reaches its ``cancel_at`` and marks
the schedule ``executed`` (:mod:`billingkit.services.subscription_termination`).

:func:`cancel_schedule` withdraws a ``pending`` schedule: it becomes ``cancelled`` and, for a
cancellation, the subscription gets back the ``cancel_at``, ``cancel_at_period_end``, ``end_date``
and current period it had before (:func:`billingkit.domain.cancellation.restored_fields`), with
``subscription.updated``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, ClassVar

from billingkit.domain.access import Action
from billingkit.domain.auto_invoice_thresholds import with_next_check
from billingkit.domain.cancellation import restored_fields
from billingkit.domain.queries import Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import iso
from billingkit.domain.subscription_schedules import ScheduleStatus, ScheduleType, SubscriptionSchedule
from billingkit.domain.validation import Identifier, InputModel
from billingkit.errors import InvalidOperation, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.records import get_live
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "CancelScheduleRequest",
    "ScheduleList",
    "ScheduleSearch",
    "ScheduleView",
    "cancel_schedule",
    "executed_schedule",
    "failed_schedule",
    "get_schedule",
    "list_subscription_schedules",
    "search_schedules",
]

ENTITY = "subscription"
LABEL = "subscription schedule"
_DAY = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class ScheduleView:
    """A schedule as the reference shows it (``SubscriptionScheduleResponse``), seen at ``now``:
    ``status`` is the schedule's status (``schedule_status`` of the model), ``can_be_cancelled``
    whether it is still pending, ``days_until_execution`` the whole days left until it runs (0
    when due or settled)."""

    schedule: SubscriptionSchedule
    now: datetime

    @property
    def can_be_cancelled(self) -> bool:
        return self.schedule.schedule_status is ScheduleStatus.PENDING

    @property
    def days_until_execution(self) -> int:
        if not self.can_be_cancelled or self.schedule.scheduled_at <= self.now:
            return 0
        return (self.schedule.scheduled_at - self.now) // _DAY

    def to_dict(self) -> dict[str, Any]:
        s = self.schedule
        return {
            "id": s.id,
            "subscription_id": s.subscription_id,
            "schedule_type": s.schedule_type.value,
            "status": s.schedule_status.value,
            "scheduled_at": iso(s.scheduled_at),
            "executed_at": iso(s.executed_at),
            "cancelled_at": iso(s.cancelled_at),
            "configuration": s.configuration,
            "execution_result": s.execution_result,
            "error_message": s.error_message,
            "metadata": s.metadata,
            "can_be_cancelled": self.can_be_cancelled,
            "days_until_execution": self.days_until_execution,
            "created_at": iso(s.created_at),
            "updated_at": iso(s.updated_at),
        }


@dataclass(frozen=True, slots=True)
class ScheduleList:
    """Schedules in the reference's ``GetPendingSchedulesResponse`` shape: ``schedules`` and their
    ``count`` (how many this answer holds); ``total`` is how many match in all."""

    schedules: tuple[ScheduleView, ...]
    total: int

    def to_dict(self) -> dict[str, Any]:
        return {"schedules": [view.to_dict() for view in self.schedules], "count": len(self.schedules)}


class ScheduleSearch(SearchRequest):
    """Filters on all schedules (newest first): the reference's ``pending_only``,
    ``subscription_id``, ``subscription_ids``, ``schedule_type`` and ``schedule_status``."""

    kind: ClassVar[str] = "subscription_schedules"

    pending_only: bool = False
    subscription_id: Annotated[str | None, Searches("subscription_id", Op.EQ)] = None
    subscription_ids: Annotated[list[str] | None, Searches("subscription_id", Op.IN)] = None
    schedule_type: Annotated[list[ScheduleType] | None, Searches("schedule_type", Op.IN)] = None
    schedule_status: Annotated[list[ScheduleStatus] | None, Searches("schedule_status", Op.IN)] = None


class CancelScheduleRequest(InputModel):
    """The reference's ``CancelScheduleRequest``. The schedule is the one the path (or the
    library's first argument) names; ``schedule_id``, ``subscription_id`` and ``schedule_type``,
    when given, must describe that same schedule."""

    schedule_id: Identifier | None = None
    subscription_id: Identifier | None = None
    schedule_type: ScheduleType | None = None


def _view(ctx: Context, schedule: SubscriptionSchedule) -> ScheduleView:
    return ScheduleView(schedule, ctx.now)


def search_schedules(uow: UnitOfWork, ctx: Context, *, search: ScheduleSearch) -> ScheduleList:
    """A page of schedules of any subscription matching the filters (newest first by default)."""
    ctx.require(ENTITY, Action.READ)
    query = search.to_query()
    if search.pending_only:
        query = ListQuery(
            filters=(*query.filters, Filter("schedule_status", Op.IN, [ScheduleStatus.PENDING.value])),
            sort=query.sort,
            limit=query.limit,
            offset=query.offset,
            status=query.status,
        )
    page = uow.subscription_schedules.list(query)
    return ScheduleList(tuple(_view(ctx, item) for item in page.items), page.total)


def list_subscription_schedules(uow: UnitOfWork, ctx: Context, *, subscription_id: str) -> ScheduleList:
    """Every schedule of subscription ``subscription_id``, newest first; ``NotFound`` for an
    unknown subscription."""
    ctx.require(ENTITY, Action.READ)
    sub = get_live(uow.subscriptions, "subscription", subscription_id)
    found: list[SubscriptionSchedule] = []
    while True:
        page: Page[SubscriptionSchedule] = uow.subscription_schedules.list(
            ListQuery(
                filters=(Filter("subscription_id", Op.EQ, sub.id),),
                sort=(Sort("created_at"), Sort("id")),
                limit=1000,
                offset=len(found),
            )
        )
        found += page.items
        if not page.has_more:
            return ScheduleList(tuple(_view(ctx, item) for item in found), page.total)


def get_schedule(uow: UnitOfWork, ctx: Context, *, schedule_id: str) -> ScheduleView:
    """One schedule; ``NotFound`` for an unknown one."""
    ctx.require(ENTITY, Action.READ)
    return _view(ctx, get_live(uow.subscription_schedules, LABEL, schedule_id))


def cancel_schedule(
    uow: UnitOfWork, ctx: Context, *, schedule_id: str, data: CancelScheduleRequest
) -> ScheduleView:
    """Withdraw pending schedule ``schedule_id`` (see the module doc) and answer it as saved.

    ``NotFound`` for an unknown schedule; ``ValidationError`` naming the body field that describes
    another schedule; ``InvalidOperation`` when the schedule is not pending any more (executed,
    cancelled, failed); ``VersionConflict`` when it or its subscription changed meanwhile.
    """
    ctx.require(ENTITY, Action.WRITE)
    schedule = get_live(uow.subscription_schedules, LABEL, schedule_id)
    for name, given, stored in (
        ("schedule_id", data.schedule_id, schedule.id),
        ("subscription_id", data.subscription_id, schedule.subscription_id),
        ("schedule_type", data.schedule_type, schedule.schedule_type),
    ):
        if given is not None and given != stored:
            raise ValidationError(f"{name} {given} does not match schedule {schedule.id}", field=name)
    if schedule.schedule_status is not ScheduleStatus.PENDING:
        raise InvalidOperation(
            f"schedule {schedule.id} is {schedule.schedule_status.value}: "
            "only a pending schedule can be cancelled"
        )
    withdrawn = schedule.model_copy(
        update={
            **ctx.touch(),
            "schedule_status": ScheduleStatus.CANCELLED,
            "cancelled_at": ctx.now,
            "run_at": None,
        }
    )
    saved = uow.subscription_schedules.update(withdrawn, expected_version=schedule.version)
    if schedule.schedule_type is ScheduleType.CANCELLATION:
        sub = uow.subscriptions.find(schedule.subscription_id)
        if sub is None:
            raise NotFound(f"subscription {schedule.subscription_id} not found")
        changes = restored_fields(sub, schedule.configuration, renewal_notice=ctx.settings.renewal_notice)
        interval = ctx.settings.auto_invoice_check_interval
        restored = with_next_check(sub.model_copy(update={**changes, **ctx.touch()}), ctx.now, interval)
        restored = uow.subscriptions.update(restored, expected_version=sub.version)
        notifications.notify(
            uow, ctx, "subscription.updated", restored, uow.customers.find(restored.customer_id)
        )
    return _view(ctx, saved)


def failed_schedule(ctx: Context, schedule: SubscriptionSchedule, reason: str) -> SubscriptionSchedule:
    """``schedule`` (unstored) marked ``failed`` because ``reason``: no longer due."""
    return schedule.model_copy(
        update={
            **ctx.touch(),
            "schedule_status": ScheduleStatus.FAILED,
            "error_message": reason,
            "run_at": None,
        }
    )


def executed_schedule(
    ctx: Context, schedule: SubscriptionSchedule, result: dict[str, Any]
) -> SubscriptionSchedule:
    """``schedule`` (unstored) marked ``executed`` now with its ``execution_result``: no longer due."""
    return schedule.model_copy(
        update={
            **ctx.touch(),
            "schedule_status": ScheduleStatus.EXECUTED,
            "executed_at": ctx.now,
            "run_at": None,
            "execution_result": result,
        }
    )
