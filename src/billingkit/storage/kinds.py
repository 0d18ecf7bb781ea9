"""What each store needs to know about each resource kind: model, scope level, uniqueness rules.

Both adapters read this table, so the memory store enforces exactly the uniqueness rules that the SQL
store's unique indexes enforce (proven by the shared contract tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from billingkit.domain.access import Account, ApiKey, Environment, Tenant
from billingkit.domain.catalog import (
    Addon,
    Coupon,
    CreditGrant,
    Entitlement,
    Feature,
    Group,
    Meter,
    Plan,
    Price,
    PriceUnit,
    TaxRate,
)
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.resources import Record
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import WalletTransaction
from billingkit.errors import ValidationError
from billingkit.ports import CounterStore, EventStore, Ledger, Repository, UsageStore

__all__ = ["KINDS", "Kind", "Level", "RepositoryAttributes", "Unique", "check_count", "due_field"]


def check_count(count: int) -> None:
    """Counters advance by at least one (``CounterStore.next``)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationError(f"a counter advances by a positive whole number, not {count!r}", field="count")


class Level(Enum):
    GLOBAL = "global"
    TENANT = "tenant"
    ENVIRONMENT = "environment"


@dataclass(frozen=True, slots=True)
class Unique:
    """Fields whose values must be unique within the scope; ``live_only`` ignores archived rows."""

    fields: tuple[str, ...]
    live_only: bool = True


@dataclass(frozen=True, slots=True)
class Kind:
    name: str  # repository attribute on the unit of work and SQL table name
    label: str  # for messages: "customer"
    model: type[Record]
    level: Level
    unique: tuple[Unique, ...] = ()
    versioned: bool = False
    # Rows are added, read and summed, never changed: every store refuses update and
    # update_many with AppendOnly, and the unit of work hands out a Ledger.
    append_only: bool = False
    # The field holding when a stored item next has due work (``UnitOfWork.claim_due``), or None
    # when the kind carries none. The due-work runner needs a handler for every kind that sets it.
    due_at: str | None = None


def _catalog(name: str, label: str, model: type[Record], unique_live: tuple[str, ...] = ()) -> Kind:
    """An environment-owned catalogue kind, optionally unique on ``unique_live`` among live rows."""
    return Kind(name, label, model, Level.ENVIRONMENT, unique=(Unique(unique_live),) if unique_live else ())


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("tenants", "tenant", Tenant, Level.GLOBAL),
        Kind("environments", "environment", Environment, Level.TENANT),
        Kind(
            "accounts",
            "user",
            Account,
            Level.TENANT,
            unique=(Unique(("email",)),),
        ),
        Kind(
            "api_keys",
            "api key",
            ApiKey,
            Level.ENVIRONMENT,
            unique=(Unique(("key_hash",), live_only=False),),
        ),
        Kind(
            "customers",
            "customer",
            Customer,
            Level.ENVIRONMENT,
            unique=(Unique(("external_id",)),),
        ),
        Kind("notifications", "notification event", NotificationEvent, Level.ENVIRONMENT),
        _catalog("plans", "plan", Plan, ("lookup_key",)),
        _catalog("addons", "add-on", Addon, ("lookup_key",)),
        _catalog("prices", "price", Price, ("lookup_key",)),
        _catalog("price_units", "price unit", PriceUnit, ("code",)),
        _catalog("groups", "group", Group, ("lookup_key",)),
        _catalog("meters", "meter", Meter),
        _catalog("features", "feature", Feature, ("lookup_key",)),
        _catalog("entitlements", "entitlement", Entitlement, ("entity_type", "entity_id", "feature_id")),
        _catalog("credit_grants", "credit grant", CreditGrant),
        _catalog("coupons", "coupon", Coupon, ("coupon_code",)),
        _catalog("tax_rates", "tax rate", TaxRate, ("code",)),
        Kind(
            "subscriptions",
            "subscription",
            Subscription,
            Level.ENVIRONMENT,
            versioned=True,
            due_at="next_run_at",
        ),
        Kind(
            "invoices",
            "invoice",
            Invoice,
            Level.ENVIRONMENT,
            # The second rule is what makes billing exactly-once: one invoice per subscription,
            # period and billing reason, whoever runs the billing and however often.
            unique=(
                Unique(("invoice_number",)),
                Unique(("subscription_id", "period_start", "period_end", "billing_reason")),
            ),
            versioned=True,
        ),
        # Money that moves: one row per movement, keyed by its cause (archived rows keep their
        # key, so a cause can never be applied twice).
        Kind(
            "wallet_transactions",
            "wallet transaction",
            WalletTransaction,
            Level.ENVIRONMENT,
            unique=(Unique(("idempotency_key",), live_only=False),),
            append_only=True,
        ),
    )
}


class RepositoryAttributes:
    """Typed declarations of the repositories a unit of work hands out (adapters create them
    on first access in ``__getattr__``). Keep in step with ``KINDS``; a test checks it."""

    tenants: Repository[Tenant]
    environments: Repository[Environment]
    accounts: Repository[Account]
    api_keys: Repository[ApiKey]
    customers: Repository[Customer]
    notifications: Repository[NotificationEvent]
    plans: Repository[Plan]
    addons: Repository[Addon]
    prices: Repository[Price]
    price_units: Repository[PriceUnit]
    groups: Repository[Group]
    meters: Repository[Meter]
    features: Repository[Feature]
    entitlements: Repository[Entitlement]
    credit_grants: Repository[CreditGrant]
    coupons: Repository[Coupon]
    tax_rates: Repository[TaxRate]
    subscriptions: Repository[Subscription]
    invoices: Repository[Invoice]
    wallet_transactions: Ledger[WalletTransaction]
    events: EventStore
    usage: UsageStore
    counters: CounterStore


def due_field(name: str, limit: int) -> str:
    """The due field of the kind ``UnitOfWork.claim_due`` was asked for, after checking that the
    kind carries due work and that the limit is a positive whole number."""
    kind = KINDS.get(name)
    if kind is None or kind.due_at is None:
        carrying = sorted(k.name for k in KINDS.values() if k.due_at is not None)
        raise ValidationError(
            f"{name!r} carries no due work; kinds that do: {', '.join(carrying)}", field="kind"
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"a claim takes a positive whole number of items, not {limit!r}", field="limit")
    return kind.due_at
