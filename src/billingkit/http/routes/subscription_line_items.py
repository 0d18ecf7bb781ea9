"""``/v1/subscriptions/{id}/lineitems`` and ``/v1/subscriptions/lineitems``: a subscription's line
items added, changed, ended and searched (the library's ``scoped.subscriptions.add_line_item``,
``update_line_item``, ``delete_line_item`` and ``line_items``)."""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.billing import SubscriptionLineItemResponse
from billingkit.http.schemas.line_items import ListSubscriptionLineItemsResponse
from billingkit.services.line_item_requests import LineItemCreate, LineItemDelete, LineItemUpdate
from billingkit.services.line_item_search import LineItemSearch

router = APIRouter(tags=["subscriptions"], route_class=WireRoute)


@router.post("/subscriptions/lineitems/search")
def search_line_items(caller: EnvCaller, body: LineItemSearch) -> ListSubscriptionLineItemsResponse:
    """Line items across the environment's subscriptions; ``expand``: ``prices``, ``meters``."""
    return ListSubscriptionLineItemsResponse.model_validate(caller.subscriptions.line_items(body).to_dict())


@router.post("/subscriptions/{subscription_id}/lineitems", status_code=201)
def create_line_item(
    caller: EnvCaller, subscription_id: str, body: LineItemCreate
) -> SubscriptionLineItemResponse:
    """A new line item: exactly one of ``price_id`` and ``price`` (an inline price for this
    subscription)."""
    change = caller.subscriptions.add_line_item(subscription_id, body)
    return SubscriptionLineItemResponse.model_validate(change.to_dict())


@router.put("/subscriptions/lineitems/{line_item_id}")
def update_line_item(
    caller: EnvCaller, line_item_id: str, body: LineItemUpdate
) -> SubscriptionLineItemResponse:
    """A price or quantity change answers the replacement line item; ``end_date`` (billingkit's)
    moves the line's end."""
    change = caller.subscriptions.update_line_item(line_item_id, body)
    return SubscriptionLineItemResponse.model_validate(change.to_dict())


@router.delete("/subscriptions/lineitems/{line_item_id}")
def delete_line_item(
    caller: EnvCaller, line_item_id: str, body: LineItemDelete | None = None
) -> SubscriptionLineItemResponse:
    """Ends the line item at ``effective_from`` (default now); an empty or missing body is allowed."""
    change = caller.subscriptions.delete_line_item(line_item_id, body or LineItemDelete())
    return SubscriptionLineItemResponse.model_validate(change.to_dict())
