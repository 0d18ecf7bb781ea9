"""``Billing``: the one object a host application creates."""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Final, TypeVar

from billingkit.clock import SystemClock
from billingkit.domain.access import Account, Actor, ApiKey, Tenant
from billingkit.domain.ids import IdFactory
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.validation import ensure_utc
from billingkit.errors import ValidationError
from billingkit.facade.observers import BillingObserver
from billingkit.facade.portal import CustomerPortal
from billingkit.facade.scoped import Scoped
from billingkit.facade.throttle import LoginThrottle
from billingkit.ports import Clock, PaymentProvider, Storage, UnitOfWork, WebhookTransport
from billingkit.providers import MemoryWebhookTransport, RazorpayPaymentProvider, SandboxPaymentProvider
from billingkit.services import access, access_management, portal_sessions, sessions
from billingkit.services.access_management import TenantStatusCache
from billingkit.services.api_key_cache import ApiKeyCache
from billingkit.services.billing_runs import RunReport
from billingkit.services.context import Context, DueRun, Providers
from billingkit.services.due_work import run_due_work
from billingkit.services.entitlement_cache import EntitlementCache
from billingkit.services.events import IngestResult
from billingkit.services.settings import DEFAULT_RENEWAL_NOTICE, Settings
from billingkit.services.webhook_dispatch import Dispatcher, DispatchReport
from billingkit.services.webhook_secrets import SecretBox, new_key

__all__ = ["DEFAULT_RENEWAL_NOTICE", "Billing"]

log = logging.getLogger("billingkit")
R = TypeVar("R")
Subscriber = Callable[[NotificationEvent], None]
#: Signatures carry the wall clock's time: receivers check it against theirs, whatever the
#: billing clock says (a test clock, say).
_WALL_CLOCK = SystemClock()
#: The notification every finalized (issued) invoice records; observers count these.
INVOICE_ISSUED = "invoice.update.finalized"


class _Unset(Enum):
    UNSET = "unset"


#: Marks a keyword argument that was not given (``renewal_notice=None`` means "never").
_UNSET: Final = _Unset.UNSET


class Billing:
    """The billing system, in process.

    >>> billing = Billing()                       # in-memory store, system clock
    >>> setup = billing.bootstrap(tenant_name="Acme", owner_email="owner@acme.test")
    >>> test = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    >>> test.customers.create(external_id="c-1", name="Ada").external_id
    'c-1'

    Several ``Billing`` objects can live in one process; they share nothing.
    """

    def __init__(
        self,
        storage: Storage | None = None,
        clock: Clock | None = None,
        *,
        settings: Settings | None = None,
        payment_provider: PaymentProvider | None = None,
        webhook_transport: WebhookTransport | None = None,
        environment_providers: Mapping[str, PaymentProvider] | None = None,
        login_throttle: LoginThrottle | None = None,
        token_secret: bytes | str | _Unset | None = _UNSET,
        max_bulk_events: int | _Unset = _UNSET,
        renewal_notice: timedelta | _Unset | None = _UNSET,
    ) -> None:
        """``settings`` holds the configuration (default ``Settings()``); ``token_secret``,
        ``max_bulk_events`` and ``renewal_notice`` are kept as shorthands that override the field
        of the same name. ``payment_provider`` and ``webhook_transport`` are the outside parties
        (default: an in-process :class:`~billingkit.SandboxPaymentProvider` and
        :class:`~billingkit.MemoryWebhookTransport`); services reach them as ``ctx.providers``.
        ``environment_providers`` maps an environment id to the payment provider its checkout
        sessions use, with that environment's own credentials (an environment not named uses
        ``payment_provider``)."""
        if storage is None:
            from billingkit.storage.memory import MemoryStorage

            self.storage: Storage = MemoryStorage()
        else:
            self.storage = storage
        self.clock: Clock = clock or SystemClock()
        shorthands: dict[str, Any] = {
            name: value
            for name, value in (
                ("token_secret", token_secret),
                ("max_bulk_events", max_bulk_events),
                ("renewal_notice", renewal_notice),
            )
            if value is not _UNSET
        }
        #: The configuration (see :class:`~billingkit.Settings`). Assign a new one to change it;
        #: calls that start afterwards see it.
        self.settings: Settings = (settings or Settings()).replace(**shorthands)
        # Without a configured secret, session tokens are valid for this object's lifetime only.
        self._random_secret = secrets.token_bytes(32)
        #: The outside parties services reach through ``ctx.providers``.
        self.providers = Providers(
            payment_provider=SandboxPaymentProvider() if payment_provider is None else payment_provider,
            webhook_transport=MemoryWebhookTransport() if webhook_transport is None else webhook_transport,
            # Without a configured key, endpoint secrets are sealed under a key of this object's
            # lifetime (docs/decisions.md): like session tokens without a token secret.
            webhook_secrets=SecretBox(self.settings.webhook_secret_key or new_key()),
            environment_providers=dict(environment_providers or {}),
        )
        self.ids = IdFactory(self.clock.now)
        self._subscribers: dict[str, list[Subscriber]] = {}
        self._subscribers_lock = threading.Lock()
        #: Failed sign-ins per email, held by this object only (see ``LoginThrottle``).
        self.login_throttle = login_throttle or LoginThrottle()
        self._observers: tuple[BillingObserver, ...] = ()
        #: What the entitlement check reuses between calls (``settings.entitlement_cache_ttl``).
        self.entitlement_cache = EntitlementCache()
        #: Authenticated API keys, reused for ``settings.api_key_cache_ttl``.
        self.api_key_cache = ApiKeyCache()
        #: Tenants' suspension as last read, reused for ``settings.tenant_status_ttl``.
        self.tenant_status = TenantStatusCache()

    @property
    def max_bulk_events(self) -> int:
        """The most events one bulk ingestion call (or ``POST /events/bulk``) may carry
        (``settings.max_bulk_events``; assigning replaces ``settings``)."""
        return self.settings.max_bulk_events

    @max_bulk_events.setter
    def max_bulk_events(self, value: int) -> None:
        self.settings = self.settings.replace(max_bulk_events=value)

    @property
    def renewal_notice(self) -> timedelta | None:
        """How long before a period ends ``subscription.renewal.due`` is recorded (None: never)
        (``settings.renewal_notice``; assigning replaces ``settings``)."""
        return self.settings.renewal_notice

    @renewal_notice.setter
    def renewal_notice(self, value: timedelta | None) -> None:
        self.settings = self.settings.replace(renewal_notice=value)

    @property
    def _token_secret(self) -> bytes:
        secret = self.settings.token_secret
        if isinstance(secret, str):  # Settings stores text as bytes; narrowed for the type checker
            return secret.encode()
        return secret or self._random_secret

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        clock: Clock | None = None,
        migrate: bool | None = None,
        settings: Settings | None = None,
        payment_provider: PaymentProvider | None = None,
        webhook_transport: WebhookTransport | None = None,
        environment_providers: Mapping[str, PaymentProvider] | None = None,
        token_secret: bytes | str | _Unset | None = _UNSET,
    ) -> Billing:
        """A ``Billing`` on a SQL database: ``sqlite:///billing.db`` or ``postgresql://...``;
        the keyword arguments are ``Billing``'s."""
        from billingkit.storage.sql import SqlStorage

        return cls(
            SqlStorage.from_url(url, migrate=migrate),
            clock,
            settings=settings,
            payment_provider=payment_provider,
            webhook_transport=webhook_transport,
            environment_providers=environment_providers,
            token_secret=token_secret,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Billing:
        """Configure from ``BILLINGKIT_*`` variables (see docs/configuration.md):
        ``BILLINGKIT_DATABASE_URL`` (default: the in-memory store),
        ``BILLINGKIT_TOKEN_SECRET`` (signs session tokens; set it so tokens survive restarts),
        ``BILLINGKIT_WEBHOOK_SECRET_KEY`` (encrypts webhook endpoint secrets) and
        ``BILLINGKIT_RAZORPAY_KEY_ID`` with ``BILLINGKIT_RAZORPAY_KEY_SECRET`` (payments through
        Razorpay instead of the sandbox; see :meth:`RazorpayPaymentProvider.from_env`), the same
        names ending ``__<environment id>`` for one environment's own Razorpay account
        (:meth:`RazorpayPaymentProvider.per_environment_from_env`) and ``BILLINGKIT_PUBLIC_URL``
        (``Settings.public_url``)."""
        env = os.environ if environ is None else environ
        payment_provider = RazorpayPaymentProvider.from_env(env)
        per_environment = RazorpayPaymentProvider.per_environment_from_env(env)
        url = env.get("BILLINGKIT_DATABASE_URL")
        settings = Settings(
            token_secret=env.get("BILLINGKIT_TOKEN_SECRET") or None,
            webhook_secret_key=env.get("BILLINGKIT_WEBHOOK_SECRET_KEY") or None,
            public_url=env.get("BILLINGKIT_PUBLIC_URL") or None,
        )
        if settings.token_secret is None:
            log.warning(
                "BILLINGKIT_TOKEN_SECRET is not set: session tokens are signed with a random "
                "secret and stop working when this Billing is closed or the process restarts"
            )
        parties: dict[str, Any] = {
            "payment_provider": payment_provider,
            "environment_providers": per_environment,
        }
        if url:
            return cls.from_url(url, settings=settings, **parties)
        return cls(settings=settings, **parties)

    def context(self, tenant_id: str, environment_id: str | None, actor: Actor) -> Context:
        """The context of one service call in this scope, by ``actor``: the clock read once, this
        object's id factory, settings and outside parties."""
        return Context(
            tenant_id=tenant_id,
            environment_id=environment_id,
            actor=actor,
            now=self.clock.now(),
            ids=self.ids,
            settings=self.settings,
            providers=self.providers,
        )

    # -- scopes ----------------------------------------------------------------------------
    def scope(
        self, tenant_id: str, environment_id: str | None = None, *, actor: Actor | None = None
    ) -> Scoped:
        """The view of one tenant and environment. ``actor`` defaults to the host itself
        (all permissions); pass an :class:`~billingkit.Actor` to check someone's roles."""
        return Scoped(self, tenant_id, environment_id, actor or Actor.system())

    def authenticate(self, api_key: str | None, *, environment_id: str | None = None) -> Scoped:
        """The scoped view an API key gives access to (raises :class:`Unauthorized`). A key
        authenticated within ``settings.api_key_cache_ttl`` is not read again."""
        now, ttl = self.clock.now(), self.settings.api_key_cache_ttl
        cache = self.api_key_cache
        principal = access.cached_api_key(
            cache, api_key=api_key, now=now, ttl=ttl, environment_id=environment_id
        )
        if principal is None:
            # Authentication only reads: it never waits behind a billing run's write lock.
            with self.storage.unit_of_work(read_only=True) as uow:
                principal = access.authenticate_api_key(
                    uow,
                    api_key=api_key,
                    now=now,
                    environment_id=environment_id,
                    cache=cache if ttl else None,
                    last_used_interval=self.settings.api_key_last_used_interval,
                )
            if principal.stale_key is not None:
                self._record_key_use(principal.stale_key, now)
        return Scoped(self, principal.tenant_id, principal.environment_id, principal.actor)

    def _record_key_use(self, key: ApiKey, now: datetime) -> None:
        """Write a key's ``last_used_at`` (at most once per ``api_key_last_used_interval``): a
        bookkeeping write, so its failure is logged and the request goes on."""
        try:
            with self.storage.unit_of_work(key.tenant_id, key.environment_id) as uow:
                access.record_key_use(uow, key=key, now=now)
                uow.commit()
        except Exception:  # the caller is authenticated whatever happens to this note
            log.warning("could not record the use of API key %s", key.id, exc_info=True)

    def authenticate_token(self, token: str, *, environment_id: str | None = None) -> Scoped:
        """The scoped view a session token gives access to."""
        with self.storage.unit_of_work(read_only=True) as uow:
            principal = sessions.authenticate_token(
                uow,
                token=token,
                secret=self._token_secret,
                now=self.clock.now(),
                environment_id=environment_id,
            )
        return Scoped(self, principal.tenant_id, principal.environment_id, principal.actor)

    def open_portal(self, token: str) -> CustomerPortal:
        """The customer portal a portal session token (``scoped.customer_portal.create_session``)
        opens: that customer's own records, read-only. Raises :class:`Unauthorized` for a
        malformed, tampered or expired token, a dashboard session token, or a customer deleted
        since the token was issued."""
        with self.storage.unit_of_work(read_only=True) as uow:
            claims = portal_sessions.open_portal(
                uow, token=token, secret=self._token_secret, now=self.clock.now()
            )
        actor = portal_sessions.portal_actor(claims.customer_id)
        return CustomerPortal(Scoped(self, claims.tenant_id, claims.environment_id, actor), claims)

    def login(
        self,
        email: str,
        password: str,
        *,
        tenant_id: str | None = None,
        environment_id: str | None = None,
    ) -> tuple[str, Account]:
        """Check a user's password; return a signed session token and the account.

        Throttled per email (known or not): after 5 failures in 15 minutes every attempt, even
        with the right password, raises :class:`~billingkit.TooManyRequests` (``retry_after``
        seconds) until the lockout ends; see ``LoginThrottle`` for the numbers."""
        now = self.clock.now()
        key = LoginThrottle.key(email)
        self.login_throttle.attempt(key, now)
        with self.storage.unit_of_work(read_only=True) as uow:
            try:
                account = sessions.check_password(uow, email=email, password=password, tenant_id=tenant_id)
            except ValidationError:
                # The password matched accounts in several tenants: not a failed password.
                self.login_throttle.succeeded(key)
                raise
            self.login_throttle.succeeded(key)
            token = sessions.start_session(
                uow, account=account, secret=self._token_secret, now=now, environment_id=environment_id
            )
        return token, account

    # -- tenants ---------------------------------------------------------------------------
    def _system_call(self, tenant_id: str, fn: Callable[[UnitOfWork, Context], R]) -> R:
        ctx = self.context(tenant_id, None, Actor.system())
        with self.storage.unit_of_work(tenant_id, None) as uow:
            result = fn(uow, ctx)
            uow.commit()
        return result

    def create_tenant(self, name: str) -> Tenant:
        """A new, empty tenant (add environments with ``scope(tenant_id).environments``)."""
        return self._system_call(
            self.ids.new("tenant"), lambda uow, ctx: access.create_tenant(uow, ctx, name=name)
        )

    def tenant(self, tenant_id: str) -> Tenant:
        """A tenant as the operator sees it (``NotFound`` when there is none). Only reads."""
        ctx = self.context(tenant_id, None, Actor.system())
        with self.storage.unit_of_work(tenant_id, None, read_only=True) as uow:
            return access_management.get_tenant(uow, ctx, tenant_id=tenant_id)

    def suspend_tenant(self, tenant_id: str) -> Tenant:
        """Suspend a tenant (an operator's operation): its callers may still read, but every
        write, through the library or HTTP, raises ``PermissionDenied`` ("tenant account is
        suspended"). Applies at once through this ``Billing``; other processes sharing the store
        follow within ``settings.tenant_status_ttl``. Scheduled work (billing runs, webhook
        delivery) goes on. Idempotent."""
        return self._set_suspended(tenant_id, suspended=True)

    def reactivate_tenant(self, tenant_id: str) -> Tenant:
        """End a tenant's suspension (see :meth:`suspend_tenant`). Idempotent."""
        return self._set_suspended(tenant_id, suspended=False)

    def _set_suspended(self, tenant_id: str, *, suspended: bool) -> Tenant:
        tenant = self._system_call(
            tenant_id,
            lambda uow, ctx: access_management.set_tenant_suspended(uow, ctx, suspended=suspended),
        )
        self.tenant_status.forget(tenant_id)
        return tenant

    def bootstrap(
        self,
        *,
        tenant_name: str = "Default",
        owner_email: str = "owner@example.com",
        owner_password: str | None = None,
    ) -> access.BootstrapResult:
        """A tenant ready to use: an owner (``super_admin``), ``test`` and ``production``
        environments, and one ``super_admin`` API key per environment."""
        return self._system_call(
            self.ids.new("tenant"),
            lambda uow, ctx: access.bootstrap(
                uow,
                ctx,
                tenant_name=tenant_name,
                owner_email=owner_email,
                owner_password=owner_password,
            ),
        )

    # -- due work --------------------------------------------------------------------------
    def run_due(
        self, now: datetime | None = None, *, batch_size: int | None = None, keep_invoices: bool = True
    ) -> RunReport:
        """Carry out everything due at ``now`` (default: the clock's time), in every tenant and
        environment, with the due-work runner (:mod:`billingkit.services.due_work`): renewal
        notices, trial ends, period ends (each elapsed period gets its own invoice) and
        subscriptions reaching their end date.

        Work is claimed and committed in batches of ``batch_size`` items (default
        ``settings.run_batch_size``); a batch either commits whole or not at all, so a crash bills
        nothing twice and loses nothing (the next run picks the work up). A subscription that
        cannot be billed is reported in ``RunReport.failures`` and stays due; the others go on.
        Safe to call from several processes on one PostgreSQL database at once.

        ``keep_invoices=False`` leaves ``RunReport.invoices`` empty (``invoice_count`` still
        counts them): a worker billing 100,000 subscriptions need not hold 100,000 invoices in
        memory; they are stored, and their notifications carry them.
        """
        at = self.clock.now() if now is None else ensure_utc(now, "now")
        return run_due_work(
            self.storage,
            DueRun(now=at, ids=self.ids, settings=self.settings, providers=self.providers),
            batch_size=self.settings.run_batch_size if batch_size is None else batch_size,
            keep_invoices=keep_invoices,
            dispatch=self._dispatch,
            finished=lambda report, seconds: self._observe(lambda o: o.billing_run(report, seconds=seconds)),
        )

    def deliver_webhooks(self) -> DispatchReport:
        """Send every webhook delivery due now, in every tenant and environment (the dispatcher,
        :mod:`billingkit.services.webhook_dispatch`): hand new notifications to the endpoints
        that want them, then send, retry and record. Requests go through
        ``webhook_transport`` outside any transaction; their ``webhook-timestamp`` is the wall
        clock's. Safe to call from several processes at once. The worker calls it every
        ``settings.webhook_interval`` seconds."""
        return Dispatcher(
            self.storage,
            self.providers,
            self.settings,
            clock=self.clock.now,
            signing_clock=_WALL_CLOCK.now,
            ids=self.ids.new,
        ).run()

    # -- notifications ---------------------------------------------------------------------
    def subscribe(self, event_type: str, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` after commit for each notification of ``event_type`` (``"*"`` for
        all). Returns a function that unsubscribes. Callback errors are logged, not raised."""
        with self._subscribers_lock:
            self._subscribers.setdefault(event_type, []).append(callback)

        def unsubscribe() -> None:
            with self._subscribers_lock:
                self._subscribers.get(event_type, []).remove(callback)

        return unsubscribe

    # -- observers -------------------------------------------------------------------------
    def observe(self, observer: BillingObserver) -> Callable[[], None]:
        """Call ``observer``'s hooks (events ingested, invoices issued, billing runs) from now on;
        returns a function that removes it. See :class:`~billingkit.facade.BillingObserver`."""
        with self._subscribers_lock:
            self._observers = (*self._observers, observer)

        def remove() -> None:
            with self._subscribers_lock:
                self._observers = tuple(o for o in self._observers if o is not observer)

        return remove

    def _observe(self, call: Callable[[BillingObserver], object]) -> None:
        for observer in self._observers:
            try:
                call(observer)
            except Exception:  # observing must not break billing
                log.exception("billing observer %r failed", observer)

    def _ingested(self, result: IngestResult) -> None:
        if self._observers:
            self._observe(lambda o: o.events_ingested(result))

    def _dispatch(self, events: list[NotificationEvent]) -> None:
        self.entitlement_cache.observe(events)
        if events and self._observers:
            issued = sum(1 for e in events if e.event_type == INVOICE_ISSUED)
            if issued:
                self._observe(lambda o: o.invoices_issued(issued))
        if not events or not self._subscribers:
            return
        for event in events:
            with self._subscribers_lock:
                targets = [*self._subscribers.get(event.event_type, ()), *self._subscribers.get("*", ())]
            for callback in targets:
                try:
                    callback(event)
                except Exception:  # a host callback must not undo a committed change
                    log.exception("notification subscriber failed for %s", event.event_type)

    def ping(self) -> None:
        """Readiness: the store answers a trivial query (:class:`ServiceUnavailable` if not)."""
        self.storage.ping()

    def close(self) -> None:
        self.storage.close()

    def __enter__(self) -> Billing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Billing(storage={self.storage!r}, clock={self.clock!r})"
