"""A change made to a subscription's plan or quantities (reference notes §3.3-3.5): one row per
change carried out, its history and what makes a retried request safe.

``change_kind`` says which operation made it: ``plan_change`` (v1: the old subscription cancelled
and ``new_subscription_id`` created), ``plan_change_v2`` (in place: same subscription, plan
swapped), ``quantity_change``. ``change_type`` classifies a plan change (``upgrade``,
``downgrade``, ``lateral``). ``invoice_id`` or ``wallet_transaction_id`` name the money it moved
(:mod:`billingkit.services.change_settlements`). ``idempotency_key`` (the client's, unique per
environment for ever) maps a retry to this row: ``request_fingerprint`` is the digest of the
request it was first used with (another request under the same key is refused) and ``result``
the answer given then, which a retry gets again.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any

from billingkit.domain.money import ZERO
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime

__all__ = ["ChangeAt", "ChangeKind", "SubscriptionChange", "SubscriptionChangeType", "classify_change"]


class ChangeKind(StrEnum):
    PLAN_CHANGE = "plan_change"
    PLAN_CHANGE_V2 = "plan_change_v2"
    QUANTITY_CHANGE = "quantity_change"


class ChangeAt(StrEnum):
    """When a plan change takes effect (the reference's ``change_at``)."""

    IMMEDIATE = "immediate"
    END_OF_PERIOD = "end_of_period"


class SubscriptionChangeType(StrEnum):
    """The spec's plan change classification."""

    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    LATERAL = "lateral"


def classify_change(current: Decimal, target: Decimal) -> SubscriptionChangeType:
    """``upgrade`` when ``target`` (what the new plan costs) exceeds ``current``, ``downgrade``
    when it is less, ``lateral`` when equal. Example: 30.00 -> 90.00 is an upgrade."""
    difference = target - current
    if difference > ZERO:
        return SubscriptionChangeType.UPGRADE
    if difference < ZERO:
        return SubscriptionChangeType.DOWNGRADE
    return SubscriptionChangeType.LATERAL


class SubscriptionChange(EnvironmentResource):
    """Change ``change_kind`` of subscription ``subscription_id``, effective at ``effective_at``."""

    subscription_id: str
    change_kind: ChangeKind
    change_type: SubscriptionChangeType | None = None
    from_plan_id: str | None = None
    to_plan_id: str | None = None
    new_subscription_id: str | None = None
    effective_at: UtcDatetime
    schedule_id: str | None = None
    invoice_id: str | None = None
    wallet_transaction_id: str | None = None
    idempotency_key: str | None = None
    request_fingerprint: str | None = None
    result: dict[str, Any] = {}
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return (
            f"<SubscriptionChange {self.id} {self.change_kind.value} sub={self.subscription_id} "
            f"at={self.effective_at:%Y-%m-%d}>"
        )
