"""Answers of the line item routes (``/v1/subscriptions/lineitems``): the line items themselves
are :class:`~billingkit.http.schemas.billing.SubscriptionLineItemResponse`."""

from __future__ import annotations

from billingkit.http.schemas.base import PaginationResponse, WireModel
from billingkit.http.schemas.billing import SubscriptionLineItemResponse

__all__ = ["ListSubscriptionLineItemsResponse"]


class ListSubscriptionLineItemsResponse(WireModel):
    """``POST /subscriptions/lineitems/search``: a page of line items across subscriptions."""

    items: list[SubscriptionLineItemResponse]
    pagination: PaginationResponse
