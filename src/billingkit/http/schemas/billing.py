"""Answers of ``/v1/subscriptions`` and ``/v1/invoices``: who is billed for what, and the bills."""

from __future__ import annotations

from typing import Any

from billingkit import (
    BillingCadence,
    BillingCycle,
    BillingPeriod,
    BillingReason,
    CollectionMethod,
    CouponType,
    InvoiceCadence,
    InvoiceStatus,
    InvoiceType,
    PauseStatus,
    PaymentBehavior,
    PaymentStatus,
    PaymentTerms,
    PriceType,
    ProrationBehavior,
    Status,
    SubscriptionStatus,
    SubscriptionType,
    TaxRateEntityType,
)
from billingkit.http.schemas.adjustments import CouponResponse, TaxRateResponse
from billingkit.http.schemas.base import (
    DecimalString,
    EnvironmentRecordResponse,
    PaginationResponse,
    Timestamp,
    WireModel,
)
from billingkit.http.schemas.catalog import CreditGrantResponse, PriceResponse
from billingkit.http.schemas.checkout import CheckoutSessionResponse
from billingkit.http.schemas.entitlement_features import AggregatedFeatureResponse
from billingkit.http.schemas.features import MeterResponse
from billingkit.http.schemas.pauses import SubscriptionPauseResponse
from billingkit.http.schemas.subscription_phases import SubscriptionPhaseResponse

__all__ = [
    "CommitmentInfoResponse",
    "CouponApplicationResponse",
    "CouponAssociationResponse",
    "InvoiceLineItemResponse",
    "InvoiceResponse",
    "ListCouponAssociationsResponse",
    "ListInvoicesResponse",
    "ListSubscriptionsResponse",
    "SubscriptionLineItemResponse",
    "SubscriptionResponse",
    "SubscriptionResponseV2",
    "TaxAppliedResponse",
]


class SubscriptionLineItemResponse(WireModel):
    """One charge of a subscription, copied from a plan price or added to it; ``quantity`` is the
    billed quantity of a FIXED line and 0 for USAGE lines (their quantity comes from the meter).
    The record fields are the subscription's; ``price`` and ``meter`` appear when expanded (line
    item search)."""

    id: str
    subscription_id: str
    customer_id: str
    entity_type: str
    entity_id: str
    plan_display_name: str | None
    display_name: str | None
    price_id: str
    price_type: PriceType
    price_unit: str | None
    price_unit_id: str | None
    meter_id: str | None
    meter_display_name: str | None
    quantity: DecimalString
    currency: str
    billing_period: BillingPeriod
    billing_period_count: int
    invoice_cadence: InvoiceCadence
    start_date: Timestamp | None
    end_date: Timestamp | None
    subscription_phase_id: str | None
    addon_association_id: str | None
    metadata: dict[str, str]
    commitment_amount: DecimalString | None
    commitment_quantity: DecimalString | None
    commitment_type: str | None
    commitment_duration: BillingPeriod | None
    commitment_overage_factor: DecimalString | None
    commitment_true_up_enabled: bool
    commitment_windowed: bool
    commitment_time_buckets: list[dict[str, Any]]
    tenant_id: str
    environment_id: str
    status: Status
    created_at: Timestamp
    updated_at: Timestamp
    created_by: str
    updated_by: str
    price: PriceResponse | None = None
    meter: MeterResponse | None = None


class SubscriptionResponse(EnvironmentRecordResponse):
    """A customer's subscription to a plan. ``line_items`` is left out by
    ``POST /subscriptions/search`` with ``with_line_items: false``."""

    lookup_key: str | None
    plan_id: str
    customer_id: str
    invoicing_customer_id: str | None
    parent_subscription_id: str | None
    gateway_payment_method_id: str | None
    subscription_status: SubscriptionStatus
    subscription_type: SubscriptionType
    pause_status: PauseStatus
    active_pause_id: str | None
    billing_cadence: BillingCadence
    billing_cycle: BillingCycle
    billing_period: BillingPeriod
    billing_period_count: int
    billing_anchor: Timestamp
    currency: str
    timezone: str
    start_date: Timestamp
    end_date: Timestamp | None
    trial_start: Timestamp | None
    trial_end: Timestamp | None
    current_period_start: Timestamp
    current_period_end: Timestamp
    cancel_at: Timestamp | None
    cancelled_at: Timestamp | None
    cancel_at_period_end: bool
    collection_method: CollectionMethod
    payment_behavior: PaymentBehavior
    payment_terms: PaymentTerms | None
    proration_behavior: ProrationBehavior
    commitment_amount: DecimalString | None
    commitment_duration: BillingPeriod | None
    overage_factor: DecimalString | None
    auto_invoice_threshold: DecimalString | None
    enable_true_up: bool
    metadata: dict[str, str]
    line_items: list[SubscriptionLineItemResponse] = []
    synced_price_sequence: int
    version: int
    #: Only on ``POST /subscriptions/search`` with ``expand`` naming ``entitlements``.
    entitlements: list[AggregatedFeatureResponse] = []
    #: Only on ``POST /subscriptions`` with ``checkout``: the session the draft waits for.
    checkout_session: CheckoutSessionResponse | None = None


class CouponAssociationResponse(EnvironmentRecordResponse):
    """A coupon attached to a subscription (``subscription_line_item_id`` null) or to one of its
    line items, discounting from ``start_date`` until ``end_date`` (null: open). ``coupon`` and
    ``subscription_line_item`` appear when expanded (the single read always has them)."""

    coupon_id: str
    subscription_id: str
    subscription_line_item_id: str | None
    subscription_phase_id: str | None
    start_date: Timestamp
    end_date: Timestamp | None
    metadata: dict[str, str]
    coupon: CouponResponse | None = None
    subscription_line_item: SubscriptionLineItemResponse | None = None


class ListCouponAssociationsResponse(WireModel):
    items: list[CouponAssociationResponse]
    pagination: PaginationResponse


class SubscriptionResponseV2(SubscriptionResponse):
    """``GET /subscriptions/{id}/v2``: ``line_items`` only when ``subscription_line_items`` is
    expanded; ``coupon_associations`` (live, with their coupons), ``credit_grants`` (the
    subscription's own) and ``phases`` (live, in order of start) only when expanded; ``pauses``
    (all of them) while the subscription has a pause running or scheduled;
    ``plan_prices_out_of_sync`` when the plan has prices its lines lack."""

    plan_prices_out_of_sync: bool
    coupon_associations: list[CouponAssociationResponse] = []
    credit_grants: list[CreditGrantResponse] = []
    phases: list[SubscriptionPhaseResponse] = []
    pauses: list[SubscriptionPauseResponse] = []


class ListSubscriptionsResponse(WireModel):
    items: list[SubscriptionResponse]
    pagination: PaginationResponse


class CouponApplicationResponse(EnvironmentRecordResponse):
    """One coupon that discounted an invoice: ``original_price`` - ``discounted_amount`` =
    ``final_price`` (decimal strings in ``currency``); ``invoice_line_item_id`` names the line of a
    line-item coupon (null for an invoice-level one); ``coupon_snapshot`` is the coupon as it was."""

    invoice_id: str
    invoice_line_item_id: str | None
    subscription_id: str | None
    coupon_id: str
    coupon_association_id: str | None
    coupon_snapshot: dict[str, Any]
    discount_type: CouponType
    discount_percentage: DecimalString | None
    discounted_amount: DecimalString
    original_price: DecimalString
    final_price: DecimalString
    currency: str
    applied_at: Timestamp
    metadata: dict[str, str]


class CommitmentInfoResponse(WireModel):
    """A committed line's commitment and what it did this period (amounts rounded, in currency)."""

    type: str
    amount: DecimalString | None
    quantity: DecimalString | None
    duration: BillingPeriod
    is_windowed: bool
    overage_factor: DecimalString
    true_up_enabled: bool
    computed_commitment_utilized_amount: DecimalString
    computed_overage_amount: DecimalString
    computed_true_up_amount: DecimalString


class InvoiceLineItemResponse(WireModel):
    """One line of an invoice: ``amount`` before discounts and credits, ``quantity`` billed (usage
    after allowances for USAGE lines), ``trace`` how the amount was computed. The fields from
    ``invoice_id`` on are the invoice's."""

    id: str
    subscription_line_item_id: str | None
    parent_line_item_id: str | None
    entity_type: str | None
    entity_id: str | None
    plan_display_name: str | None
    display_name: str
    meter_id: str | None
    meter_display_name: str | None
    price_id: str | None
    price_type: PriceType | None
    invoice_cadence: InvoiceCadence | None
    price_unit: str | None
    price_unit_id: str | None
    price_unit_amount: DecimalString | None
    quantity: DecimalString
    amount: DecimalString
    adjusted_entitlement_quantity: DecimalString | None
    invoice_level_discount: DecimalString
    line_item_discount: DecimalString
    prepaid_credits_applied: DecimalString
    period_start: Timestamp
    period_end: Timestamp
    metadata: dict[str, str]
    commitment_info: CommitmentInfoResponse | None
    usage_event_count: int | None
    trace: dict[str, Any]
    invoice_id: str
    customer_id: str
    subscription_id: str | None
    currency: str
    tenant_id: str
    environment_id: str
    status: Status
    created_at: Timestamp
    updated_at: Timestamp
    created_by: str
    updated_by: str


class TaxAppliedResponse(EnvironmentRecordResponse):
    """One tax line of an invoice (the reference's ``TaxAppliedResponse``): ``tax_amount``
    charged by ``tax_rate_id`` (embedded as it was when applied) on ``taxable_amount`` (subtotal
    minus discounts), brought by ``tax_association_id`` (none when the invoice named the rate)."""

    tax_rate_id: str
    tax_association_id: str | None
    entity_type: TaxRateEntityType
    entity_id: str
    taxable_amount: DecimalString
    tax_amount: DecimalString
    currency: str
    applied_at: Timestamp
    idempotency_key: str
    tax_rate: TaxRateResponse | None
    metadata: dict[str, str]


class InvoiceResponse(EnvironmentRecordResponse):
    """An invoice; money fields are decimal strings in ``currency``."""

    invoice_number: str | None
    invoice_type: InvoiceType
    invoice_status: InvoiceStatus
    payment_status: PaymentStatus
    customer_id: str
    subscription_id: str | None
    subscription_customer_id: str | None
    currency: str
    description: str | None
    billing_reason: BillingReason
    billing_period: BillingPeriod | None
    billing_sequence: int | None
    subtotal: DecimalString
    total: DecimalString
    total_discount: DecimalString
    total_tax: DecimalString
    total_prepaid_credits_applied: DecimalString
    adjustment_amount: DecimalString
    amount_due: DecimalString
    amount_paid: DecimalString
    amount_remaining: DecimalString
    overpaid_amount: DecimalString
    refunded_amount: DecimalString
    issue_date: Timestamp | None
    due_date: Timestamp | None
    finalized_at: Timestamp | None
    paid_at: Timestamp | None
    voided_at: Timestamp | None
    period_start: Timestamp | None
    period_end: Timestamp | None
    last_computed_at: Timestamp | None
    is_manually_edited: bool
    idempotency_key: str | None
    invoice_pdf_url: str | None
    recalculated_invoice_id: str | None
    coupon_applications: list[CouponApplicationResponse]
    taxes: list[TaxAppliedResponse]
    line_items: list[InvoiceLineItemResponse]
    metadata: dict[str, str]
    version: int


class ListInvoicesResponse(WireModel):
    items: list[InvoiceResponse]
    pagination: PaginationResponse
