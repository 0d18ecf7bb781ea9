"""billingkit: embeddable subscription and usage billing.

>>> from billingkit import Billing
>>> billing = Billing()                                  # in memory, system clock
>>> setup = billing.bootstrap(tenant_name="Acme")
>>> env = setup.environments[0][0]
>>> customers = billing.scope(setup.tenant.id, env.id).customers
>>> customers.create(external_id="c-1", name="Ada Lovelace").name
'Ada Lovelace'
"""

from billingkit.clock import SystemClock, TestClock
from billingkit.domain.access import (
    Account,
    AccountType,
    Actor,
    ApiKey,
    Environment,
    EnvironmentType,
    Role,
    Tenant,
)
from billingkit.domain.catalog import (
    Addon,
    AddonDetail,
    AlertCondition,
    BillingCadence,
    Coupon,
    CouponCadence,
    CouponType,
    CreditGrant,
    CreditGrantCadence,
    CreditGrantExpiryType,
    CreditGrantExpiryUnit,
    CreditGrantPeriod,
    CreditGrantScope,
    Entitlement,
    EntitlementAggregationMode,
    EntitlementEntityType,
    EntitlementGrantAllocation,
    EntitlementGrantDurationUnit,
    EntitlementGrantMeasure,
    Feature,
    FeatureType,
    Group,
    GroupEntityType,
    Meter,
    Plan,
    PlanDetail,
    Price,
    PriceEntityType,
    PriceType,
    PriceUnit,
    PriceUnitType,
    ResetUsage,
    TaxAssociation,
    TaxRate,
    TaxRateEntityType,
    TaxRateScope,
    TaxRateStatus,
    TaxRateType,
    UsageResetPeriod,
)
from billingkit.domain.credit_notes import (
    CreditNote,
    CreditNoteLineItem,
    CreditNoteReason,
    CreditNoteStatus,
    CreditNoteType,
    RefundTarget,
)
from billingkit.domain.customers import Customer
from billingkit.domain.entitlement_checks import EntitlementCheck
from billingkit.domain.invoices import (
    BillingReason,
    Invoice,
    InvoiceCouponApplication,
    InvoiceLineItem,
    InvoiceStatus,
    InvoiceTax,
    InvoiceType,
    PaymentStatus,
)
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.periods import BillingCycle, BillingPeriod, InvoiceCadence
from billingkit.domain.pricing import BillingModel, QuantityRounding, TierMode
from billingkit.domain.queries import Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import (
    CollectionMethod,
    PauseStatus,
    PaymentBehavior,
    PaymentTerms,
    ProrationBehavior,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.domain.usage import AggregationType, BucketSize
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionStatus,
    TransactionType,
    Wallet,
    WalletPriceType,
    WalletStatus,
    WalletTransaction,
    WalletType,
)
from billingkit.errors import (
    AlreadyExists,
    BillingError,
    IdempotencyConflict,
    InternalError,
    InvalidOperation,
    NotFound,
    PermissionDenied,
    TooManyRequests,
    Unauthorized,
    ValidationError,
    VersionConflict,
)
from billingkit.facade import Billing, Scoped
from billingkit.facade.throttle import LoginThrottle
from billingkit.facade.worker import Worker
from billingkit.providers import MemoryWebhookTransport, RazorpayPaymentProvider, SandboxPaymentProvider
from billingkit.services.backtest import Backtest
from billingkit.services.billing_runs import RunReport
from billingkit.services.settings import Settings
from billingkit.simulation import SimulationResult, simulate
from billingkit.storage.memory import MemoryStorage

__all__ = [
    "Account",
    "AccountType",
    "Actor",
    "Addon",
    "AddonDetail",
    "AggregationType",
    "AlertCondition",
    "AlreadyExists",
    "ApiKey",
    "Backtest",
    "Billing",
    "BillingCadence",
    "BillingCycle",
    "BillingError",
    "BillingModel",
    "BillingPeriod",
    "BillingReason",
    "BucketSize",
    "CollectionMethod",
    "Coupon",
    "CouponCadence",
    "CouponType",
    "CreditGrant",
    "CreditGrantCadence",
    "CreditGrantExpiryType",
    "CreditGrantExpiryUnit",
    "CreditGrantPeriod",
    "CreditGrantScope",
    "CreditNote",
    "CreditNoteLineItem",
    "CreditNoteReason",
    "CreditNoteStatus",
    "CreditNoteType",
    "Customer",
    "Entitlement",
    "EntitlementAggregationMode",
    "EntitlementCheck",
    "EntitlementEntityType",
    "EntitlementGrantAllocation",
    "EntitlementGrantDurationUnit",
    "EntitlementGrantMeasure",
    "Environment",
    "EnvironmentType",
    "Feature",
    "FeatureType",
    "Filter",
    "Group",
    "GroupEntityType",
    "IdempotencyConflict",
    "InternalError",
    "InvalidOperation",
    "Invoice",
    "InvoiceCadence",
    "InvoiceCouponApplication",
    "InvoiceLineItem",
    "InvoiceStatus",
    "InvoiceTax",
    "InvoiceType",
    "ListQuery",
    "LoginThrottle",
    "MemoryStorage",
    "MemoryWebhookTransport",
    "Meter",
    "NotFound",
    "NotificationEvent",
    "Op",
    "Page",
    "PauseStatus",
    "PaymentBehavior",
    "PaymentStatus",
    "PaymentTerms",
    "PermissionDenied",
    "Plan",
    "PlanDetail",
    "Price",
    "PriceEntityType",
    "PriceType",
    "PriceUnit",
    "PriceUnitType",
    "ProrationBehavior",
    "QuantityRounding",
    "RazorpayPaymentProvider",
    "RefundTarget",
    "ResetUsage",
    "Role",
    "RunReport",
    "SandboxPaymentProvider",
    "Scoped",
    "Settings",
    "SimulationResult",
    "Sort",
    "SqlStorage",
    "Status",
    "Subscription",
    "SubscriptionLineItem",
    "SubscriptionStatus",
    "SubscriptionType",
    "SystemClock",
    "TaxAssociation",
    "TaxRate",
    "TaxRateEntityType",
    "TaxRateScope",
    "TaxRateStatus",
    "TaxRateType",
    "Tenant",
    "TestClock",
    "TierMode",
    "TooManyRequests",
    "TransactionReason",
    "TransactionStatus",
    "TransactionType",
    "Unauthorized",
    "UsageResetPeriod",
    "ValidationError",
    "VersionConflict",
    "Wallet",
    "WalletPriceType",
    "WalletStatus",
    "WalletTransaction",
    "WalletType",
    "Worker",
    "simulate",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # SqlStorage pulls in SQLAlchemy engines and Alembic; load it only when asked for.
    if name == "SqlStorage":
        from billingkit.storage.sql import SqlStorage

        return SqlStorage
    raise AttributeError(f"module 'billingkit' has no attribute {name!r}")
