"""What ends with a subscription: the bookkeeping of subscriptions that have just been cancelled,
whether at once (:mod:`billingkit.services.subscription_cancel`) or by the billing run (an end date
reached, a scheduled cancellation fired).

Their line items end with them (the subscription's own fields, written by the caller:
:func:`billingkit.domain.cancellation.ended_fields`). Here, for all of them together, a few
statements whatever their number:

* active and pending add-on associations become ``cancelled`` (``end_date``: the end, unless
  earlier; ``cancelled_at``: now; ``cancellation_reason``);
* pending credit grant applications become ``cancelled`` (no more credits are granted);
* the subscription's own credit grants (scope ``SUBSCRIPTION``) end at the end, unless earlier;
* pending schedules end: the ``cancellation`` schedule that ended it is ``executed``; any other
  (a plan change, a cancellation superseded by an immediate one) is ``cancelled``;
* pauses end: a scheduled one is ``cancelled``, a running one ``completed``
  (:func:`billingkit.services.pause_records.close_pauses`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from billingkit.domain.addon_associations import AddonAssociationEntityType, AddonStatus
from billingkit.domain.catalog import CreditGrantScope
from billingkit.domain.credit_grant_applications import ApplicationStatus
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import iso
from billingkit.domain.subscription_schedules import ScheduleStatus, ScheduleType, SubscriptionSchedule
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.pause_records import close_pauses
from billingkit.services.records import list_where_in

__all__ = ["DEFAULT_REASON", "terminate", "terminate_ended"]

#: The ``cancellation_reason`` of add-on associations ended with their subscription, when the
#: cancellation gave none.
DEFAULT_REASON = "subscription cancelled"


def _end(sub: Subscription, ctx: Context) -> datetime:
    return sub.cancelled_at or sub.end_date or ctx.now


def _earlier(current: datetime | None, end: datetime) -> datetime:
    return end if current is None or current > end else current


def _settled_schedule(
    ctx: Context, schedule: SubscriptionSchedule, end: datetime, sub: Subscription
) -> SubscriptionSchedule:
    """``schedule`` (pending) once ``sub`` ended at ``end``: ``executed`` when it is the
    cancellation that ended it (its time had come), else ``cancelled`` (superseded)."""
    changes: dict[str, Any] = {**ctx.touch(), "run_at": None}
    if schedule.schedule_type is ScheduleType.CANCELLATION and schedule.scheduled_at <= end:
        changes.update(
            schedule_status=ScheduleStatus.EXECUTED,
            executed_at=ctx.now,
            execution_result={
                "subscription_status": sub.subscription_status.value,
                "cancelled_at": iso(end),
            },
        )
    else:
        changes.update(schedule_status=ScheduleStatus.CANCELLED, cancelled_at=ctx.now)
    return schedule.model_copy(update=changes)


def terminate(
    uow: UnitOfWork, ctx: Context, ended: Sequence[Subscription], *, reason: str | None = None
) -> None:
    """End what hangs from the ``ended`` subscriptions (stored, ``cancelled``, each ended at its
    ``cancelled_at``): see the module doc. ``reason`` becomes the add-on associations'
    ``cancellation_reason`` (default :data:`DEFAULT_REASON`). Writes in ``uow``."""
    if not ended:
        return
    subs = {sub.id: sub for sub in ended}
    ids = sorted(subs)
    associations = list_where_in(
        uow.addon_associations,
        "entity_id",
        ids,
        Filter("entity_type", Op.EQ, AddonAssociationEntityType.SUBSCRIPTION.value),
        Filter("addon_status", Op.IN, [AddonStatus.ACTIVE.value, AddonStatus.PENDING.value]),
    )
    uow.addon_associations.update_many(
        [
            (
                association,
                association.model_copy(
                    update={
                        **ctx.touch(),
                        "addon_status": AddonStatus.CANCELLED,
                        "end_date": _earlier(association.end_date, _end(subs[association.entity_id], ctx)),
                        "cancelled_at": ctx.now,
                        "cancellation_reason": reason or DEFAULT_REASON,
                    }
                ),
            )
            for association in associations
        ]
    )
    applications = list_where_in(
        uow.credit_grant_applications,
        "subscription_id",
        ids,
        Filter("application_status", Op.IN, [ApplicationStatus.PENDING.value]),
    )
    uow.credit_grant_applications.update_many(
        [
            (
                cga,
                cga.model_copy(
                    update={
                        **ctx.touch(),
                        "application_status": ApplicationStatus.CANCELLED,
                        "failure_reason": "subscription cancelled",
                        "run_at": None,
                    }
                ),
            )
            for cga in applications
        ]
    )
    grants = list_where_in(
        uow.credit_grants,
        "subscription_id",
        ids,
        Filter("scope", Op.EQ, CreditGrantScope.SUBSCRIPTION.value),
    )
    grant_changes = []
    for grant in grants:
        end = _end(subs[grant.subscription_id or ""], ctx)
        if (grant.end_date is None or grant.end_date > end) and (
            grant.start_date is None or grant.start_date < end
        ):
            grant_changes.append((grant, grant.model_copy(update={**ctx.touch(), "end_date": end})))
    uow.credit_grants.update_many(grant_changes)
    schedules = list_where_in(
        uow.subscription_schedules,
        "subscription_id",
        ids,
        Filter("schedule_status", Op.IN, [ScheduleStatus.PENDING.value]),
    )
    uow.subscription_schedules.update_many(
        [
            (
                schedule,
                _settled_schedule(
                    ctx, schedule, _end(subs[schedule.subscription_id], ctx), subs[schedule.subscription_id]
                ),
            )
            for schedule in schedules
        ]
    )
    close_pauses(uow, ctx, ids)


def terminate_ended(
    uow: UnitOfWork, ctx: Context, changes: Sequence[tuple[Subscription, Subscription]]
) -> None:
    """:func:`terminate` the subscriptions of a billing run's ``(as claimed, as saved)`` pairs that
    the run cancelled (an end date reached, a scheduled cancellation fired)."""
    ended = [
        saved
        for claimed, saved in changes
        if saved.subscription_status is SubscriptionStatus.CANCELLED
        and claimed.subscription_status is not SubscriptionStatus.CANCELLED
    ]
    terminate(uow, ctx, ended)
