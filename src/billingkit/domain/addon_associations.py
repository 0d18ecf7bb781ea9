"""An add-on attached to a subscription (the reference's ``AddonAssociationResponse``).

The association is what an add-on's line items, entitlements and credit grants on one subscription
hang from (line items carry ``addon_association_id``). ``addon_status``: ``active`` from its
attachment (a future ``start_date`` included), ``pending`` while a checkout awaits payment,
``cancelled`` once removed (``end_date``, ``cancelled_at``, ``cancellation_reason`` set; it still
counts until ``end_date``). ``cadence``: ``recurring`` add-ons bill every period, ``onetime`` ones
one period (:mod:`billingkit.domain.subscription_addons`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime

__all__ = ["AddonAssociation", "AddonAssociationEntityType", "AddonCadence", "AddonStatus"]


class AddonCadence(StrEnum):
    ONETIME = "onetime"
    RECURRING = "recurring"


class AddonStatus(StrEnum):
    ACTIVE = "active"
    CANCELLED = "cancelled"
    PENDING = "pending"


class AddonAssociationEntityType(StrEnum):
    SUBSCRIPTION = "subscription"
    PLAN = "plan"
    ADDON = "addon"


class AddonAssociation(EnvironmentResource):
    """Add-on ``addon_id`` attached to ``entity_type`` ``entity_id`` (a subscription) from
    ``start_date`` until ``end_date`` (``None``: open)."""

    entity_id: str
    entity_type: AddonAssociationEntityType = AddonAssociationEntityType.SUBSCRIPTION
    addon_id: str
    addon_status: AddonStatus = AddonStatus.ACTIVE
    cadence: AddonCadence = AddonCadence.RECURRING
    start_date: UtcDatetime
    end_date: UtcDatetime | None = None
    cancelled_at: UtcDatetime | None = None
    cancellation_reason: str | None = None
    metadata: dict[str, str] = {}
    version: int = 1

    def __repr__(self) -> str:
        return (
            f"<AddonAssociation {self.id} addon={self.addon_id} {self.addon_status.value} "
            f"{self.entity_type.value}={self.entity_id}>"
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form, without ``version``."""
        return self.model_dump(mode="json", exclude={"version"})
