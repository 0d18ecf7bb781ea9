"""``POST /v1/plans/{id}/sync/subscriptions``: plan price sync."""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.plan_price_sync import PlanPriceSyncResponse

router = APIRouter(prefix="/plans", tags=["plans"], route_class=WireRoute)


@router.post("/{plan_id}/sync/subscriptions")
def sync_plan_prices(caller: EnvCaller, plan_id: str) -> PlanPriceSyncResponse:
    """Bring every live subscription of the plan up to the plan's current prices; answers when
    done (the reference starts a workflow and answers its id)."""
    return PlanPriceSyncResponse.model_validate(caller.plans.sync_subscriptions(plan_id).to_dict())
