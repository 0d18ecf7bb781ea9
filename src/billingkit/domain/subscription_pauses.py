"""A pause of a subscription (the spec's Pause resource; reference notes §1.6, decision D6).

One row per pause request. ``pause_status`` is the pause's own state: ``scheduled`` until it starts,
``active`` while the subscription is paused, then ``completed`` (resumed) or ``cancelled`` (a
scheduled pause withdrawn). ``run_at`` is when the worker must next act on it (start a scheduled
pause, auto-resume at ``pause_end``); ``None`` once nothing is left to do.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.subscriptions import PauseStatus
from billingkit.domain.validation import UtcDatetime

__all__ = ["PauseMode", "ResumeMode", "SubscriptionPause"]


class PauseMode(StrEnum):
    IMMEDIATE = "immediate"
    SCHEDULED = "scheduled"
    PERIOD_END = "period_end"


class ResumeMode(StrEnum):
    IMMEDIATE = "immediate"
    SCHEDULED = "scheduled"
    AUTO = "auto"


class SubscriptionPause(EnvironmentResource):
    """Subscription ``subscription_id`` paused over ``[pause_start, pause_end)`` (``pause_end``
    ``None``: until resumed)."""

    subscription_id: str
    pause_status: PauseStatus
    pause_mode: PauseMode
    resume_mode: ResumeMode | None = None
    pause_start: UtcDatetime
    pause_end: UtcDatetime | None = None
    resumed_at: UtcDatetime | None = None
    original_period_start: UtcDatetime
    original_period_end: UtcDatetime
    reason: str | None = None
    metadata: dict[str, str] = {}
    run_at: UtcDatetime | None = None
    version: int = 1

    def __repr__(self) -> str:
        return f"<SubscriptionPause {self.id} {self.pause_status.value} sub={self.subscription_id}>"

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``subscription.SubscriptionPause``: without ``run_at`` and ``version``."""
        return self.model_dump(mode="json", exclude={"run_at", "version"})
