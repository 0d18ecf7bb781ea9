"""A change of a subscription scheduled for later (reference notes §1.7, §3.3-3.4).

``schedule_type`` ``cancellation`` holds, in ``configuration``, what a scheduled cancellation
changed on the subscription (its original ``cancel_at``, ``end_date``, ``current_period_end``) so
that cancelling the schedule restores them; ``plan_change`` holds the target of an end-of-period
plan change. Statuses: ``pending`` until it runs, then ``executed`` or ``failed``; ``cancelled``
when withdrawn. ``run_at`` is when the worker must act on it (``None`` once settled).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime

__all__ = ["ScheduleStatus", "ScheduleType", "SubscriptionSchedule"]


class ScheduleType(StrEnum):
    PLAN_CHANGE = "plan_change"
    CANCELLATION = "cancellation"


class ScheduleStatus(StrEnum):
    PENDING = "pending"
    EXECUTING = "executing"
    EXECUTED = "executed"
    CANCELLED = "cancelled"
    FAILED = "failed"


class SubscriptionSchedule(EnvironmentResource):
    """Change ``schedule_type`` of subscription ``subscription_id`` at ``scheduled_at``."""

    subscription_id: str
    schedule_type: ScheduleType
    schedule_status: ScheduleStatus = ScheduleStatus.PENDING
    scheduled_at: UtcDatetime
    executed_at: UtcDatetime | None = None
    cancelled_at: UtcDatetime | None = None
    configuration: dict[str, Any] = {}
    execution_result: dict[str, Any] | None = None
    error_message: str | None = None
    metadata: dict[str, str] = {}
    run_at: UtcDatetime | None = None
    version: int = 1

    def __repr__(self) -> str:
        return (
            f"<SubscriptionSchedule {self.id} {self.schedule_type.value} {self.schedule_status.value} "
            f"sub={self.subscription_id} at={self.scheduled_at:%Y-%m-%d}>"
        )
