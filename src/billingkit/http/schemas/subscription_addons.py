"""Answers of ``/v1/subscriptions/addon`` and ``/v1/subscriptions/{id}/addons/associations``."""

from __future__ import annotations

from billingkit.domain.addon_associations import AddonAssociationEntityType, AddonCadence, AddonStatus
from billingkit.http.schemas.base import EnvironmentRecordResponse, PaginationResponse, Timestamp, WireModel
from billingkit.http.schemas.billing import InvoiceResponse
from billingkit.http.schemas.checkout import CheckoutSessionResponse

__all__ = ["AddAddonToSubscriptionResponse", "AddonAssociationResponse", "ListAddonAssociationsResponse"]


class AddonAssociationResponse(EnvironmentRecordResponse):
    """Add-on ``addon_id`` attached to subscription ``entity_id`` from ``start_date`` until
    ``end_date`` (null: until removed). ``addon_status`` ``active``, or ``cancelled`` once removed
    (``cancelled_at``, ``cancellation_reason``; it still counts until ``end_date``); ``cadence``
    ``recurring`` or ``onetime`` (billingkit's addition to the reference's shape)."""

    entity_id: str
    entity_type: AddonAssociationEntityType
    addon_id: str
    addon_status: AddonStatus
    cadence: AddonCadence
    start_date: Timestamp
    end_date: Timestamp | None
    cancelled_at: Timestamp | None
    cancellation_reason: str | None
    metadata: dict[str, str]


class AddAddonToSubscriptionResponse(AddonAssociationResponse):
    """``POST /subscriptions/addon``: the new association, and ``invoice`` when the add-on was
    charged at once (a onetime add-on, or ``create_prorations`` mid-period); with ``checkout``,
    the ``pending`` association and its ``checkout_session``."""

    invoice: InvoiceResponse | None = None
    checkout_session: CheckoutSessionResponse | None = None


class ListAddonAssociationsResponse(WireModel):
    """``GET /subscriptions/{id}/addons/associations``: the whole list in the paged shape the
    official SDK reads."""

    items: list[AddonAssociationResponse]
    pagination: PaginationResponse
