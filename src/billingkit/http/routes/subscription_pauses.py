"""``POST /v1/subscriptions/{id}/pause``, ``POST /v1/subscriptions/{id}/resume`` and
``GET /v1/subscriptions/{id}/pauses``.

The reference implements pause and resume without routing them (notes §1.6, D6); these are the
paths and bodies its SDK sends (``pauseSubscription``, ``resumeSubscription``), with the notes'
fields besides (``pause_mode``, ``pause_start``, ``pause_end``, ``pause_days``, ``dry_run``).
"""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute, whole_list
from billingkit.http.schemas.pauses import ListSubscriptionPausesResponse
from billingkit.http.schemas.subscription_pauses import PauseSubscriptionResponse, ResumeSubscriptionResponse
from billingkit.services.subscription_pauses import PauseRequest, ResumeRequest

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)


@router.post("/subscriptions/{subscription_id}/pause")
def pause_subscription(
    caller: EnvCaller, subscription_id: str, body: PauseRequest | None = None
) -> PauseSubscriptionResponse:
    """``pause_mode`` ``immediate`` (default, also for an empty or missing body), ``scheduled``
    (with ``pause_start``) or ``period_end``; ``pause_end`` or ``pause_days`` (neither: until
    resumed); ``dry_run`` writes nothing. Only active subscriptions (else 400 ``invalid_operation``)."""
    result = caller.subscriptions.pause(subscription_id, body or PauseRequest())
    return PauseSubscriptionResponse.model_validate(result.to_dict())


@router.post("/subscriptions/{subscription_id}/resume")
def resume_subscription(
    caller: EnvCaller, subscription_id: str, body: ResumeRequest | None = None
) -> ResumeSubscriptionResponse:
    """Resumes a paused subscription now (its period stretched by the paused time) or withdraws
    a scheduled pause; an empty or missing body is ``{"resume_mode": "immediate"}``. Neither
    paused nor scheduled: 400 ``invalid_operation``."""
    result = caller.subscriptions.resume(subscription_id, body or ResumeRequest())
    return ResumeSubscriptionResponse.model_validate(result.to_dict())


@router.get("/subscriptions/{subscription_id}/pauses")
def list_subscription_pauses(caller: EnvCaller, subscription_id: str) -> ListSubscriptionPausesResponse:
    """Every pause of the subscription, newest first, as one whole list."""
    return whole_list(ListSubscriptionPausesResponse, caller.subscriptions.pauses(subscription_id))
