"""``/v1/subscriptions`` and ``/v1/customers/external/{external_id}/subscriptions``.

The router has no prefix: the customer route lives under ``/customers``. Fixed paths
(``/subscriptions/search``) are declared before ``/subscriptions/{subscription_id}``.
"""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.domain.queries import Page
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Expand
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.billing import (
    ListSubscriptionsResponse,
    SubscriptionResponse,
    SubscriptionResponseV2,
)
from billingkit.http.schemas.subscription_modify import SubscriptionModifyResponse
from billingkit.services.subscription_entitlements import expands_entitlements
from billingkit.services.subscription_modify import ExecuteSubscriptionModifyRequest
from billingkit.services.subscriptions import SubscriptionActivate, SubscriptionCreate, SubscriptionSearch

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)


@router.post("/subscriptions", status_code=201)
def create_subscription(caller: EnvCaller, body: SubscriptionCreate) -> SubscriptionResponse:
    """With ``checkout``: a draft, and ``checkout_session`` (pay at its ``payment_action.url``)."""
    sub = caller.subscriptions.create(body)
    if body.checkout is None:
        return SubscriptionResponse.model_validate(sub.to_dict())
    session = caller.checkout.for_subscription(sub.id)
    return SubscriptionResponse.model_validate({**sub.to_dict(), "checkout_session": session.to_dict()})


@router.post("/subscriptions/search")
def search_subscriptions(caller: EnvCaller, body: SubscriptionSearch) -> ListSubscriptionsResponse:
    """``with_line_items: false`` leaves each subscription's ``line_items`` out; ``expand`` naming
    ``entitlements`` adds each one's aggregated features."""
    if expands_entitlements(body.expand):
        found = caller.subscriptions.search_with_entitlements(body)
        items = [view.to_dict(line_items=body.with_line_items) for view in found.items]
        return ListSubscriptionsResponse.model_validate(
            Page(items, found.total, found.limit, found.offset).to_dict()
        )
    page = caller.subscriptions.search(body)
    if body.with_line_items:
        return ListSubscriptionsResponse.model_validate(page.to_dict())
    items = [sub.to_dict(line_items=False) for sub in page.items]
    bare = Page(items=items, total=page.total, limit=page.limit, offset=page.offset)
    return ListSubscriptionsResponse.model_validate(bare.to_dict())


@router.get("/subscriptions/{subscription_id}")
def get_subscription(caller: EnvCaller, subscription_id: str) -> SubscriptionResponse:
    return SubscriptionResponse.model_validate(caller.subscriptions.get(subscription_id).to_dict())


@router.get("/subscriptions/{subscription_id}/v2")
def get_subscription_v2(
    caller: EnvCaller, subscription_id: str, expand: Expand = None
) -> SubscriptionResponseV2:
    """``expand``: comma list of ``coupon_associations``, ``credit_grants``,
    ``subscription_line_items``, ``phases``; ``line_items`` appear only when expanded."""
    return SubscriptionResponseV2.model_validate(
        caller.subscriptions.get_v2(subscription_id, expand=expand).to_dict()
    )


@router.post("/subscriptions/{subscription_id}/activate")
def activate_subscription(
    caller: EnvCaller, subscription_id: str, body: SubscriptionActivate | None = None
) -> SubscriptionResponse:
    """Optional body ``{"start_date": ...}``; an empty or missing body keeps the draft's start."""
    start_date = body.start_date if body is not None else None
    return SubscriptionResponse.model_validate(
        caller.subscriptions.activate(subscription_id, start_date=start_date).to_dict()
    )


@router.post("/subscriptions/{subscription_id}/modify/execute")
def modify_subscription(
    caller: EnvCaller, subscription_id: str, body: ExecuteSubscriptionModifyRequest
) -> SubscriptionModifyResponse:
    """``type: coupon`` with ``coupon_params`` (``add`` by ``coupon_code``, ``remove`` by
    ``coupon_association_id``); ``type: inheritance`` with ``inheritance_params`` and ``type:
    grouped_invoicing`` with ``grouped_invoicing_params`` (children added or removed, listed in
    ``changed_resources``); ``type: quantity_change`` with ``quantity_change_params`` (lines
    replaced at new quantities, the prorated invoice or wallet credit in ``changed_resources``);
    ``type: trial_end`` with ``trial_end_params``; ``tax`` and ``addon`` are a 400 on ``type``. A
    quantity change with ``checkout`` answers ``checkout_session`` and changes nothing until paid."""
    return SubscriptionModifyResponse.model_validate(
        caller.subscriptions.modify(subscription_id, body).to_dict()
    )


@router.get("/customers/external/{external_id}/subscriptions")
def customer_subscriptions(caller: EnvCaller, external_id: str) -> ListSubscriptionsResponse:
    return ListSubscriptionsResponse.model_validate(caller.subscriptions.for_customer(external_id).to_dict())
