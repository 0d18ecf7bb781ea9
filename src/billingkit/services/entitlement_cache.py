"""The in-process cache behind the entitlement check (one per ``Billing``; nothing global).

It keeps two things, each for at most ``Settings.entitlement_cache_ttl`` (default 30 s;
``timedelta(0)`` turns the cache off):

- **grants** per (scope, customer as named by the caller): the customer's aggregated entitlements
  with each metered feature's usage window and meter. An entry also ends at the first instant its
  data changes by itself (a window or period end, a subscription's start, end or ``cancel_at``, an
  add-on association's or entitlement's end). When this ``Billing`` commits a change that records
  a customer or subscription notification, that customer's entries go; an entitlement, feature,
  plan, add-on or meter notification drops every entry of its scope
  (:meth:`EntitlementCache.observe`). Changes made by other processes sharing the database are
  seen within the TTL.
- **usage heads** per (scope, customer, meter, window): the usage of ``[window start, t)``,
  where ``t`` is a minute (``LATE_EVENT_GRACE``) before the head was measured, for meters whose
  usage adds up over time (COUNT, SUM, SUM_WITH_MULTIPLIER without buckets or groups). A check
  adds the usage of ``[t, window end)``, read afresh every time, so new events count at once, and
  so do events stamped up to a minute before they are stored; only an event stamped before ``t``
  and stored after the head was measured (a late, back-dated event) waits for the head to
  expire: that is the one staleness of usage, bounded by the TTL.

Entries are immutable values; the dictionaries are guarded by a lock, so checks may run on many
threads. At most ``max_entries`` entries of each sort are kept (the oldest go first).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Generic, TypeVar

from billingkit.domain.catalog import Feature
from billingkit.domain.entitlement_aggregation import AggregatedFeature
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.periods import Period
from billingkit.domain.usage import MeterSpec

__all__ = ["DEFAULT_MAX_ENTRIES", "CustomerGrants", "EntitlementCache", "FeatureGrant", "UsageHead"]

#: Entries of each sort one cache holds at most.
DEFAULT_MAX_ENTRIES = 10_000
#: Notification families whose changes can alter what a customer is entitled to.
_GRANT_FAMILIES = frozenset({"subscription", "entitlement", "feature", "customer", "plan", "addon", "meter"})

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
Scope = tuple[str, str | None]
#: A usage head's key: scope, customer, meter and window.
HeadKey = tuple[Hashable, ...]


def _customer_of(event: NotificationEvent) -> str | None:
    """The customer a customer or subscription notification is about (``None``: another resource,
    or a payload without one)."""
    if event.entity_type == "customer":
        return event.entity_id
    if event.entity_type == "subscription":
        subscription = event.payload.get("subscription")
        customer = subscription.get("customer_id") if isinstance(subscription, dict) else None
        return customer if isinstance(customer, str) else None
    return None


@dataclass(frozen=True, slots=True)
class FeatureGrant:
    """A feature as the check sees it for one customer: ``granted`` is ``None`` when no granting
    subscription has a source for it; ``window`` and ``meter`` are set for a granted, enabled
    metered feature."""

    feature: Feature
    granted: AggregatedFeature | None = None
    window: Period | None = None
    meter: MeterSpec | None = None
    meter_id: str | None = None


@dataclass(frozen=True, slots=True)
class CustomerGrants:
    """What one customer is entitled to, valid until ``expires_at``. ``features`` holds each
    feature under its id and its lookup key; :meth:`EntitlementCache.add_feature` adds features
    the customer was asked about but has no grant for."""

    customer_id: str
    external_id: str
    features: dict[str, FeatureGrant]
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class UsageHead:
    """The usage of ``[window start, until)``, valid until ``expires_at``."""

    value: Decimal
    until: datetime
    expires_at: datetime


@dataclass(slots=True)
class _Entries(Generic[K, V]):
    """Insertion-ordered entries with a bound: the oldest go first."""

    limit: int
    items: dict[K, V] = field(default_factory=dict)

    def put(self, key: K, value: V) -> None:
        self.items.pop(key, None)
        while len(self.items) >= self.limit:
            self.items.pop(next(iter(self.items)))
        self.items[key] = value


class EntitlementCache:
    """Grants and usage heads of the entitlement check (see the module doc). ``Billing`` makes
    one; services receive it as an argument."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._lock = threading.Lock()
        self._grants: _Entries[tuple[Scope, str], CustomerGrants] = _Entries(max_entries)
        self._heads: _Entries[HeadKey, UsageHead] = _Entries(max_entries)

    def __repr__(self) -> str:
        return f"<EntitlementCache grants={len(self._grants.items)} usage_heads={len(self._heads.items)}>"

    # -- grants -----------------------------------------------------------------------------------

    def grants(self, scope: Scope, customer: str, now: datetime) -> CustomerGrants | None:
        """The unexpired grants of ``customer`` (as the caller named it) in ``scope``."""
        with self._lock:
            found = self._grants.items.get((scope, customer))
            if found is not None and now >= found.expires_at:
                del self._grants.items[(scope, customer)]
                return None
            return found

    def keep_grants(self, scope: Scope, customer: str, grants: CustomerGrants) -> None:
        with self._lock:
            self._grants.put((scope, customer), grants)

    def add_feature(self, grants: CustomerGrants, names: Iterable[str], grant: FeatureGrant) -> None:
        """Remember ``grant`` under ``names`` in ``grants`` (a feature the customer has no grant for)."""
        with self._lock:
            for name in names:
                grants.features[name] = grant

    # -- usage heads ------------------------------------------------------------------------------

    def usage_head(self, key: HeadKey, now: datetime) -> UsageHead | None:
        with self._lock:
            found = self._heads.items.get(key)
            if found is not None and now >= found.expires_at:
                del self._heads.items[key]
                return None
            return found

    def keep_usage_head(self, key: HeadKey, head: UsageHead) -> None:
        with self._lock:
            self._heads.put(key, head)

    # -- invalidation -----------------------------------------------------------------------------

    def forget(self, tenant_id: str, environment_id: str | None, customer_id: str | None = None) -> None:
        """Drop the grants of ``customer_id`` (every customer's when ``None``) in the scope (usage
        heads stay: they do not depend on grants)."""
        scope = (tenant_id, environment_id)
        self._drop({scope} if customer_id is None else set(), {scope: {customer_id}} if customer_id else {})

    def observe(self, events: Iterable[NotificationEvent]) -> None:
        """Called with the notifications a committed unit of work recorded: a change of a customer
        or a subscription drops that customer's grants; a change of the catalogue (entitlements,
        features, plans, add-ons, meters) drops its whole scope's."""
        scopes: set[Scope] = set()
        customers: dict[Scope, set[str]] = {}
        for event in events:
            if event.event_type.split(".", 1)[0] not in _GRANT_FAMILIES:
                continue
            scope = (event.tenant_id, event.environment_id)
            customer = _customer_of(event)
            if customer is None:
                scopes.add(scope)
            else:
                customers.setdefault(scope, set()).add(customer)
        if scopes or customers:
            self._drop(scopes, customers)

    def _drop(self, scopes: set[Scope], customers: dict[Scope, set[str]]) -> None:
        """One pass over the grants, whatever the number of changes a commit recorded."""
        with self._lock:
            items = self._grants.items
            doomed = [
                key
                for key, grants in items.items()
                if key[0] in scopes or grants.customer_id in customers.get(key[0], ())
            ]
            for key in doomed:
                del items[key]

    def clear(self) -> None:
        """Drop everything (e.g. after writing to the store behind the library's back)."""
        with self._lock:
            self._grants.items.clear()
            self._heads.items.clear()
