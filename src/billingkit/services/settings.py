"""``Settings``: the configuration of one :class:`~billingkit.Billing`, in one frozen value.

``Billing(settings=Settings(...))`` holds it; services read it as ``ctx.settings``. The library never
reads the process environment: the CLI and ``Billing.from_env()`` build a ``Settings`` from
``BILLINGKIT_*`` variables (docs/configuration.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from datetime import timedelta
from typing import Any

from billingkit.domain.auto_invoice_thresholds import DEFAULT_CHECK_INTERVAL
from billingkit.domain.queries import MAX_LIMIT
from billingkit.errors import ValidationError
from billingkit.services.events import DEFAULT_MAX_BULK_EVENTS

__all__ = [
    "DEFAULT_ALERT_CHECK_INTERVAL",
    "DEFAULT_API_KEY_CACHE_TTL",
    "DEFAULT_API_KEY_LAST_USED_INTERVAL",
    "DEFAULT_ENTITLEMENT_CACHE_TTL",
    "DEFAULT_RENEWAL_NOTICE",
    "Settings",
]

#: Default lead time of the ``subscription.renewal.due`` notification.
DEFAULT_RENEWAL_NOTICE = timedelta(days=3)
#: Default for how long the entitlement check reuses what it read.
DEFAULT_ENTITLEMENT_CACHE_TTL = timedelta(seconds=30)
#: Default for how long an authenticated API key is reused without reading the store.
DEFAULT_API_KEY_CACHE_TTL = timedelta(seconds=5)
#: Default for how often an API key's ``last_used_at`` is written at most.
DEFAULT_API_KEY_LAST_USED_INTERVAL = timedelta(minutes=10)
#: Default for how long a process trusts what it read of a tenant's suspension.
DEFAULT_TENANT_STATUS_TTL = timedelta(seconds=5)
#: Default for how often the worker evaluates each alert setting.
DEFAULT_ALERT_CHECK_INTERVAL = timedelta(minutes=1)


def _seconds(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValidationError(f"{name} must be positive seconds, not {value!r}", field=name)


def _whole(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{name} must be a whole number of at least 1, not {value!r}", field=name)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a ``Billing`` is configured with that is a value (its collaborators, such as
    the store, the clock and the outside parties, are passed to ``Billing`` beside it).

    >>> Settings(renewal_notice=None, run_batch_size=200).run_batch_size
    200

    - ``token_secret`` signs dashboard session tokens (bytes, or text encoded as UTF-8). ``None``:
      each ``Billing`` draws a random one, so tokens die with it and differ between processes.
    - ``max_bulk_events``: the most events one bulk ingestion call (``POST /events/bulk``) carries.
    - ``renewal_notice``: how long before a period ends ``subscription.renewal.due`` is recorded
      (``None``: never).
    - ``run_batch_size``: items claimed and committed together by ``run_due`` and the worker.
    - ``worker_interval``: seconds between the background worker's runs.
    - ``invoice_finalization_delay``: how long a renewal invoice of the billing run stays DRAFT
      before the worker finalizes it (at ``last_computed_at`` + the delay); ``timedelta(0)``, the
      default, finalizes at once. Opening, activation, trial-end and direct invoices always
      finalize at once.
    - ``entitlement_cache_ttl``: how long the entitlement check
      (``scoped.entitlements.check``) reuses what it read: a customer's grants and the early part
      of a usage window (:mod:`billingkit.services.entitlement_cache`); ``timedelta(0)`` reads
      everything on every check.
    - ``api_key_cache_ttl``: how long an authenticated API key is reused without reading the store
      (:mod:`billingkit.services.api_key_cache`): a key revoked by another process, or whose
      account was removed, keeps working at most this long; expiry and the environment are
      checked on every use, and a revocation through the same ``Billing`` applies at once.
      ``timedelta(0)`` reads the key on every request.
    - ``api_key_last_used_interval``: an API key's ``last_used_at`` is written at most once per
      this interval (default 10 minutes): only when authentication reads the key from the store
      (a cache miss) and the stored value is older, so it is at most this much (plus
      ``api_key_cache_ttl``) behind the key's real last use, and a busy key costs one write per
      interval, not one per request.
    - ``tenant_status_ttl``: how long a process reuses what it read of a tenant's suspension
      before a write (default 5 s; ``timedelta(0)`` reads it in every write unit of work). A
      suspension through the same ``Billing`` applies at once; one by another process within
      this long.
    - ``auto_invoice_check_interval``: how often the billing run prices the current usage of a
      subscription with an ``auto_invoice_threshold`` (> 0; default 5 minutes, as the reference).
    - ``auto_cancellation_grace_days``: ``None`` (the default) leaves subscriptions with unpaid
      invoices alone; a number of days (0 or more) makes every due-work run cancel, at once, the
      active subscriptions with a finalized subscription invoice still unpaid that many days after
      its due date (:mod:`billingkit.services.auto_cancellation`).
    - ``alert_check_interval``: how often the worker evaluates each alert setting (spend and
      entitlement alerts; wallet and feature balance alerts are evaluated at every run), see
      :mod:`billingkit.services.alert_runs`.
    - ``webhook_secret_key``: the Fernet key (or several, comma-separated: the first encrypts,
      any decrypts, so keys can be rotated) that encrypts webhook endpoint secrets at rest
      (:mod:`billingkit.services.webhook_secrets`). ``None``: each ``Billing`` draws a random key,
      so secrets stored by one process cannot sign in another (rotate them after configuring one).
    - ``webhook_interval``: seconds between the worker's webhook dispatcher passes.
    - ``webhook_batch_size``: deliveries claimed (and sent concurrently) per dispatcher batch.
    - ``webhook_concurrency``: the most requests in flight at once; ``webhook_timeout``: seconds
      a receiver has to answer.
    - ``webhook_max_attempts``: attempts before a delivery is ``failed``; retries wait
      ``webhook_retry_base`` doubled per failure, at most ``webhook_retry_cap``, jittered.
    - ``webhook_lease``: how long a dispatcher holds the deliveries it claimed; one killed
      mid-batch leaves them due again after it (more than ``webhook_timeout``).
    - ``webhook_disable_after``: failed deliveries in a row that disable an endpoint (``None``:
      never).

    - ``public_url``: where the HTTP adapter is reached from outside (``https://billing.example.com``),
      the start of the sandbox checkout page's address in ``payment_action.url`` and of a customer
      portal session's ``url``; ``None`` (the default) gives a path (``/v1/checkout/sandbox/...``,
      ``/v1/customer/portal``) the host resolves against its own address.
    - ``portal_session_lifetime``: how long a customer portal session token is valid (default
      one hour; at least one second).
    - ``export_page_size``: records an export task reads and writes per step (1 to 1000): each
      step commits that page's part of the CSV file with the task's progress.

    Invalid values raise :class:`~billingkit.ValidationError` naming the field.
    """

    token_secret: bytes | str | None = None
    max_bulk_events: int = DEFAULT_MAX_BULK_EVENTS
    renewal_notice: timedelta | None = DEFAULT_RENEWAL_NOTICE
    run_batch_size: int = 500
    worker_interval: float = 60.0
    invoice_finalization_delay: timedelta = timedelta(0)
    entitlement_cache_ttl: timedelta = DEFAULT_ENTITLEMENT_CACHE_TTL
    auto_invoice_check_interval: timedelta = DEFAULT_CHECK_INTERVAL
    api_key_cache_ttl: timedelta = DEFAULT_API_KEY_CACHE_TTL
    auto_cancellation_grace_days: int | None = None
    alert_check_interval: timedelta = DEFAULT_ALERT_CHECK_INTERVAL
    webhook_secret_key: str | None = None
    webhook_interval: float = 1.0
    webhook_batch_size: int = 200
    webhook_concurrency: int = 32
    webhook_timeout: float = 10.0
    webhook_max_attempts: int = 12
    webhook_retry_base: timedelta = timedelta(seconds=5)
    webhook_retry_cap: timedelta = timedelta(hours=1)
    webhook_lease: timedelta = timedelta(seconds=60)
    webhook_disable_after: int | None = 5
    public_url: str | None = None
    portal_session_lifetime: timedelta = timedelta(hours=1)
    api_key_last_used_interval: timedelta = DEFAULT_API_KEY_LAST_USED_INTERVAL
    tenant_status_ttl: timedelta = DEFAULT_TENANT_STATUS_TTL
    export_page_size: int = 1000

    def __post_init__(self) -> None:
        if isinstance(self.token_secret, str):
            object.__setattr__(self, "token_secret", self.token_secret.encode())
        if self.token_secret is not None and not isinstance(self.token_secret, bytes):
            raise ValidationError("token_secret must be bytes or text", field="token_secret")
        _whole(self.max_bulk_events, "max_bulk_events")
        _whole(self.run_batch_size, "run_batch_size")
        _whole(self.export_page_size, "export_page_size")
        if self.export_page_size > MAX_LIMIT:
            raise ValidationError(f"export_page_size must be at most {MAX_LIMIT}", field="export_page_size")
        if self.renewal_notice is not None and (
            not isinstance(self.renewal_notice, timedelta) or self.renewal_notice < timedelta(0)
        ):
            raise ValidationError(
                "renewal_notice must be a timedelta of at least 0, or None", field="renewal_notice"
            )
        delay = self.invoice_finalization_delay
        if not isinstance(delay, timedelta) or delay < timedelta(0):
            raise ValidationError(
                "invoice_finalization_delay must be a timedelta of at least 0",
                field="invoice_finalization_delay",
            )
        ttl = self.entitlement_cache_ttl
        if not isinstance(ttl, timedelta) or ttl < timedelta(0):
            raise ValidationError(
                "entitlement_cache_ttl must be a timedelta of at least 0", field="entitlement_cache_ttl"
            )
        key_ttl = self.api_key_cache_ttl
        if not isinstance(key_ttl, timedelta) or key_ttl < timedelta(0):
            raise ValidationError(
                "api_key_cache_ttl must be a timedelta of at least 0", field="api_key_cache_ttl"
            )
        used = self.api_key_last_used_interval
        if not isinstance(used, timedelta) or used <= timedelta(0):
            raise ValidationError(
                "api_key_last_used_interval must be a timedelta above 0", field="api_key_last_used_interval"
            )
        status_ttl = self.tenant_status_ttl
        if not isinstance(status_ttl, timedelta) or status_ttl < timedelta(0):
            raise ValidationError(
                "tenant_status_ttl must be a timedelta of at least 0", field="tenant_status_ttl"
            )
        check = self.auto_invoice_check_interval
        if not isinstance(check, timedelta) or check <= timedelta(0):
            raise ValidationError(
                "auto_invoice_check_interval must be a timedelta above 0", field="auto_invoice_check_interval"
            )
        alerts = self.alert_check_interval
        if not isinstance(alerts, timedelta) or alerts <= timedelta(0):
            raise ValidationError(
                "alert_check_interval must be a timedelta above 0", field="alert_check_interval"
            )
        grace = self.auto_cancellation_grace_days
        if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int) or grace < 0):
            raise ValidationError(
                f"auto_cancellation_grace_days must be whole days (at least 0) or None, not {grace!r}",
                field="auto_cancellation_grace_days",
            )
        for name in ("worker_interval", "webhook_interval", "webhook_timeout"):
            _seconds(getattr(self, name), name)
        for name in ("webhook_batch_size", "webhook_concurrency", "webhook_max_attempts"):
            _whole(getattr(self, name), name)
        for name in ("webhook_retry_base", "webhook_retry_cap", "webhook_lease"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value <= timedelta(0):
                raise ValidationError(f"{name} must be a timedelta above 0", field=name)
        if self.webhook_lease.total_seconds() <= self.webhook_timeout:
            raise ValidationError("webhook_lease must be longer than webhook_timeout", field="webhook_lease")
        if self.webhook_disable_after is not None:
            _whole(self.webhook_disable_after, "webhook_disable_after")
        if self.webhook_secret_key is not None and not isinstance(self.webhook_secret_key, str):
            raise ValidationError("webhook_secret_key must be text", field="webhook_secret_key")
        url = self.public_url
        if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
            raise ValidationError(f"public_url is an http(s) address, not {url!r}", field="public_url")
        portal = self.portal_session_lifetime
        if not isinstance(portal, timedelta) or portal < timedelta(seconds=1):
            raise ValidationError(
                "portal_session_lifetime must be a timedelta of at least one second",
                field="portal_session_lifetime",
            )
        interval = self.worker_interval
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0:
            raise ValidationError(
                f"worker_interval must be positive seconds, not {interval!r}", field="worker_interval"
            )

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (checked like the constructor's arguments); unknown names are a
        :class:`~billingkit.ValidationError` that lists the known ones."""
        known = [f.name for f in fields(self)]
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise ValidationError(
                f"unknown setting {unknown[0]!r}; settings are {', '.join(known)}", field=unknown[0]
            )
        return replace(self, **changes)

    def __repr__(self) -> str:
        # The secret is never shown: settings end up in logs and tracebacks.
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            hidden = f.name in ("token_secret", "webhook_secret_key") and value is not None
            parts.append(f"{f.name}=<hidden>" if hidden else f"{f.name}={value!r}")
        return f"Settings({', '.join(parts)})"
