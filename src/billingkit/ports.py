"""Ports: the interfaces the services depend on. Adapters live in ``billingkit.storage``.

Every port has a memory and a SQL implementation proven by one shared contract suite
(``billingkit.testing.contracts``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from types import TracebackType
from typing import Any, Protocol, TypeVar, runtime_checkable

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
from billingkit.domain.event_queries import EventFilter, EventPage
from billingkit.domain.gateways import (
    DeliveryResult,
    PaymentRequest,
    ProviderPayment,
    ProviderRefund,
    RefundRequest,
    WebhookRequest,
)
from billingkit.domain.invoices import Invoice
from billingkit.domain.line_item_owners import LineItemOwner
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.payments import Payment
from billingkit.domain.queries import ListQuery, Page
from billingkit.domain.resources import Record
from billingkit.domain.subscription_changes import SubscriptionChange
from billingkit.domain.subscription_pauses import SubscriptionPause
from billingkit.domain.subscription_phases import SubscriptionPhase
from billingkit.domain.subscription_schedules import SubscriptionSchedule
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.tasks import ExportPart, ScheduledTask, Task
from billingkit.domain.usage import UsageEvent, UsageQuery, UsageResult
from billingkit.domain.wallets import Wallet, WalletTransaction
from billingkit.domain.webhooks import WebhookDelivery, WebhookEndpoint

__all__ = [
    "Clock",
    "CounterStore",
    "EventStore",
    "Ledger",
    "MandateProvider",
    "PaymentProvider",
    "Repositories",
    "Repository",
    "Scope",
    "Storage",
    "UnitOfWork",
    "UsageStore",
    "WebhookTransport",
    "WebhookVerifier",
]

T = TypeVar("T", bound=Record)


class Clock(Protocol):
    """The only reader of the wall clock. ``now()`` returns an aware UTC datetime."""

    def now(self) -> datetime: ...


class Repository(Protocol[T]):
    """Stores one kind of resource inside one scope. Every method is scoped by construction."""

    def get(self, id: str) -> T:
        """The resource with ``id`` in this scope (any status), or :class:`NotFound`."""
        ...

    def find(self, id: str) -> T | None: ...

    def find_many(self, ids: Iterable[str]) -> list[T]:
        """The resources of this scope with these ids, in any status, in no particular order;
        ids that are missing (or of another scope) are left out. A few statements for any number."""
        ...

    def find_one(self, *, include_archived: bool = False, **equals: Any) -> T | None:
        """The first live resource whose fields equal ``equals`` (e.g. ``external_id="c1"``)."""
        ...

    def add(self, item: T) -> T:
        """Insert; :class:`AlreadyExists` if it breaks a uniqueness rule."""
        ...

    def update(self, item: T, *, expected_version: int | None = None) -> T:
        """Replace the stored resource with ``item`` (same id).

        With ``expected_version`` the stored ``version`` must equal it, else
        :class:`VersionConflict`; the stored version becomes ``expected_version + 1``.
        """
        ...

    def add_many(self, items: Sequence[T]) -> None:
        """Insert ``items`` together (one statement on SQL stores): all of them or, when one
        breaks a uniqueness rule (:class:`AlreadyExists`), none."""
        ...

    def update_many(self, changes: Sequence[tuple[T, T]]) -> list[T]:
        """Save each ``(stored, changed)`` pair: the fields of ``changed`` that differ from
        ``stored`` are written to the resource with ``stored.id``. For versioned kinds the stored
        ``version`` must still equal ``stored.version`` (else :class:`VersionConflict`) and becomes
        ``stored.version + 1``. All of them or none. Returns the saved items (new versions)."""
        ...

    def list(self, query: ListQuery) -> Page[T]: ...


class Ledger(Protocol[T]):
    """Stores one append-only kind (money that moves) inside one scope: rows are added, read and
    summed, never changed. A correction is a new row; the stores refuse ``update`` and
    ``update_many`` with :class:`AppendOnly` (and :class:`NotFound` for a row the scope cannot
    see), so this protocol does not offer them. Reads and writes are as :class:`Repository`'s."""

    def get(self, id: str) -> T: ...

    def find(self, id: str) -> T | None: ...

    def find_many(self, ids: Iterable[str]) -> list[T]: ...

    def find_one(self, *, include_archived: bool = False, **equals: Any) -> T | None: ...

    def add(self, item: T) -> T:
        """Insert; :class:`AlreadyExists` (and nothing written) if it breaks a uniqueness rule,
        such as a movement key already stored."""
        ...

    def add_many(self, items: Sequence[T]) -> None: ...

    def sum(self, field: str, /, **equals: Any) -> Decimal:
        """The exact sum of decimal ``field`` over the scope's rows whose fields equal ``equals``
        (any status; ``None`` values add nothing); ``Decimal(0)`` when no row matches. Computed
        by the store (one statement on SQL stores), never through binary floating point."""
        ...

    def sum_by(self, field: str, group_by: str, /, **equals: Any) -> dict[str | None, Decimal]:
        """As :meth:`sum`, per value of the text field ``group_by`` (an enum's value, ``None``
        for rows without one); groups without rows are absent."""
        ...

    def list(self, query: ListQuery) -> Page[T]: ...

    def settle(self, id: str, /, status: str, *, updated_at: datetime, updated_by: str) -> T:
        """Move row ``id`` from ``transaction_status`` ``pending`` to ``status`` (``completed`` or
        ``failed``): the one change a ledger row ever sees, made once. :class:`InvalidOperation`
        (and nothing changed) when the row is not pending, so of two concurrent settles one wins
        (a guarded single-row update on SQL stores); :class:`NotFound` for a row the scope cannot
        see; :class:`ValidationError` for another target status or a kind without the field."""
        ...


class EventStore(Protocol):
    """Usage events of one scope. Events are immutable: an id is stored once and never changes."""

    def insert_new(self, events: Iterable[UsageEvent], ingested_at: datetime) -> set[str]:
        """Store the events whose id is not stored yet (the first of repeated ids in ``events``
        wins); return the ids stored by this call. ``events`` may be lazy: it is consumed once,
        in order, and may already be partly written when it raises (the unit of work's rollback
        removes that part). On SQL stores a batch is written in few multi-row statements."""
        ...

    def find(self, event_id: str) -> UsageEvent | None: ...

    def query(self, query: EventFilter) -> EventPage:
        """The page of stored events ``query`` selects, exactly as
        :func:`billingkit.domain.event_queries.filter_events` would."""
        ...


class UsageStore(Protocol):
    """Aggregates the usage events of one scope (SQL stores compute it in the database)."""

    def aggregate(self, queries: Sequence[UsageQuery]) -> list[UsageResult]:
        """One result per query, in order, equal to :func:`billingkit.domain.usage.aggregate_usage`
        over the scope's stored events. Many queries cost a few statements, not one each."""
        ...


class CounterStore(Protocol):
    """Named counters of one scope (invoice numbers). A counter moves inside the caller's
    transaction, so a rolled-back unit of work gives its numbers back: sequences are gap-free.
    Concurrent units of work taking the same counter queue on it (a row lock on SQL stores)."""

    def next(self, name: str, *, count: int = 1) -> int:
        """Advance counter ``name`` by ``count`` (at least 1) and return the first value taken:
        ``count`` numbers from it on are the caller's (1 for a new counter)."""
        ...


class Scope(Protocol):
    @property
    def tenant_id(self) -> str: ...

    @property
    def environment_id(self) -> str | None: ...


class Repositories(Protocol):
    """The stores a unit of work hands out, declared once: one repository per stored kind of
    :data:`billingkit.domain.kinds.KINDS` (same name, same model: ``tests/architecture`` checks
    it), then the usage event, usage and counter stores. :class:`UnitOfWork` extends it; the
    adapters' units of work subclass it and make each repository on first access."""

    tenants: Repository[Tenant]
    environments: Repository[Environment]
    accounts: Repository[Account]
    api_keys: Repository[ApiKey]
    customers: Repository[Customer]
    notifications: Repository[NotificationEvent]
    webhook_endpoints: Repository[WebhookEndpoint]
    webhook_deliveries: Repository[WebhookDelivery]
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
    coupon_associations: Repository[CouponAssociation]
    tax_rates: Repository[TaxRate]
    tax_associations: Repository[TaxAssociation]
    subscriptions: Repository[Subscription]
    invoices: Repository[Invoice]
    wallets: Repository[Wallet]
    wallet_transactions: Ledger[WalletTransaction]
    payments: Repository[Payment]
    credit_notes: Repository[CreditNote]
    credit_grant_applications: Repository[CreditGrantApplication]
    line_item_owners: Repository[LineItemOwner]
    subscription_pauses: Repository[SubscriptionPause]
    subscription_schedules: Repository[SubscriptionSchedule]
    subscription_changes: Repository[SubscriptionChange]
    addon_associations: Repository[AddonAssociation]
    subscription_phases: Repository[SubscriptionPhase]
    alert_settings: Repository[AlertSetting]
    alert_logs: Ledger[AlertLog]
    checkout_sessions: Repository[CheckoutSession]
    costsheets: Repository[Costsheet]
    tasks: Repository[Task]
    export_parts: Repository[ExportPart]
    scheduled_tasks: Repository[ScheduledTask]
    events: EventStore
    usage: UsageStore
    counters: CounterStore


class UnitOfWork(Repositories, Protocol):
    """One transaction. Rolls back on exit unless :meth:`commit` was called.

    Repositories are bound to the unit of work's tenant and environment: a resource of another
    scope looks exactly like a missing one.
    """

    def __enter__(self) -> UnitOfWork: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    @property
    def read_only(self) -> bool:
        """Whether this unit of work was opened ``read_only`` (see :meth:`Storage.unit_of_work`)."""
        ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def for_scope(self, tenant_id: str | None, environment_id: str | None) -> UnitOfWork:
        """The same transaction with repositories bound to another scope. Only system flows
        (bootstrap, authentication, the environment clone) use this; services work in the scope
        they were given."""
        ...

    def find_api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """Authentication lookup across all scopes (the only unscoped read)."""
        ...

    def find_api_key_with_account(self, key_hash: str) -> tuple[ApiKey, bool] | None:
        """Authentication in one lookup across all scopes: the key with this hash and whether its
        account is live (exists and is published); ``None`` for an unknown hash."""
        ...

    def find_accounts_by_email(self, email: str) -> Sequence[Account]:
        """Login lookup across tenants (the only other unscoped read)."""
        ...

    def claim_due(self, kind: str, now: datetime, limit: int) -> list[Record]:
        """Up to ``limit`` published items of ``kind`` of any scope whose due field (the kind's
        ``due_at`` in ``storage.kinds``, e.g. a subscription's ``next_run_at``) is at or before
        ``now``, earliest first (then by id), claimed for this transaction: PostgreSQL locks them
        (``FOR UPDATE SKIP LOCKED``), so a concurrent claimer takes others; SQLite and the memory
        store serialise writers anyway. Claiming changes nothing: the caller moves the due field
        and commits, or rolls back and the items are due again. :class:`ValidationError` for a kind
        that carries no due work or a ``limit`` below 1. The due-work runner is the only caller."""
        ...

    def has_due(self, kind: str, now: datetime) -> bool:
        """Whether any published item of ``kind`` of any scope is due at or before ``now`` (what
        :meth:`claim_due` would claim), without claiming it. Allowed in a read-only unit of work:
        a poller asks this on the read pool before it opens a write transaction, so an idle poll
        takes no lock and no write connection. :class:`ValidationError` for a kind that carries
        no due work."""
        ...


class Storage(Protocol):
    """One entry object per store: hands out units of work."""

    def unit_of_work(
        self, tenant_id: str | None = None, environment_id: str | None = None, *, read_only: bool = False
    ) -> UnitOfWork:
        """A unit of work in the scope. ``read_only=True``: one that only reads, and so never
        waits for writers:

        - SQLite: a deferred ``BEGIN`` (under WAL, a consistent snapshot of what was committed
          when its first statement ran) that never asks for the write lock, so it answers while
          a long write unit of work (a billing run's batch) holds it;
        - PostgreSQL: ``BEGIN READ ONLY`` at the database's default isolation (READ COMMITTED,
          as write units of work), so each statement sees what was committed when it started;
        - memory: serialised with every other unit of work (the data is changed in place, so a
          reader beside a writer would see uncommitted writes).

        Any write in it (a repository's ``add``/``update``..., an event insert, a counter, a
        claim) raises :class:`~billingkit.errors.ReadOnlyTransaction` and writes nothing; it is
        never upgraded to a write lock. Its ``commit`` commits nothing. Write units of work
        (the default) keep their guarantees: ``BEGIN IMMEDIATE`` on SQLite, so writers queue."""
        ...

    def ping(self) -> None:
        """Check that the store answers a trivial query now, without taking locks or writing
        (readiness probes call it often). :class:`ServiceUnavailable` when it does not."""
        ...

    def close(self) -> None: ...


class PaymentProvider(Protocol):
    """Takes payments from customers through an outside party (invoices charged automatically,
    checkout sessions). ``Billing(payment_provider=...)`` holds one; services reach it as
    ``ctx.providers.payment_provider``. The default is the in-process sandbox."""

    @property
    def name(self) -> str:
        """The provider's name as stored on payments and checkout sessions (``"sandbox"``)."""
        ...

    def create_payment(self, request: PaymentRequest) -> ProviderPayment:
        """Start the payment (charge the payment method at once when the request names one).
        Idempotent on ``request.idempotency_key``: the same key answers with the same payment and
        never charges twice; the same key with a different request is :class:`IdempotencyConflict`."""
        ...

    def get_payment(self, provider_payment_id: str) -> ProviderPayment:
        """The payment as the provider sees it now (a pending one may have succeeded or failed
        since); :class:`NotFound` for an id this provider never issued."""
        ...

    def refund_payment(self, request: RefundRequest) -> ProviderRefund:
        """Give back part or all of a succeeded payment to the method it was paid with.
        Idempotent on ``request.idempotency_key`` as :meth:`create_payment` is;
        :class:`NotFound` for a payment this provider never issued; :class:`InvalidOperation`
        for a payment that did not succeed or an amount above what is left to refund."""
        ...


@runtime_checkable
class WebhookVerifier(Protocol):
    """A payment provider that calls the host back with signed webhooks (Razorpay) and can check
    that a delivery is its own."""

    def verify_webhook(self, body: bytes, signature: str) -> bool:
        """Whether ``signature`` (the provider's signature header) signs the raw ``body``."""
        ...


@runtime_checkable
class MandateProvider(Protocol):
    """A payment provider that opens a link where the customer pays once and registers a
    recurring-payment mandate for later automatic charges (Razorpay's registration link)."""

    def create_mandate_link(
        self, request: PaymentRequest, *, max_amount: Decimal, method: str
    ) -> ProviderPayment:
        """Open the link for ``request.amount``, authorising later charges of at most
        ``max_amount`` through ``method`` (the provider's own word: ``card``, ``upi``...)."""
        ...


class WebhookTransport(Protocol):
    """Sends signed webhook requests to receivers. ``Billing(webhook_transport=...)`` holds one;
    services reach it as ``ctx.providers.webhook_transport``. The default keeps deliveries in
    memory; a host that wants real receivers called passes an HTTP transport."""

    def deliver(self, request: WebhookRequest) -> DeliveryResult:
        """Send ``request`` once and report the receiver's answer. A receiver's failure (an error
        status, a refused connection, a timeout) is a result, not an exception, so the caller can
        record the attempt and retry it later."""
        ...

    def deliver_many(self, requests: Sequence[WebhookRequest]) -> list[DeliveryResult]:
        """Send each of ``requests`` once (concurrently if the transport can) and report the
        answers in the same order, as :meth:`deliver` does for one."""
        ...
