"""``POST /v1/subscriptions/{id}/modify/preview``: what a modification would do, nothing written.

The same body as ``/modify/execute`` (served by the subscriptions router), the same answer, with
the invoices and wallet credits it would make shown with ``status: preview``.
"""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.subscription_modify import SubscriptionModifyResponse
from billingkit.services.subscription_modify import ExecuteSubscriptionModifyRequest

__all__ = ["router"]

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)


@router.post("/subscriptions/{subscription_id}/modify/preview")
def preview_subscription_modify(
    caller: EnvCaller, subscription_id: str, body: ExecuteSubscriptionModifyRequest
) -> SubscriptionModifyResponse:
    """Every type ``/modify/execute`` carries out (``coupon``, ``inheritance``,
    ``grouped_invoicing``, ``quantity_change``, ``trial_end``), previewed: the subscription as it
    would be and ``changed_resources`` with ``status: preview``; nothing is stored or notified."""
    return SubscriptionModifyResponse.model_validate(
        caller.subscriptions.preview_modify(subscription_id, body).to_dict()
    )
