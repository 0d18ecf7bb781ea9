"""``Billing``: the one object a host application creates."""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TypeVar

from billingkit.clock import SystemClock
from billingkit.domain.access import Account, Actor, Tenant
from billingkit.domain.ids import IdFactory
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.validation import ensure_utc
from billingkit.errors import BillingError, ValidationError
from billingkit.facade.observers import BillingObserver
from billingkit.facade.scoped import Scoped
from billingkit.facade.throttle import LoginThrottle
from billingkit.logfields import log_fields
from billingkit.ports import Clock, Storage, UnitOfWork
from billingkit.services import access
from billingkit.services.billing_runs import RunReport, bill_claimed
from billingkit.services.context import Context
from billingkit.services.events import DEFAULT_MAX_BULK_EVENTS, IngestResult

__all__ = ["Billing"]

log = logging.getLogger("billingkit")
run_log = logging.getLogger("billingkit.billing_run")
R = TypeVar("R")
#: Default lead time of the ``subscription.renewal.due`` notification.
DEFAULT_RENEWAL_NOTICE = timedelta(days=3)
Subscriber = Callable[[NotificationEvent], None]
#: The notification every finalized (issued) invoice records; observers count these.
INVOICE_ISSUED = "invoice.update.finalized"


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
        token_secret: bytes | str | None = None,
        max_bulk_events: int = DEFAULT_MAX_BULK_EVENTS,
        renewal_notice: timedelta | None = DEFAULT_RENEWAL_NOTICE,
        login_throttle: LoginThrottle | None = None,
    ) -> None:
        if storage is None:
            from billingkit.storage.memory import MemoryStorage

            self.storage: Storage = MemoryStorage()
        else:
            self.storage = storage
        self.clock: Clock = clock or SystemClock()
        if isinstance(token_secret, str):
            token_secret = token_secret.encode()
        # Without a configured secret, session tokens are valid for this object's lifetime only.
        self._token_secret: bytes = token_secret or secrets.token_bytes(32)
        self.ids = IdFactory(self.clock.now)
        #: The most events one bulk ingestion call (or ``POST /events/bulk``) may carry.
        self.max_bulk_events = max_bulk_events
        #: How long before a period ends ``subscription.renewal.due`` is recorded (None: never).
        self.renewal_notice = renewal_notice
        self._subscribers: dict[str, list[Subscriber]] = {}
        self._subscribers_lock = threading.Lock()
        #: Failed sign-ins per email, held by this object only (see ``LoginThrottle``).
        self.login_throttle = login_throttle or LoginThrottle()
        self._observers: tuple[BillingObserver, ...] = ()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        clock: Clock | None = None,
        migrate: bool | None = None,
        token_secret: bytes | str | None = None,
    ) -> Billing:
        """A ``Billing`` on a SQL database: ``sqlite:///billing.db`` or ``postgresql://...``."""
        from billingkit.storage.sql import SqlStorage

        return cls(SqlStorage.from_url(url, migrate=migrate), clock, token_secret=token_secret)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Billing:
        """Configure from ``BILLINGKIT_*`` variables (see docs/configuration.md):
        ``BILLINGKIT_DATABASE_URL`` (default: the in-memory store) and
        ``BILLINGKIT_TOKEN_SECRET`` (signs session tokens; set it so tokens survive restarts)."""
        env = os.environ if environ is None else environ
        url = env.get("BILLINGKIT_DATABASE_URL")
        secret = env.get("BILLINGKIT_TOKEN_SECRET") or None
        if secret is None:
            log.warning(
                "BILLINGKIT_TOKEN_SECRET is not set: session tokens are signed with a random "
                "secret and stop working when this Billing is closed or the process restarts"
            )
        if url:
            return cls.from_url(url, token_secret=secret)
        return cls(token_secret=secret)

    # -- scopes ----------------------------------------------------------------------------
    def scope(
        self, tenant_id: str, environment_id: str | None = None, *, actor: Actor | None = None
    ) -> Scoped:
        """The view of one tenant and environment. ``actor`` defaults to the host itself
        (all permissions); pass an :class:`~billingkit.Actor` to check someone's roles."""
        return Scoped(self, tenant_id, environment_id, actor or Actor.system())

    def authenticate(self, api_key: str | None, *, environment_id: str | None = None) -> Scoped:
        """The scoped view an API key gives access to (raises :class:`Unauthorized`)."""
        with self.storage.unit_of_work() as uow:
            principal = access.authenticate_api_key(
                uow, api_key=api_key, now=self.clock.now(), environment_id=environment_id
            )
        return Scoped(self, principal.tenant_id, principal.environment_id, principal.actor)

    def authenticate_token(self, token: str, *, environment_id: str | None = None) -> Scoped:
        """The scoped view a session token gives access to."""
        with self.storage.unit_of_work() as uow:
            principal = access.authenticate_token(
                uow,
                token=token,
                secret=self._token_secret,
                now=self.clock.now(),
                environment_id=environment_id,
            )
        return Scoped(self, principal.tenant_id, principal.environment_id, principal.actor)

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
        with self.storage.unit_of_work() as uow:
            try:
                account = access.check_password(uow, email=email, password=password, tenant_id=tenant_id)
            except ValidationError:
                # The password matched accounts in several tenants: not a failed password.
                self.login_throttle.succeeded(key)
                raise
            self.login_throttle.succeeded(key)
            token = access.start_session(
                uow, account=account, secret=self._token_secret, now=now, environment_id=environment_id
            )
        return token, account

    # -- tenants ---------------------------------------------------------------------------
    def _system_call(self, tenant_id: str, fn: Callable[[UnitOfWork, Context], R]) -> R:
        ctx = Context(
            tenant_id=tenant_id,
            environment_id=None,
            actor=Actor.system(),
            now=self.clock.now(),
            ids=self.ids,
        )
        with self.storage.unit_of_work(tenant_id, None) as uow:
            result = fn(uow, ctx)
            uow.commit()
        return result

    def create_tenant(self, name: str) -> Tenant:
        """A new, empty tenant (add environments with ``scope(tenant_id).environments``)."""
        return self._system_call(
            self.ids.new("tenant"), lambda uow, ctx: access.create_tenant(uow, ctx, name=name)
        )

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
        self, now: datetime | None = None, *, batch_size: int = 500, keep_invoices: bool = True
    ) -> RunReport:
        """Bill everything due at ``now`` (default: the clock's time), in every tenant and
        environment: renewal notices, trial ends, period ends (each elapsed period gets its own
        invoice) and subscriptions reaching their end date.

        Work is claimed and committed in batches of ``batch_size`` subscriptions; a batch either
        commits whole or not at all, so a crash bills nothing twice and loses nothing (the next run
        picks the work up). A subscription that cannot be billed is reported in
        ``RunReport.failures`` and stays due; the others go on. Safe to call from several processes
        on one PostgreSQL database at once.

        ``keep_invoices=False`` leaves ``RunReport.invoices`` empty (``invoice_count`` still
        counts them): a worker billing 100,000 subscriptions need not hold 100,000 invoices in
        memory; they are stored, and their notifications carry them.
        """
        if batch_size < 1:
            raise ValidationError("batch_size must be at least 1", field="batch_size")
        at = self.clock.now() if now is None else ensure_utc(now, "now")
        started = time.perf_counter()
        try:
            report = self._run_due(at, batch_size, keep_invoices)
        except Exception as exc:
            seconds = time.perf_counter() - started
            log_fields(
                run_log,
                logging.ERROR,
                "billing_run",
                status="failed",
                duration_ms=seconds * 1000,
                error=type(exc).__name__,
                exc_info=exc,
            )
            self._observe(lambda o: o.billing_run(None, seconds=seconds))
            raise
        seconds = time.perf_counter() - started
        log_fields(
            run_log,
            logging.WARNING if report.failures else logging.INFO,
            "billing_run",
            status="completed",
            subscriptions=report.subscription_count,
            invoices=report.invoice_count,
            notifications=report.notification_count,
            failures=len(report.failures),
            duration_ms=seconds * 1000,
        )
        self._observe(lambda o: o.billing_run(report, seconds=seconds))
        return report

    def _run_due(self, at: datetime, batch_size: int, keep_invoices: bool) -> RunReport:
        report = RunReport()
        skipped: set[str] = set()
        while True:
            with self.storage.unit_of_work() as uow:
                claimed = [
                    s
                    for s in uow.claim_due_subscriptions(at, batch_size + len(skipped))
                    if s.id not in skipped
                ][:batch_size]
                if not claimed:
                    break
                try:
                    result = bill_claimed(
                        uow, claimed, now=at, ids=self.ids, renewal_notice=self.renewal_notice
                    )
                    uow.commit()
                except BillingError:
                    log.warning(
                        "billing batch of %d failed; retrying one by one", len(claimed), exc_info=True
                    )
                    result = None
            if result is None:
                for sub in claimed:
                    self._bill_one(
                        sub.tenant_id, sub.environment_id, sub.id, at, report, skipped, keep_invoices
                    )
                continue
            self._merge(report, result.report, skipped, keep_invoices)
            self._dispatch(result.recorded)
        return report

    def _bill_one(
        self,
        tenant_id: str,
        environment_id: str,
        sub_id: str,
        at: datetime,
        report: RunReport,
        skipped: set[str],
        keep_invoices: bool,
    ) -> None:
        with self.storage.unit_of_work(tenant_id, environment_id) as uow:
            sub = uow.subscriptions.find(sub_id)
            if sub is None or sub.next_run_at is None or sub.next_run_at > at:
                return
            try:
                result = bill_claimed(uow, [sub], now=at, ids=self.ids, renewal_notice=self.renewal_notice)
                uow.commit()
            except BillingError as exc:
                log.warning("cannot bill subscription %s: %s", sub_id, exc.message)
                report.failures.append((sub_id, exc.code, exc.message))
                skipped.add(sub_id)
                return
        self._merge(report, result.report, skipped, keep_invoices)
        self._dispatch(result.recorded)

    @staticmethod
    def _merge(report: RunReport, part: RunReport, skipped: set[str], keep_invoices: bool) -> None:
        report.subscription_count += part.subscription_count
        report.invoice_count += part.invoice_count
        if keep_invoices:
            report.invoices += part.invoices
        report.notification_count += part.notification_count
        report.failures += part.failures
        skipped.update(failure[0] for failure in part.failures)

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
