"""The raw subscription update, ``PUT /subscriptions/{id}`` (updateSubscription, reference notes
§1.8), carried out through the lifecycle instead of written as given.

The reference writes ``status``, ``cancel_at``, ``cancel_at_period_end`` and
``parent_subscription_id`` with no side effects, so e.g. an end date set this way later ends the
subscription without terminating its line items. billingkit accepts what it can apply through the
existing lifecycle operations, in one unit of work, and refuses the rest with 400:

* ``cancel_at_period_end: true`` schedules the cancellation at the current period's end
  (:func:`billingkit.services.subscription_cancel.cancel_subscription`, ``end_of_period``);
  ``false`` withdraws a pending cancellation schedule
  (:func:`billingkit.services.subscription_schedules.cancel_schedule`), which restores the dates.
* ``cancel_at`` schedules the cancellation at that instant (``scheduled_date``), replacing a
  pending one; with ``cancel_at_period_end: true`` too it is refused (two different dates).
* ``status`` and ``parent_subscription_id`` are accepted only when they repeat the stored value:
  changing them has its own operations (activate, cancel, pause, resume; ``modify`` with
  ``inheritance`` or ``grouped_invoicing``), which check and bill what such a change means.
* ``version`` (a billingkit extension, D2), when given, must be the stored version, else
  ``VersionConflict`` (409) and nothing is written.
* A body that changes nothing writes nothing and answers the subscription as stored.
"""

from __future__ import annotations

from billingkit.domain.access import Action
from billingkit.domain.cancellation import CancellationType
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.domain.subscription_schedules import ScheduleStatus, ScheduleType
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.validation import InputModel, UtcDatetime
from billingkit.errors import ValidationError, VersionConflict
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import get_live
from billingkit.services.subscription_cancel import CancelSubscriptionRequest, cancel_subscription
from billingkit.services.subscription_schedules import CancelScheduleRequest, cancel_schedule

__all__ = ["SubscriptionUpdate", "update_subscription"]

_CHANGE_ELSEWHERE = {
    "status": "change it with activate, cancel, pause or resume",
    "parent_subscription_id": "change it with modify (type inheritance or grouped_invoicing)",
}


class SubscriptionUpdate(InputModel):
    """The reference's UpdateSubscriptionRequest plus ``version`` (the version the caller read).
    ``parent_subscription_id: ""`` means no parent."""

    status: SubscriptionStatus | None = None
    cancel_at: UtcDatetime | None = None
    cancel_at_period_end: bool | None = None
    parent_subscription_id: str | None = None
    version: int | None = None


def _check_unchanged(sub: Subscription, data: SubscriptionUpdate) -> None:
    if data.status is not None and data.status is not sub.subscription_status:
        raise ValidationError(
            f"status cannot be set from {sub.subscription_status.value} to {data.status.value} by an "
            f"update: {_CHANGE_ELSEWHERE['status']}",
            field="status",
        )
    if data.parent_subscription_id is not None and (data.parent_subscription_id or None) != (
        sub.parent_subscription_id
    ):
        raise ValidationError(
            "parent_subscription_id cannot be changed by an update: "
            + _CHANGE_ELSEWHERE["parent_subscription_id"],
            field="parent_subscription_id",
        )
    if data.cancel_at is not None and data.cancel_at_period_end:
        raise ValidationError(
            "give cancel_at or cancel_at_period_end: true, not both", field="cancel_at_period_end"
        )


def _withdraw_pending_cancellation(uow: UnitOfWork, ctx: Context, sub: Subscription) -> bool:
    page = uow.subscription_schedules.list(
        ListQuery(
            filters=(
                Filter("subscription_id", Op.EQ, sub.id),
                Filter("schedule_type", Op.EQ, ScheduleType.CANCELLATION.value),
                Filter("schedule_status", Op.IN, [ScheduleStatus.PENDING.value]),
            ),
            limit=10,
        )
    )
    for schedule in page.items:
        cancel_schedule(uow, ctx, schedule_id=schedule.id, data=CancelScheduleRequest())
    return bool(page.items)


def update_subscription(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: SubscriptionUpdate
) -> Subscription:
    """Apply ``data`` to subscription ``subscription_id`` through the lifecycle (see the module
    rules) and answer it as stored.

    Raises ``NotFound``; ``VersionConflict`` for a stale ``version``; ``ValidationError`` naming
    the field for a status or parent change or two cancellation dates; and what a scheduled
    cancellation raises (``InvalidOperation`` for a draft, cancelled or inherited subscription,
    ``ValidationError`` for a ``cancel_at`` in the past).
    """
    ctx.require("subscription", Action.WRITE)
    sub = get_live(uow.subscriptions, "subscription", subscription_id)
    if data.version is not None and data.version != sub.version:
        raise VersionConflict(
            f"subscription {sub.id} is at version {sub.version}, not {data.version}",
        )
    _check_unchanged(sub, data)
    wanted: CancelSubscriptionRequest | None = None
    if data.cancel_at is not None and data.cancel_at != sub.cancel_at:
        wanted = CancelSubscriptionRequest(
            cancellation_type=CancellationType.SCHEDULED_DATE, cancel_at=data.cancel_at
        )
    elif data.cancel_at_period_end is True and not sub.cancel_at_period_end:
        wanted = CancelSubscriptionRequest(cancellation_type=CancellationType.END_OF_PERIOD)
    if wanted is not None:
        _withdraw_pending_cancellation(uow, ctx, sub)
        return cancel_subscription(uow, ctx, subscription_id=sub.id, data=wanted).subscription
    if data.cancel_at_period_end is False and sub.cancel_at_period_end:
        _withdraw_pending_cancellation(uow, ctx, sub)
        return uow.subscriptions.get(sub.id)
    return sub
