"""``/v1/subscriptions/{id}/phases`` and ``/v1/subscriptions/phases/{phase_id}``: a subscription's
phases added, listed, read, moved and deleted after creation (the reference has no such paths;
see docs/decisions.md). Phases given with a new subscription go through ``POST /subscriptions``."""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute, success, whole_list
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.subscription_phases import (
    ListSubscriptionPhasesResponse,
    SubscriptionPhaseResponse,
)
from billingkit.services.subscription_phases import SubscriptionPhaseCreate, SubscriptionPhaseUpdate

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)


@router.post("/subscriptions/{subscription_id}/phases", status_code=201)
def add_phase(
    caller: EnvCaller, subscription_id: str, body: SubscriptionPhaseCreate
) -> SubscriptionPhaseResponse:
    """Body: the reference's ``SubscriptionPhaseCreateRequest``. The phase starts at or after the
    end of the subscription's current period."""
    phase = caller.subscriptions.add_phase(subscription_id, body)
    return SubscriptionPhaseResponse.model_validate(phase.to_dict())


@router.get("/subscriptions/{subscription_id}/phases")
def list_phases(caller: EnvCaller, subscription_id: str) -> ListSubscriptionPhasesResponse:
    return whole_list(ListSubscriptionPhasesResponse, caller.subscriptions.phases(subscription_id))


@router.get("/subscriptions/phases/{phase_id}")
def get_phase(caller: EnvCaller, phase_id: str) -> SubscriptionPhaseResponse:
    return SubscriptionPhaseResponse.model_validate(caller.subscriptions.get_phase(phase_id).to_dict())


@router.put("/subscriptions/phases/{phase_id}")
def update_phase(
    caller: EnvCaller, phase_id: str, body: SubscriptionPhaseUpdate
) -> SubscriptionPhaseResponse:
    """``{start_date?, end_date?, metadata?}``; ``end_date: null`` makes the phase open-ended."""
    return SubscriptionPhaseResponse.model_validate(
        caller.subscriptions.update_phase(phase_id, body).to_dict()
    )


@router.delete("/subscriptions/phases/{phase_id}")
def delete_phase(caller: EnvCaller, phase_id: str) -> SuccessResponse:
    """A phase that has not started; its lines go and its time returns to the plan lines."""
    caller.subscriptions.delete_phase(phase_id)
    return success("subscription phase deleted successfully")
