"""``POST /v1/subscriptions/{id}/change/preview`` and ``/change/execute``: plan change v1, where a
new subscription on the target plan replaces the current one
(:mod:`billingkit.services.plan_change_replace`)."""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.plan_change_replace import (
    SubscriptionChangeExecuteResponse,
    SubscriptionChangePreviewResponse,
)
from billingkit.services.plan_change_replace import PlanChangeRequest

__all__ = ["router"]

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)


@router.post("/subscriptions/{subscription_id}/change/preview")
def preview_subscription_change(
    caller: EnvCaller, subscription_id: str, body: PlanChangeRequest
) -> SubscriptionChangePreviewResponse:
    """The money and the new billing cycle of a plan change, computed as ``/change/execute``
    would make it now; nothing is written."""
    preview = caller.subscriptions.preview_replace_plan(subscription_id, body)
    return SubscriptionChangePreviewResponse.model_validate(preview.to_dict())


@router.post("/subscriptions/{subscription_id}/change/execute")
def execute_subscription_change(
    caller: EnvCaller, subscription_id: str, body: PlanChangeRequest
) -> SubscriptionChangeExecuteResponse:
    """``change_at: immediate`` (default): the subscription is cancelled (reason
    ``subscription_change``) and a new one starts on ``target_plan_id`` now; with
    ``proration_behavior: create_prorations`` (default) its unused ADVANCE time is netted on the new
    opening invoice (``SUBSCRIPTION_UPDATE``). ``end_of_period``: a pending ``plan_change``
    schedule at the current period end."""
    result = caller.subscriptions.replace_plan(subscription_id, body)
    return SubscriptionChangeExecuteResponse.model_validate(result.to_dict())
