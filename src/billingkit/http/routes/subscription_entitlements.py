"""``GET /v1/subscriptions/{id}/entitlements``, ``GET /v1/customers/{id}/entitlements`` (and by
external id), and billingkit's entitlement check ``GET /v1/customers/{id}/entitlements/check``.

List parameters take repeated (``?feature_ids=a&feature_ids=b``) or comma-separated
(``?feature_ids=a,b``, the SDK's form) values.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.http.auth import EnvCaller
from billingkit.http.params import csv_list
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.subscription_entitlements import (
    CustomerEntitlementsResponse,
    EntitlementCheckResponse,
    SubscriptionEntitlementsResponse,
)

router = APIRouter(tags=["entitlements"], route_class=WireRoute)

Ids = Annotated[list[str] | None, Query()]


@router.get("/subscriptions/{subscription_id}/entitlements")
def subscription_entitlements(
    caller: EnvCaller, subscription_id: str, feature_ids: Ids = None
) -> SubscriptionEntitlementsResponse:
    found = caller.subscriptions.entitlements(subscription_id, feature_ids=csv_list(feature_ids))
    return SubscriptionEntitlementsResponse.model_validate(found.to_dict())


@router.get("/customers/external/{external_id}/entitlements")
def external_customer_entitlements(
    caller: EnvCaller, external_id: str, feature_ids: Ids = None, subscription_ids: Ids = None
) -> CustomerEntitlementsResponse:
    found = caller.entitlements.for_customer(
        external_id,
        external=True,
        feature_ids=csv_list(feature_ids),
        subscription_ids=csv_list(subscription_ids),
    )
    return CustomerEntitlementsResponse.model_validate(found.to_dict())


@router.get("/customers/{customer_id}/entitlements")
def customer_entitlements(
    caller: EnvCaller, customer_id: str, feature_ids: Ids = None, subscription_ids: Ids = None
) -> CustomerEntitlementsResponse:
    found = caller.entitlements.for_customer(
        customer_id, feature_ids=csv_list(feature_ids), subscription_ids=csv_list(subscription_ids)
    )
    return CustomerEntitlementsResponse.model_validate(found.to_dict())


@router.get("/customers/{customer_id}/entitlements/check")
def check_entitlement(
    caller: EnvCaller, customer_id: str, feature_id: Annotated[str, Query(min_length=1, max_length=255)]
) -> EntitlementCheckResponse:
    """``customer_id``: the customer's id or external id; ``feature_id``: the feature's id or
    lookup key. The library's ``scoped.entitlements.check``, with the same cache."""
    return EntitlementCheckResponse.model_validate(
        caller.entitlements.check(customer_id, feature_id).to_dict()
    )
