"""A credit grant application (CGA): one grant's credits for one subscription and one period.

One row per (grant, subscription, period start), unique in storage, so the credits of a period are
granted once whoever runs the worker and however often. ``run_at`` is when the worker acts on it
(``None`` once it is applied, skipped or cancelled). Statuses (reference notes §6.1): ``pending``
until its time, then ``applied`` (the wallet top-up is made with the CGA's id as its key),
``skipped`` (subscription paused, or the credits would already have expired), ``cancelled``
(subscription cancelled) or ``failed``; a ``draft``/``incomplete`` subscription defers it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import DecimalText, UtcDatetime

__all__ = ["ApplicationReason", "ApplicationStatus", "CreditGrantApplication"]


class ApplicationStatus(StrEnum):
    APPLIED = "applied"
    FAILED = "failed"
    PENDING = "pending"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


class ApplicationReason(StrEnum):
    FIRST_TIME_RECURRING = "first_time_recurring_credit_grant"
    RECURRING = "recurring_credit_grant"
    ONETIME = "onetime_credit_grant"


class CreditGrantApplication(EnvironmentResource):
    """Grant ``credit_grant_id``'s ``credits`` to subscription ``subscription_id`` for
    ``[period_start, period_end)``, due at ``scheduled_for``."""

    credit_grant_id: str
    subscription_id: str
    customer_id: str
    scheduled_for: UtcDatetime
    run_at: UtcDatetime | None = None
    period_start: UtcDatetime
    period_end: UtcDatetime | None = None
    applied_at: UtcDatetime | None = None
    application_status: ApplicationStatus = ApplicationStatus.PENDING
    application_reason: ApplicationReason
    credits: DecimalText
    subscription_status_at_application: str | None = None
    retry_count: int = 0
    failure_reason: str | None = None
    idempotency_key: str
    wallet_transaction_id: str | None = None
    metadata: dict[str, str] = {}
    version: int = 1

    def __repr__(self) -> str:
        return (
            f"<CreditGrantApplication {self.id} {self.credits} credits {self.application_status.value} "
            f"grant={self.credit_grant_id} sub={self.subscription_id}>"
        )

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``CreditGrantApplicationResponse``: without the internal ``run_at``,
        ``customer_id``, ``wallet_transaction_id`` and ``version``."""
        internal = {"run_at", "customer_id", "wallet_transaction_id", "version"}
        return self.model_dump(mode="json", exclude=internal)
