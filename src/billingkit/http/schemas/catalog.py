"""Answers of ``/v1/plans``, ``/v1/addons``, ``/v1/prices``, ``/v1/prices/units``,
``/v1/entitlements`` and ``/v1/creditgrants``: what is sold, at what price, with what grants;
and the credit grant applications those grants make (``.../grants/upcoming``)."""

from __future__ import annotations

from typing import Any

from billingkit import (
    BillingCadence,
    BillingModel,
    BillingPeriod,
    CreditGrantCadence,
    CreditGrantExpiryType,
    CreditGrantExpiryUnit,
    CreditGrantPeriod,
    CreditGrantScope,
    EntitlementAggregationMode,
    EntitlementEntityType,
    EntitlementGrantAllocation,
    EntitlementGrantDurationUnit,
    EntitlementGrantMeasure,
    FeatureType,
    InvoiceCadence,
    PriceEntityType,
    PriceType,
    PriceUnitType,
    SubscriptionStatus,
    TierMode,
    UsageResetPeriod,
)
from billingkit.domain.credit_grant_applications import ApplicationReason, ApplicationStatus
from billingkit.http.schemas.base import (
    DecimalString,
    EnvironmentRecordResponse,
    PaginationResponse,
    Timestamp,
    WireModel,
)
from billingkit.http.schemas.features import FeatureResponse, GroupResponse, MeterResponse

__all__ = [
    "AddonResponse",
    "AddonSummaryResponse",
    "CreateBulkEntitlementResponse",
    "CreateBulkPriceResponse",
    "CreditGrantApplicationResponse",
    "CreditGrantResponse",
    "EntitlementResponse",
    "ListAddonsResponse",
    "ListCreditGrantApplicationsResponse",
    "ListCreditGrantsResponse",
    "ListEntitlementsResponse",
    "ListPlansResponse",
    "ListPriceUnitsResponse",
    "ListPricesResponse",
    "PlanResponse",
    "PlanSummaryResponse",
    "PriceResponse",
    "PriceTierResponse",
    "PriceTransformResponse",
    "PriceUnitResponse",
]


class PriceUnitResponse(EnvironmentRecordResponse):
    """One ``code`` unit is worth ``conversion_rate`` units of ``base_currency``."""

    code: str
    name: str
    symbol: str
    base_currency: str
    conversion_rate: DecimalString
    metadata: dict[str, str]


class ListPriceUnitsResponse(WireModel):
    items: list[PriceUnitResponse]
    pagination: PaginationResponse


class PlanSummaryResponse(EnvironmentRecordResponse):
    """A plan without its prices, entitlements and credit grants (as expansions show it)."""

    name: str
    description: str | None
    lookup_key: str | None
    display_order: int
    metadata: dict[str, str]


class AddonSummaryResponse(EnvironmentRecordResponse):
    """An add-on without its prices, entitlements and credit grants (as expansions show it);
    its ``metadata`` values may be any JSON."""

    name: str
    lookup_key: str
    description: str | None
    metadata: dict[str, Any]


class PriceTierResponse(WireModel):
    """Quantities up to ``up_to`` (inclusive; null on the last, open tier)."""

    up_to: int | None
    unit_amount: DecimalString
    flat_amount: DecimalString | None


class PriceTransformResponse(WireModel):
    """PACKAGE size: quantities are divided by ``divide_by`` and rounded ``up`` or ``down``."""

    divide_by: int
    round: str


class PriceResponse(EnvironmentRecordResponse):
    """A price of a plan, add-on or subscription. ``meter``, ``pricing_unit``, ``plan``, ``addon``
    and ``group`` appear only when expanded (``GET /prices/{id}`` expands the first two), null
    when there is none."""

    entity_type: PriceEntityType
    entity_id: str
    type: PriceType
    billing_model: BillingModel
    billing_cadence: BillingCadence
    billing_period: BillingPeriod
    billing_period_count: int
    invoice_cadence: InvoiceCadence
    currency: str
    amount: DecimalString
    tier_mode: TierMode | None
    tiers: list[PriceTierResponse] | None
    transform_quantity: PriceTransformResponse | None
    meter_id: str | None
    min_quantity: DecimalString | None
    trial_period_days: int
    display_name: str | None
    description: str | None
    lookup_key: str | None
    group_id: str | None
    parent_price_id: str | None
    sequence: int
    start_date: Timestamp | None
    end_date: Timestamp | None
    price_unit_type: PriceUnitType
    price_unit_id: str | None
    price_unit: str | None
    price_unit_amount: DecimalString | None
    price_unit_tiers: list[PriceTierResponse] | None
    conversion_rate: DecimalString | None
    metadata: dict[str, str]
    display_amount: str
    display_price_unit_amount: str | None
    meter: MeterResponse | None = None
    pricing_unit: PriceUnitResponse | None = None
    plan: PlanSummaryResponse | None = None
    addon: AddonSummaryResponse | None = None
    group: GroupResponse | None = None


class ListPricesResponse(WireModel):
    items: list[PriceResponse]
    pagination: PaginationResponse


class CreateBulkPriceResponse(WireModel):
    items: list[PriceResponse]


class EntitlementResponse(EnvironmentRecordResponse):
    """One feature granted by a plan, add-on or subscription. ``grant_quota`` is a whole number
    written as a decimal string. ``feature``, ``plan`` and ``addon`` appear only when expanded."""

    entity_type: EntitlementEntityType
    entity_id: str
    plan_id: str | None
    feature_id: str
    feature_type: FeatureType
    is_enabled: bool
    usage_limit: int | None
    usage_reset_period: UsageResetPeriod | None
    is_soft_limit: bool
    static_value: str | None
    config_value: dict[str, Any] | None
    aggregation_mode: EntitlementAggregationMode | None
    grant_measure: EntitlementGrantMeasure | None
    grant_quota: DecimalString | None
    grant_duration_unit: EntitlementGrantDurationUnit | None
    grant_duration_value: int | None
    grant_allocation_behavior: EntitlementGrantAllocation | None
    parent_entitlement_id: str | None
    display_order: int
    start_date: Timestamp | None
    end_date: Timestamp | None
    feature: FeatureResponse | None = None
    plan: PlanSummaryResponse | None = None
    addon: AddonSummaryResponse | None = None


class ListEntitlementsResponse(WireModel):
    items: list[EntitlementResponse]
    pagination: PaginationResponse


class CreateBulkEntitlementResponse(WireModel):
    items: list[EntitlementResponse]


class CreditGrantResponse(EnvironmentRecordResponse):
    """``credits`` granted to the owner ``scope`` names (``plan_id``, ``addon_id`` or
    ``subscription_id``), once or every ``period``."""

    name: str
    scope: CreditGrantScope
    plan_id: str | None
    addon_id: str | None
    subscription_id: str | None
    cadence: CreditGrantCadence
    credits: DecimalString
    period: CreditGrantPeriod | None
    period_count: int | None
    expiration_type: CreditGrantExpiryType
    expiration_duration: int | None
    expiration_duration_unit: CreditGrantExpiryUnit | None
    priority: int | None
    conversion_rate: DecimalString | None
    topup_conversion_rate: DecimalString | None
    credit_grant_anchor: Timestamp | None
    start_date: Timestamp | None
    end_date: Timestamp | None
    metadata: dict[str, str]


class ListCreditGrantsResponse(WireModel):
    items: list[CreditGrantResponse]
    pagination: PaginationResponse


class CreditGrantApplicationResponse(EnvironmentRecordResponse):
    """One grant's ``credits`` for one subscription and period ``[period_start, period_end)``
    (``period_end`` null: a ONETIME grant), due at ``scheduled_for``: ``pending`` until then,
    then ``applied`` (``applied_at``), ``skipped``, ``cancelled`` or ``failed`` (``failure_reason``
    says why); ``retry_count`` counts deferrals (a draft or incomplete subscription)."""

    credit_grant_id: str
    subscription_id: str
    scheduled_for: Timestamp
    period_start: Timestamp
    period_end: Timestamp | None
    applied_at: Timestamp | None
    application_status: ApplicationStatus
    application_reason: ApplicationReason
    credits: DecimalString
    subscription_status_at_application: SubscriptionStatus | None
    retry_count: int
    failure_reason: str | None
    idempotency_key: str
    metadata: dict[str, str]


class ListCreditGrantApplicationsResponse(WireModel):
    items: list[CreditGrantApplicationResponse]
    pagination: PaginationResponse


class PlanResponse(PlanSummaryResponse):
    """A plan with its live prices, entitlements and credit grants."""

    prices: list[PriceResponse]
    entitlements: list[EntitlementResponse]
    credit_grants: list[CreditGrantResponse]


class ListPlansResponse(WireModel):
    items: list[PlanResponse]
    pagination: PaginationResponse


class AddonResponse(AddonSummaryResponse):
    """An add-on with its live prices, entitlements and credit grants."""

    prices: list[PriceResponse]
    entitlements: list[EntitlementResponse]
    credit_grants: list[CreditGrantResponse]


class ListAddonsResponse(WireModel):
    items: list[AddonResponse]
    pagination: PaginationResponse
