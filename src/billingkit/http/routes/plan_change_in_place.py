"""``POST /v1/subscriptions/{id}/change/v2/preview`` and ``/change/v2/execute``: a plan change in
place (:mod:`billingkit.services.plan_change_in_place`)."""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.plan_change_in_place import SubscriptionChangeV2Response
from billingkit.services.plan_change_in_place import PlanChangeRequest

__all__ = ["router"]

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)


@router.post("/subscriptions/{subscription_id}/change/v2/preview")
def preview_subscription_plan_change_v2(
    caller: EnvCaller, subscription_id: str, body: PlanChangeRequest
) -> SubscriptionChangeV2Response:
    """What changing to ``target_plan_id`` would do, written nowhere: the invoice of a net charge
    (status ``preview``) or the wallet credit of a net credit, the line items, the subscription
    as it would be."""
    result = caller.subscriptions.preview_plan_change(subscription_id, body)
    return SubscriptionChangeV2Response.model_validate(result.to_dict())


@router.post("/subscriptions/{subscription_id}/change/v2/execute")
def execute_subscription_plan_change_v2(
    caller: EnvCaller, subscription_id: str, body: PlanChangeRequest
) -> SubscriptionChangeV2Response:
    """Change plan in place (same subscription id, anchor and period); ``change_at:
    end_of_period`` schedules it for the period's end. With ``idempotency_key`` a retry answers
    the first change; the same key with another body is 409."""
    result = caller.subscriptions.change_plan(subscription_id, body)
    return SubscriptionChangeV2Response.model_validate(result.to_dict())
