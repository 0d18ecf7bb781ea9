"""Answers of the plan change routes in place (``POST /v1/subscriptions/{id}/change/v2/preview``
and ``/change/v2/execute``): the reference's ``SubscriptionChangeV2Response`` and its parts,
named as the reference names them."""

from __future__ import annotations

from billingkit.domain.subscription_changes import SubscriptionChangeType
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.http.schemas.base import Timestamp, WireModel
from billingkit.http.schemas.billing import SubscriptionResponse
from billingkit.http.schemas.subscription_modify import ChangedInvoiceResponse, ChangedLineItemResponse
from billingkit.services.plan_change_in_place_results import EntityChangeBehaviour

__all__ = [
    "ChangedResources",
    "ChangedSubscription",
    "EntityChangeResult",
    "PlanSummary",
    "SubscriptionChangeV2Response",
]


class PlanSummary(WireModel):
    """A plan named in a change: its id, name, description and lookup key."""

    description: str | None
    id: str
    lookup_key: str | None
    name: str


class ChangedSubscription(WireModel):
    """The subscription the change ``updated`` (in place: always the same one)."""

    id: str
    action: str
    status: SubscriptionStatus
    current_period_end: Timestamp
    trial_end: Timestamp | None


class ChangedResources(WireModel):
    """What the change touched; the invoice and line item entries are the modify routes' shapes."""

    invoices: list[ChangedInvoiceResponse]
    line_items: list[ChangedLineItemResponse]
    subscriptions: list[ChangedSubscription]


class EntityChangeResult(WireModel):
    """What the change did to an add-on association (``entity_id``; ``reference_id`` is its add-on)."""

    behaviour: EntityChangeBehaviour
    entity_id: str
    entity_type: str
    reference_id: str


class SubscriptionChangeV2Response(WireModel):
    """A plan change in place: ``change_type``, what it changed, the subscription after it (as it
    is now when the change is scheduled), the plans, and for ``end_of_period`` the schedule."""

    change_type: SubscriptionChangeType
    changed_resources: ChangedResources
    effective_at: Timestamp
    entity_changes: list[EntityChangeResult]
    from_plan: PlanSummary
    is_scheduled: bool
    metadata: dict[str, str]
    schedule_id: str | None
    scheduled_at: Timestamp | None
    subscription: SubscriptionResponse
    to_plan: PlanSummary
    warnings: list[str]
