"""The Pause resource (the reference's ``subscription.SubscriptionPause``), on its own so that the
subscription answers (:mod:`.billing`) and the pause answers (:mod:`.subscription_pauses`) can
both embed it."""

from __future__ import annotations

from billingkit.domain.subscription_pauses import PauseMode, ResumeMode
from billingkit.domain.subscriptions import PauseStatus
from billingkit.http.schemas.base import EnvironmentRecordResponse, PaginationResponse, Timestamp, WireModel

__all__ = ["ListSubscriptionPausesResponse", "SubscriptionPauseResponse"]


class SubscriptionPauseResponse(EnvironmentRecordResponse):
    """One pause of a subscription: ``pause_status`` ``scheduled`` until it starts, ``active``
    while the subscription is paused, then ``completed`` (resumed: ``resumed_at``, ``resume_mode``
    ``immediate`` by hand or ``auto`` at ``pause_end``) or ``cancelled`` (withdrawn before it
    started). ``pause_end`` null: until resumed. ``original_period_start``/``_end``: the billing
    period it interrupts, before it was stretched."""

    subscription_id: str
    pause_status: PauseStatus
    pause_mode: PauseMode
    resume_mode: ResumeMode | None
    pause_start: Timestamp
    pause_end: Timestamp | None
    resumed_at: Timestamp | None
    original_period_start: Timestamp
    original_period_end: Timestamp
    reason: str | None
    metadata: dict[str, str]


class ListSubscriptionPausesResponse(WireModel):
    """``GET /subscriptions/{id}/pauses``: every pause of the subscription, newest first."""

    items: list[SubscriptionPauseResponse]
    pagination: PaginationResponse
