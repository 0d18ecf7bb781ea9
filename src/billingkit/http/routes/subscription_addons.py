"""``/v1/subscriptions/addon`` (add, remove) and ``/v1/subscriptions/{id}/addons/associations``.

Registered before the subscriptions router, so ``/subscriptions/addon`` is never read as a
subscription id.
"""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute, success, whole_list
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.subscription_addons import (
    AddAddonToSubscriptionResponse,
    ListAddonAssociationsResponse,
)
from billingkit.services.subscription_addon_removal import RemoveAddonRequest
from billingkit.services.subscription_addons import AddAddonRequest

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)


@router.post("/subscriptions/addon")
def add_subscription_addon(caller: EnvCaller, body: AddAddonRequest) -> AddAddonToSubscriptionResponse:
    """Attach an add-on; ``invoice`` is the charge made at once, when there is one. With
    ``checkout``: the association ``pending`` and its ``checkout_session``, activated once paid."""
    return AddAddonToSubscriptionResponse.model_validate(caller.subscriptions.add_addon(body).to_dict())


@router.delete("/subscriptions/addon")
def remove_subscription_addon(caller: EnvCaller, body: RemoveAddonRequest) -> SuccessResponse:
    """End an add-on association at ``effective_date`` (default: the current period's end)."""
    return success(caller.subscriptions.remove_addon(body).message)


@router.get("/subscriptions/{subscription_id}/addons/associations")
def subscription_addon_associations(caller: EnvCaller, subscription_id: str) -> ListAddonAssociationsResponse:
    """The associations in force now or later, oldest first (one whole list)."""
    return whole_list(ListAddonAssociationsResponse, caller.subscriptions.addon_associations(subscription_id))
