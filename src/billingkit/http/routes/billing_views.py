"""Customer and subscription views: ``GET /v1/customers/usage``, ``GET
/v1/customers/{id}/invoices/summary``, ``POST /v1/subscriptions/usage``, ``PUT
/v1/subscriptions/{id}`` and ``POST /v1/usage-records/search``.

Included before the customers and subscriptions routers: ``/customers/usage`` is no customer id.
List parameters take repeated or comma-separated values (the SDK's form).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.http.auth import EnvCaller
from billingkit.http.params import csv_list
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.billing import SubscriptionResponse
from billingkit.http.schemas.billing_views import (
    CustomerMultiCurrencyInvoiceSummary,
    CustomerUsageSummaryResponse,
    GetUsageBySubscriptionResponse,
    ListUsageRecordsResponse,
)
from billingkit.services.customer_usage import CustomerUsageRequest
from billingkit.services.subscription_updates import SubscriptionUpdate
from billingkit.services.subscription_usage import SubscriptionUsageRequest
from billingkit.services.usage_records import UsageRecordSearch

router = APIRouter(tags=["views"], route_class=WireRoute)

Ids = Annotated[list[str] | None, Query()]
Reference = Annotated[str | None, Query(max_length=255)]


@router.get("/customers/usage")
def customer_usage_summary(
    caller: EnvCaller,
    customer_id: Reference = None,
    customer_lookup_key: Reference = None,
    feature_ids: Ids = None,
    feature_lookup_keys: Ids = None,
    subscription_ids: Ids = None,
) -> CustomerUsageSummaryResponse:
    """Each feature the customer (``customer_id`` or ``customer_lookup_key``, its external id) is
    granted now, with its usage in its current window against the aggregated limit."""
    request = CustomerUsageRequest(
        customer_id=customer_id,
        customer_lookup_key=customer_lookup_key,
        feature_ids=csv_list(feature_ids),
        feature_lookup_keys=csv_list(feature_lookup_keys),
        subscription_ids=csv_list(subscription_ids),
    )
    return CustomerUsageSummaryResponse.model_validate(caller.customers.usage_summary(request).to_dict())


@router.get("/customers/{customer_id}/invoices/summary")
def customer_invoice_summary(caller: EnvCaller, customer_id: str) -> CustomerMultiCurrencyInvoiceSummary:
    """The customer's FINALIZED invoices per currency; a pure read (overdue invoices are announced
    by the due-work runner)."""
    return CustomerMultiCurrencyInvoiceSummary.model_validate(
        caller.customers.invoice_summary(customer_id).to_dict()
    )


@router.post("/subscriptions/usage")
def subscription_usage(caller: EnvCaller, body: SubscriptionUsageRequest) -> GetUsageBySubscriptionResponse:
    """The current period's usage charges so far, exactly as its invoice will price them."""
    return GetUsageBySubscriptionResponse.model_validate(caller.subscriptions.usage(body).to_dict())


@router.put("/subscriptions/{subscription_id}")
def update_subscription(
    caller: EnvCaller, subscription_id: str, body: SubscriptionUpdate
) -> SubscriptionResponse:
    """``cancel_at`` / ``cancel_at_period_end`` schedule or withdraw a cancellation; ``status`` and
    ``parent_subscription_id`` only when unchanged (400 otherwise); ``version`` (optional) must be
    the stored one (else 409)."""
    return SubscriptionResponse.model_validate(caller.subscriptions.update(subscription_id, body).to_dict())


@router.post("/usage-records/search")
def search_usage_records(caller: EnvCaller, body: UsageRecordSearch) -> ListUsageRecordsResponse:
    """Billed usage: one record per finalized subscription invoice with usage lines."""
    return ListUsageRecordsResponse.model_validate(caller.usage.records(body).to_dict())
