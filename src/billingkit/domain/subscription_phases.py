"""A phase of a subscription (the spec's Phase): a window ``[start_date, end_date)`` with its own
line items (they carry ``subscription_phase_id`` and the phase's dates) and coupons.
``end_date`` ``None``: the last phase, open-ended."""

from __future__ import annotations

from typing import Any

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime

__all__ = ["SubscriptionPhase"]


class SubscriptionPhase(EnvironmentResource):
    subscription_id: str
    start_date: UtcDatetime
    end_date: UtcDatetime | None = None
    metadata: dict[str, str] = {}
    version: int = 1

    def __repr__(self) -> str:
        end = f"{self.end_date:%Y-%m-%d}" if self.end_date else "open"
        return f"<SubscriptionPhase {self.id} sub={self.subscription_id} {self.start_date:%Y-%m-%d}..{end}>"

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``SubscriptionPhaseResponse``, without ``version``."""
        return self.model_dump(mode="json", exclude={"version"})
