"""Answers of the customer and subscription views: ``GET /customers/usage``,
``GET /customers/{id}/invoices/summary``, ``POST /subscriptions/usage`` and
``POST /usage-records/search``. Money and quantities are decimal strings (the reference says
number for some; its SDK parses numeric strings)."""

from __future__ import annotations

from typing import Any

from billingkit import Status
from billingkit.http.schemas.base import DecimalString, PaginationResponse, Timestamp, WireModel
from billingkit.http.schemas.catalog import PriceResponse
from billingkit.http.schemas.entitlement_features import EntitlementSourceResponse
from billingkit.http.schemas.features import FeatureResponse

__all__ = [
    "BillingPeriodInfo",
    "CustomerInvoiceSummaryResponse",
    "CustomerMultiCurrencyInvoiceSummary",
    "CustomerUsageSummaryResponse",
    "FeatureUsageSummaryResponse",
    "GetUsageBySubscriptionResponse",
    "ListUsageRecordsResponse",
    "SubscriptionUsageByMetersResponse",
    "UsageRecordResponse",
    "WorkflowResult",
]


class FeatureUsageSummaryResponse(WireModel):
    """One feature: usage in its current window (``next_usage_reset_at`` ends it) against the
    aggregated limit (``total_limit`` null: not metered, or unlimited with ``is_unlimited``)."""

    feature: FeatureResponse
    current_usage: DecimalString
    total_limit: int | None
    is_unlimited: bool
    is_enabled: bool
    is_soft_limit: bool
    usage_percent: DecimalString | None
    next_usage_reset_at: Timestamp | None
    sources: list[EntitlementSourceResponse]


class BillingPeriodInfo(WireModel):
    start_time: Timestamp
    end_time: Timestamp
    period: str


class CustomerUsageSummaryResponse(WireModel):
    customer_id: str
    features: list[FeatureUsageSummaryResponse]
    period: BillingPeriodInfo | None
    pagination: PaginationResponse


class CustomerInvoiceSummaryResponse(WireModel):
    """One currency's FINALIZED invoices: counts and exact sums."""

    customer_id: str
    currency: str
    total_invoice_count: int
    total_revenue_amount: DecimalString
    unpaid_invoice_count: int
    total_unpaid_amount: DecimalString
    overdue_invoice_count: int
    total_overdue_amount: DecimalString
    unpaid_usage_charges: DecimalString
    unpaid_fixed_charges: DecimalString


class CustomerMultiCurrencyInvoiceSummary(WireModel):
    customer_id: str
    default_currency: str | None
    summaries: list[CustomerInvoiceSummaryResponse]


class SubscriptionUsageByMetersResponse(WireModel):
    """One usage line of the period's invoice."""

    subscription_line_item_id: str | None
    meter_id: str | None
    meter_display_name: str | None
    display_name: str
    quantity: DecimalString
    amount: DecimalString
    currency: str
    display_amount: str
    is_overage: bool
    overage_factor: DecimalString | None
    price: PriceResponse | None


class GetUsageBySubscriptionResponse(WireModel):
    """The usage charges of ``[start_time, end_time)`` as the invoice prices them; ``amount`` is
    their sum."""

    subscription_id: str
    start_time: Timestamp
    end_time: Timestamp
    amount: DecimalString
    currency: str
    display_amount: str
    charges: list[SubscriptionUsageByMetersResponse]
    commitment_amount: DecimalString | None
    commitment_utilized: DecimalString
    overage_factor: DecimalString | None
    overage_amount: DecimalString
    has_overage: bool


class UsageRecordResponse(WireModel):
    """A billed period's usage of a subscription (a view over its finalized invoice)."""

    id: str
    tenant_id: str
    environment_id: str
    subscription_id: str
    customer_id: str
    customer_external_id: str | None
    plan_id: str | None
    period_start: Timestamp
    period_end: Timestamp
    quantity: DecimalString
    amount: DecimalString
    currency: str
    synced: bool
    syncs: dict[str, Any]
    status: Status
    created_at: Timestamp
    updated_at: Timestamp
    created_by: str
    updated_by: str


class ListUsageRecordsResponse(WireModel):
    items: list[UsageRecordResponse]
    pagination: PaginationResponse


class WorkflowResult(WireModel):
    """``POST /invoices/{id}/recalculate`` (the reference's TemporalWorkflowResult): billingkit runs
    no workflows, so the ids are null and the work is done when the answer comes."""

    message: str
    workflow_id: str | None
    run_id: str | None
