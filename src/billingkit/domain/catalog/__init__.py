"""The catalogue's stored resources: what can be sold and how it is priced.

Each resource is an immutable pydantic model with the spec's fields. Business rules that span
fields (a USAGE price needs a meter, a metered feature needs a meter, ...) are plain functions
(``check_price``, ``check_meter``, ...) that reuse the billing core's calculators, so a price the
catalogue accepts is exactly a price the core can compute.
"""

from billingkit.domain.catalog.coupons import MAX_REDEMPTIONS, Coupon, CouponCadence, CouponType, check_coupon
from billingkit.domain.catalog.credit_grants import (
    CreditGrant,
    CreditGrantCadence,
    CreditGrantExpiryType,
    CreditGrantExpiryUnit,
    CreditGrantPeriod,
    CreditGrantScope,
    check_credit_grant,
)
from billingkit.domain.catalog.entitlements import (
    Entitlement,
    EntitlementAggregationMode,
    EntitlementEntityType,
    EntitlementGrantAllocation,
    EntitlementGrantDurationUnit,
    EntitlementGrantMeasure,
    UsageResetPeriod,
    check_entitlement,
)
from billingkit.domain.catalog.features import (
    AlertCondition,
    AlertSettings,
    AlertThreshold,
    Feature,
    FeatureType,
    ReportingUnit,
    check_feature,
)
from billingkit.domain.catalog.groups import Group, GroupEntityType
from billingkit.domain.catalog.meters import (
    Meter,
    MeterAggregation,
    MeterFilterValue,
    ResetUsage,
    check_meter,
)
from billingkit.domain.catalog.plans import Addon, AddonDetail, Plan, PlanDetail
from billingkit.domain.catalog.price_units import PriceUnit
from billingkit.domain.catalog.prices import (
    CRITICAL_PRICE_FIELDS,
    BillingCadence,
    InvoiceCadence,
    Price,
    PriceEntityType,
    PriceTier,
    PriceTransform,
    PriceType,
    PriceUnitType,
    check_price,
    display_amount,
)
from billingkit.domain.catalog.tax_associations import (
    DEFAULT_TAX_PRIORITY,
    TaxAssociation,
    TaxRateEntityType,
    applicable_tax_rates,
    tax_association_applies,
)
from billingkit.domain.catalog.tax_rates import (
    TaxRate,
    TaxRateScope,
    TaxRateStatus,
    TaxRateType,
    check_tax_rate,
)

__all__ = [
    "CRITICAL_PRICE_FIELDS",
    "DEFAULT_TAX_PRIORITY",
    "MAX_REDEMPTIONS",
    "Addon",
    "AddonDetail",
    "AlertCondition",
    "AlertSettings",
    "AlertThreshold",
    "BillingCadence",
    "Coupon",
    "CouponCadence",
    "CouponType",
    "CreditGrant",
    "CreditGrantCadence",
    "CreditGrantExpiryType",
    "CreditGrantExpiryUnit",
    "CreditGrantPeriod",
    "CreditGrantScope",
    "Entitlement",
    "EntitlementAggregationMode",
    "EntitlementEntityType",
    "EntitlementGrantAllocation",
    "EntitlementGrantDurationUnit",
    "EntitlementGrantMeasure",
    "Feature",
    "FeatureType",
    "Group",
    "GroupEntityType",
    "InvoiceCadence",
    "Meter",
    "MeterAggregation",
    "MeterFilterValue",
    "Plan",
    "PlanDetail",
    "Price",
    "PriceEntityType",
    "PriceTier",
    "PriceTransform",
    "PriceType",
    "PriceUnit",
    "PriceUnitType",
    "ReportingUnit",
    "ResetUsage",
    "TaxAssociation",
    "TaxRate",
    "TaxRateEntityType",
    "TaxRateScope",
    "TaxRateStatus",
    "TaxRateType",
    "UsageResetPeriod",
    "applicable_tax_rates",
    "check_coupon",
    "check_credit_grant",
    "check_entitlement",
    "check_feature",
    "check_meter",
    "check_price",
    "check_tax_rate",
    "display_amount",
    "tax_association_applies",
]
