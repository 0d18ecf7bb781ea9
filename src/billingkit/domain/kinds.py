"""Every kind of resource billingkit stores, declared once.

Per kind: its model, the scope it lives in, its uniqueness rules, whether updates check a version,
whether it is append-only (a ledger), which field says when it has due work, and which fields its
search requests may filter on (with which operators). Everything that handles stored kinds reads this table:

- both stores (``storage.memory``, ``storage.sql``): scope checks, uniqueness, versions;
- the storage contract suite (``billingkit.testing.contracts``): one case per kind and rule;
- the services: each search request names its kind, and its declared filters are checked against
  ``searchable`` when the request class is made (``billingkit.services.search``);
- ``tests/architecture/test_kinds.py``: fails when a kind is registered here and not in the
  other places it needs (repository attribute, SQL table, migrations, contract sample...).

It lives in the domain, not in ``storage``, so that services (which may import only ``domain``
and ``ports``) can read it; it is plain data about domain models and imports nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from billingkit.domain.access import Account, ApiKey, Environment, Tenant
from billingkit.domain.addon_associations import AddonAssociation
from billingkit.domain.alerts import AlertLog, AlertSetting
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
    TaxAssociation,
    TaxRate,
)
from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.costsheets import Costsheet
from billingkit.domain.coupon_associations import CouponAssociation
from billingkit.domain.credit_grant_applications import CreditGrantApplication
from billingkit.domain.credit_notes import CreditNote
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.line_item_owners import LineItemOwner
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.payments import Payment
from billingkit.domain.queries import Op
from billingkit.domain.resources import Record
from billingkit.domain.subscription_changes import SubscriptionChange
from billingkit.domain.subscription_pauses import SubscriptionPause
from billingkit.domain.subscription_phases import SubscriptionPhase
from billingkit.domain.subscription_schedules import SubscriptionSchedule
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.tasks import ExportPart, ScheduledTask, Task
from billingkit.domain.wallets import Wallet, WalletTransaction
from billingkit.domain.webhooks import WebhookDelivery, WebhookEndpoint

__all__ = ["COMMON_SEARCHABLE", "KINDS", "Kind", "Level", "Searchable", "Unique", "searchable"]


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
class Searchable:
    """``field`` may be filtered with ``ops`` by search requests. ``metadata`` stands for every
    ``metadata.<key>``."""

    field: str
    ops: frozenset[Op]


#: What every kind answers: the base search request's ``start_time``/``end_time`` (creation time
#: in ``[start, end)``) and lists of ids.
COMMON_SEARCHABLE = (
    Searchable("id", frozenset({Op.IN})),
    Searchable("created_at", frozenset({Op.GTE, Op.LT})),
)


def searchable(**fields: Op | Iterable[Op]) -> tuple[Searchable, ...]:
    """The common filters plus ``fields``: ``searchable(code=Op.IN, scope=(Op.EQ, Op.IN))``."""
    extra = tuple(
        Searchable(name, frozenset((ops,) if isinstance(ops, Op) else ops)) for name, ops in fields.items()
    )
    return COMMON_SEARCHABLE + extra


@dataclass(frozen=True, slots=True)
class Kind:
    name: str  # repository attribute on the unit of work and key of the SQL table
    label: str  # for messages: "customer"
    model: type[Record]
    level: Level
    unique: tuple[Unique, ...] = ()
    versioned: bool = False
    # Rows are added, read and summed, never changed: every store refuses update and
    # update_many with AppendOnly, and the unit of work hands out a Ledger.
    append_only: bool = False
    searchable: tuple[Searchable, ...] = COMMON_SEARCHABLE
    # The field holding when a stored item next has due work (``UnitOfWork.claim_due``), or None
    # when the kind carries none. The due-work runner needs a handler for every kind that sets it.
    due_at: str | None = None

    def search_ops(self, field: str) -> frozenset[Op]:
        """The operators search requests may use on ``field`` (``metadata.<key>``: those of
        ``metadata``); empty when it is not searchable."""
        base = "metadata" if field.startswith("metadata.") else field
        for declared in self.searchable:
            if declared.field == base:
                return declared.ops
        return frozenset()


IN, EQ = Op.IN, Op.EQ


def _catalog(
    name: str,
    label: str,
    model: type[Record],
    unique_live: tuple[str, ...] = (),
    filters: tuple[Searchable, ...] = COMMON_SEARCHABLE,
) -> Kind:
    """An environment-owned catalogue kind, optionally unique on ``unique_live`` among live rows."""
    unique = (Unique(unique_live),) if unique_live else ()
    return Kind(name, label, model, Level.ENVIRONMENT, unique=unique, searchable=filters)


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
            searchable=searchable(type=EQ),
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
            searchable=searchable(external_id=(EQ, IN), email=EQ, metadata=EQ),
        ),
        Kind(
            "notifications",
            "notification event",
            NotificationEvent,
            Level.ENVIRONMENT,
            searchable=searchable(event_type=EQ, entity_id=EQ),
            # Handed to the webhook endpoints that want it by the webhook dispatcher
            # (services.webhook_dispatch), not by the due-work runner.
            due_at="dispatch_at",
        ),
        Kind(
            "webhook_endpoints",
            "webhook endpoint",
            WebhookEndpoint,
            Level.ENVIRONMENT,
            searchable=searchable(enabled=EQ),
        ),
        Kind(
            "webhook_deliveries",
            "webhook delivery",
            WebhookDelivery,
            Level.ENVIRONMENT,
            # Sent, and retried, by the webhook dispatcher (services.webhook_dispatch).
            due_at="next_attempt_at",
            searchable=searchable(
                endpoint_id=(EQ, IN),
                event_id=EQ,
                event_type=EQ,
                entity_id=(EQ, IN),
                delivery_status=(EQ, IN),
                next_attempt_at=(Op.GTE, Op.LT),
            ),
        ),
        _catalog("plans", "plan", Plan, ("lookup_key",), searchable(lookup_key=EQ, metadata=EQ)),
        _catalog("addons", "add-on", Addon, ("lookup_key",), searchable(lookup_key=IN)),
        _catalog(
            "prices",
            "price",
            Price,
            ("lookup_key",),
            searchable(
                entity_type=EQ,
                entity_id=(EQ, IN),
                meter_id=IN,
                billing_period=IN,
                parent_price_id=EQ,
            ),
        ),
        _catalog("price_units", "price unit", PriceUnit, ("code",), searchable(code=IN)),
        _catalog(
            "groups",
            "group",
            Group,
            ("lookup_key",),
            searchable(entity_type=EQ, lookup_key=EQ, name=Op.CONTAINS),
        ),
        _catalog("meters", "meter", Meter, filters=searchable(event_name=EQ)),
        _catalog(
            "features",
            "feature",
            Feature,
            ("lookup_key",),
            searchable(lookup_key=(EQ, IN), meter_id=IN, name=Op.CONTAINS),
        ),
        _catalog(
            "entitlements",
            "entitlement",
            Entitlement,
            ("entity_type", "entity_id", "feature_id"),
            searchable(
                feature_id=IN,
                plan_id=IN,
                entity_id=IN,
                entity_type=EQ,
                feature_type=EQ,
                is_enabled=EQ,
                grant_quota=(EQ, Op.NE),  # "has a grant config": set or not
            ),
        ),
        _catalog(
            "credit_grants",
            "credit grant",
            CreditGrant,
            filters=searchable(plan_id=IN, addon_id=IN, subscription_id=IN, scope=EQ),
        ),
        _catalog("coupons", "coupon", Coupon, ("coupon_code",), searchable(coupon_code=IN)),
        _catalog(
            "coupon_associations",
            "coupon association",
            CouponAssociation,
            filters=searchable(
                subscription_id=(EQ, IN), coupon_id=(EQ, IN), start_date=Op.LTE, end_date=(EQ, Op.GT)
            ),
        ),
        _catalog(
            "tax_rates",
            "tax rate",
            TaxRate,
            ("code",),
            searchable(code=IN, scope=EQ, tax_rate_status=EQ),
        ),
        _catalog(
            "tax_associations",
            "tax association",
            TaxAssociation,
            filters=searchable(entity_type=EQ, entity_id=(EQ, IN), tax_rate_id=EQ),
        ),
        Kind(
            "subscriptions",
            "subscription",
            Subscription,
            Level.ENVIRONMENT,
            versioned=True,
            due_at="next_run_at",
            searchable=searchable(
                customer_id=(EQ, IN),
                plan_id=EQ,
                subscription_status=IN,
                billing_period=IN,
                billing_cadence=IN,
                subscription_type=IN,
                parent_subscription_id=(EQ, IN),
                invoicing_customer_id=IN,
            ),
        ),
        # Where a line item lives: its subscription (line items are stored inside it).
        Kind(
            "line_item_owners",
            "line item",
            LineItemOwner,
            Level.ENVIRONMENT,
            searchable=searchable(subscription_id=EQ),
        ),
        Kind(
            "subscription_pauses",
            "subscription pause",
            SubscriptionPause,
            Level.ENVIRONMENT,
            versioned=True,
            # A scheduled pause starts, an active one ends (pause_end): the worker does it then.
            due_at="run_at",
            searchable=searchable(subscription_id=(EQ, IN), pause_status=IN),
        ),
        Kind(
            "subscription_schedules",
            "subscription schedule",
            SubscriptionSchedule,
            Level.ENVIRONMENT,
            versioned=True,
            # An end-of-period change (a plan change) is carried out by the worker at its run_at.
            due_at="run_at",
            searchable=searchable(subscription_id=(EQ, IN), schedule_type=(EQ, IN), schedule_status=IN),
        ),
        Kind(
            "subscription_changes",
            "subscription change",
            SubscriptionChange,
            Level.ENVIRONMENT,
            # A client's key names one change for ever: a retry gets the first answer.
            unique=(Unique(("idempotency_key",), live_only=False),),
            searchable=searchable(subscription_id=(EQ, IN), change_kind=(EQ, IN)),
        ),
        Kind(
            "addon_associations",
            "add-on association",
            AddonAssociation,
            Level.ENVIRONMENT,
            versioned=True,
            searchable=searchable(entity_id=(EQ, IN), entity_type=EQ, addon_id=(EQ, IN), addon_status=IN),
        ),
        Kind(
            "subscription_phases",
            "subscription phase",
            SubscriptionPhase,
            Level.ENVIRONMENT,
            versioned=True,
            searchable=searchable(subscription_id=(EQ, IN)),
        ),
        Kind(
            "invoices",
            "invoice",
            Invoice,
            Level.ENVIRONMENT,
            # The second rule is what makes billing exactly-once: one invoice per subscription,
            # period and billing reason, whoever runs the billing and however often.
            # The third makes direct invoices idempotent: a key names one invoice forever (a voided
            # or archived invoice keeps its key).
            unique=(
                Unique(("invoice_number",)),
                Unique(("subscription_id", "period_start", "period_end", "billing_reason")),
                Unique(("idempotency_key",), live_only=False),
            ),
            versioned=True,
            # A renewal draft kept open by the finalization delay: the worker finalizes it then.
            due_at="finalize_at",
            searchable=searchable(
                customer_id=EQ,
                subscription_id=EQ,
                subscription_customer_id=IN,
                invoice_type=EQ,
                billing_reason=EQ,
                currency=EQ,
                invoice_status=IN,
                payment_status=IN,
                period_start=(Op.GTE, Op.LTE),
                period_end=(Op.GTE, Op.LTE),
                amount_due=Op.GT,
                amount_remaining=Op.GT,
            ),
        ),
        # The account credits move in and out of; its version serialises the movements.
        Kind(
            "wallets",
            "wallet",
            Wallet,
            Level.ENVIRONMENT,
            versioned=True,
            # Credits that expire: the worker debits what is left on them then.
            due_at="next_expiry_at",
            searchable=searchable(customer_id=(EQ, IN), currency=EQ, wallet_type=EQ, wallet_status=IN),
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
            searchable=searchable(
                wallet_id=(EQ, IN),
                customer_id=EQ,
                type=EQ,
                transaction_status=IN,
                transaction_reason=IN,
                reference_type=EQ,
                reference_id=EQ,
                priority=EQ,
                expiry_date=(Op.GTE, Op.LTE),
            ),
        ),
        # One payment per request: the key derives from the invoice, amount, method and intent.
        Kind(
            "payments",
            "payment",
            Payment,
            Level.ENVIRONMENT,
            unique=(Unique(("idempotency_key",), live_only=False),),
            versioned=True,
            searchable=searchable(
                destination_type=EQ,
                destination_id=(EQ, IN),
                customer_id=EQ,
                payment_status=IN,
                payment_method_type=EQ,
                currency=EQ,
                payment_gateway=EQ,
                gateway_payment_id=EQ,
                gateway_tracking_id=EQ,
            ),
        ),
        # One credit note per request content; finalization rechecks what the invoice can give.
        Kind(
            "credit_notes",
            "credit note",
            CreditNote,
            Level.ENVIRONMENT,
            unique=(
                Unique(("idempotency_key",), live_only=False),
                Unique(("credit_note_number",), live_only=False),
            ),
            versioned=True,
            searchable=searchable(
                invoice_id=(EQ, IN),
                customer_id=EQ,
                subscription_id=EQ,
                credit_note_type=EQ,
                credit_note_status=IN,
                reason=EQ,
            ),
        ),
        # A payment-gated action: the key and the wallet are held only while the session is open
        # (``open_key``/``open_wallet_id`` are cleared when it ends); the worker expires it at run_at.
        Kind(
            "checkout_sessions",
            "checkout session",
            CheckoutSession,
            Level.ENVIRONMENT,
            unique=(Unique(("open_key",)), Unique(("open_wallet_id",))),
            versioned=True,
            due_at="run_at",
            searchable=searchable(
                customer_id=EQ, action=EQ, checkout_status=IN, provider_session_id=EQ, subscription_id=EQ
            ),
        ),
        # A grant's credits for one subscription and period: granted once, by the worker.
        Kind(
            "credit_grant_applications",
            "credit grant application",
            CreditGrantApplication,
            Level.ENVIRONMENT,
            unique=(Unique(("credit_grant_id", "subscription_id", "period_start"), live_only=False),),
            versioned=True,
            due_at="run_at",
            searchable=searchable(
                credit_grant_id=(EQ, IN),
                subscription_id=(EQ, IN),
                customer_id=EQ,
                application_status=IN,
            ),
        ),
        # An alert on a subscription's spend (or a line item's, a group's) or an entitlement's
        # usage, with its current state; the worker evaluates it at next_check_at.
        Kind(
            "alert_settings",
            "alert setting",
            AlertSetting,
            Level.ENVIRONMENT,
            versioned=True,
            due_at="next_check_at",
            searchable=searchable(
                entity_type=EQ,
                entity_id=(EQ, IN),
                parent_entity_type=EQ,
                parent_entity_id=(EQ, IN),
                customer_id=IN,
                enabled=EQ,
            ),
        ),
        # Each change of an alert's state, numbered per alert: of two evaluators that saw the same
        # state only one can write the next number (the conditional write that stops double firing).
        Kind(
            "alert_logs",
            "alert log",
            AlertLog,
            Level.ENVIRONMENT,
            unique=(Unique(("alert_key", "sequence"), live_only=False),),
            append_only=True,
            searchable=searchable(
                alert_key=IN,
                alert_type=EQ,
                alert_status=EQ,
                entity_type=EQ,
                entity_id=EQ,
                customer_id=EQ,
            ),
        ),
        # A seller's cost prices per meter (its prices name it as owner, entity_type COSTSHEET).
        _catalog("costsheets", "costsheet", Costsheet, ("lookup_key",), searchable(lookup_key=EQ, name=EQ)),
        # An export to CSV: the worker writes it one page per step while run_at is set.
        Kind(
            "tasks",
            "task",
            Task,
            Level.ENVIRONMENT,
            versioned=True,
            due_at="run_at",
            searchable=searchable(
                task_type=EQ,
                entity_type=EQ,
                task_status=EQ,
                scheduled_task_id=EQ,
                created_by=EQ,
                workflow_id=EQ,
            ),
        ),
        # The parts of an export's file, numbered per task: a part is written once.
        Kind(
            "export_parts",
            "export part",
            ExportPart,
            Level.ENVIRONMENT,
            unique=(Unique(("task_id", "sequence"), live_only=False),),
            searchable=searchable(task_id=EQ, sequence=Op.GTE),
        ),
        # A recurring export: the worker makes its next export task at next_run_at.
        Kind(
            "scheduled_tasks",
            "scheduled task",
            ScheduledTask,
            Level.ENVIRONMENT,
            versioned=True,
            due_at="next_run_at",
            searchable=searchable(entity_type=EQ, interval=EQ, enabled=EQ, connection_id=EQ),
        ),
    )
}
