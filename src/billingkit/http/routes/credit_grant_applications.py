"""``/v1/subscriptions/{id}/grants/upcoming`` and ``/v1/customers/{id}/grants/upcoming``: the
credit grant applications still to come (pending), soonest first, as one whole list."""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute, whole_list
from billingkit.http.schemas.catalog import ListCreditGrantApplicationsResponse

router = APIRouter(tags=["credit grant applications"], route_class=WireRoute)


@router.get("/subscriptions/{subscription_id}/grants/upcoming")
def subscription_upcoming_grants(
    caller: EnvCaller, subscription_id: str
) -> ListCreditGrantApplicationsResponse:
    return whole_list(
        ListCreditGrantApplicationsResponse, caller.subscriptions.upcoming_grants(subscription_id)
    )


@router.get("/customers/{customer_id}/grants/upcoming")
def customer_upcoming_grants(caller: EnvCaller, customer_id: str) -> ListCreditGrantApplicationsResponse:
    return whole_list(ListCreditGrantApplicationsResponse, caller.customers.upcoming_grants(customer_id))
