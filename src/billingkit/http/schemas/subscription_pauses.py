"""Answers of ``POST /subscriptions/{id}/pause`` and ``/resume``: the subscription and its pause
as they are afterwards, and what the pause does to billing."""

from __future__ import annotations

from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel
from billingkit.http.schemas.billing import SubscriptionResponse
from billingkit.http.schemas.pauses import SubscriptionPauseResponse

__all__ = ["BillingImpactResponse", "PauseSubscriptionResponse", "ResumeSubscriptionResponse"]


class BillingImpactResponse(WireModel):
    """The billing period the pause interrupts (``period_start``, ``original_period_end``) and
    where it ends once the pause is over (``adjusted_period_end``; null while an open-ended pause
    runs), the paused span and its length in seconds (null when open-ended). Pausing and
    resuming move no money: ``amount_invoiced`` and ``amount_credited`` are zero."""

    period_start: Timestamp
    original_period_end: Timestamp
    adjusted_period_end: Timestamp | None
    pause_start: Timestamp
    pause_end: Timestamp | None
    pause_duration_seconds: int | None
    amount_invoiced: DecimalString
    amount_credited: DecimalString
    currency: str


class PauseSubscriptionResponse(WireModel):
    """The paused subscription (or, with ``dry_run: true``, what it would be: nothing is
    written), its pause, and the billing impact."""

    subscription: SubscriptionResponse
    pause: SubscriptionPauseResponse
    billing_impact: BillingImpactResponse
    dry_run: bool


class ResumeSubscriptionResponse(PauseSubscriptionResponse):
    """The resumed subscription and the pause it ended (``completed``), or the withdrawn scheduled
    pause (``cancelled``); with ``dry_run: true`` nothing is written."""
