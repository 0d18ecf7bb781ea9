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
from billingkit.domain.access import Account, Actor, ApiKey, Environment, Role, Tenant
from billingkit.domain.catalog import (
    Addon,
    AddonDetail,
    Coupon,
    CreditGrant,
    Entitlement,
    Feature,
    Group,
    Meter,
    Plan,
    PlanDetail,
    Price,
    PriceUnit,
    TaxRate,
)
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice, InvoiceLineItem
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.errors import (
    AlreadyExists,
    BillingError,
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
from billingkit.services.billing_runs import RunReport
from billingkit.storage.memory import MemoryStorage

__all__ = [
    "Account",
    "Actor",
    "Addon",
    "AddonDetail",
    "AlreadyExists",
    "ApiKey",
    "Billing",
    "BillingError",
    "Coupon",
    "CreditGrant",
    "Customer",
    "Entitlement",
    "Environment",
    "Feature",
    "Filter",
    "Group",
    "InternalError",
    "InvalidOperation",
    "Invoice",
    "InvoiceLineItem",
    "ListQuery",
    "LoginThrottle",
    "MemoryStorage",
    "Meter",
    "NotFound",
    "NotificationEvent",
    "Op",
    "Page",
    "PermissionDenied",
    "Plan",
    "PlanDetail",
    "Price",
    "PriceUnit",
    "Role",
    "RunReport",
    "Scoped",
    "Sort",
    "SqlStorage",
    "Status",
    "Subscription",
    "SubscriptionLineItem",
    "SystemClock",
    "TaxRate",
    "Tenant",
    "TestClock",
    "TooManyRequests",
    "Unauthorized",
    "ValidationError",
    "VersionConflict",
    "Worker",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # SqlStorage pulls in SQLAlchemy engines and Alembic; load it only when asked for.
    if name == "SqlStorage":
        from billingkit.storage.sql import SqlStorage

        return SqlStorage
    raise AttributeError(f"module 'billingkit' has no attribute {name!r}")
