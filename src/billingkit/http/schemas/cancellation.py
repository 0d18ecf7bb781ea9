"""Answers of the cancellation routes: ``POST /v1/subscriptions/{id}/cancel`` and the subscription
schedules (named as the reference names them)."""

from __future__ import annotations

from typing import Any

from billingkit.domain.cancellation import CancellationType
from billingkit.domain.subscription_schedules import ScheduleStatus, ScheduleType
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel
from billingkit.http.schemas.billing import InvoiceResponse

__all__ = [
    "CancelScheduleResponse",
    "CancelSubscriptionResponse",
    "GetPendingSchedulesResponse",
    "ProrationDetail",
    "SubscriptionScheduleResponse",
]


class ProrationDetail(WireModel):
    """The credit for one line's unused time: ``original_amount`` is the line's full-period
    amount, ``credit_amount`` what is credited, ``charge_amount`` always zero (a cancellation
    charges nothing new), ``proration_days`` the whole unused days."""

    line_item_id: str
    price_id: str
    plan_name: str
    original_amount: DecimalString
    credit_amount: DecimalString
    charge_amount: DecimalString
    proration_days: int
    description: str


class CancelSubscriptionResponse(WireModel):
    """What a cancellation did. ``status`` is the subscription's status afterwards (``cancelled``
    for ``immediate``, unchanged for the scheduled types); ``total_credit_amount`` the credit paid
    to the customer's PRE_PAID wallet; ``proration_invoice`` the invoice of the used part of the
    period, present only when one was issued."""

    subscription_id: str
    cancellation_type: CancellationType
    effective_date: Timestamp
    status: SubscriptionStatus
    reason: str | None
    proration_details: list[ProrationDetail]
    total_credit_amount: DecimalString
    message: str
    processed_at: Timestamp
    proration_invoice: InvoiceResponse | None = None


class SubscriptionScheduleResponse(WireModel):
    """A change of a subscription kept for later. ``status`` is the schedule's status;
    ``configuration`` of a ``cancellation`` holds what it changed (``original_cancel_at``,
    ``original_end_date``, ``original_current_period_end``, ...)."""

    id: str
    subscription_id: str
    schedule_type: ScheduleType
    status: ScheduleStatus
    scheduled_at: Timestamp
    executed_at: Timestamp | None
    cancelled_at: Timestamp | None
    configuration: dict[str, Any]
    execution_result: dict[str, Any] | None
    error_message: str | None
    metadata: dict[str, str]
    can_be_cancelled: bool
    days_until_execution: int
    created_at: Timestamp
    updated_at: Timestamp


class GetPendingSchedulesResponse(WireModel):
    """Schedules and how many this answer holds."""

    schedules: list[SubscriptionScheduleResponse]
    count: int


class CancelScheduleResponse(WireModel):
    """The withdrawn schedule's status (``cancelled``) and a confirmation."""

    message: str
    status: ScheduleStatus
