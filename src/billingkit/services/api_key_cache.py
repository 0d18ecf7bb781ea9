"""The in-process cache of authenticated API keys (one per ``Billing``; nothing global).

Authenticating a key reads the store once (the key and whether its account is live, one
statement); a cache hit reads nothing. An entry holds, under the key's SHA-256 hash (never the
plain key), what the lookup resolved: the principal (tenant, environment, account id, account type
and the key's roles) and the key's own ``expires_at``. It is reused for at most
``Settings.api_key_cache_ttl`` (default 5 s; ``timedelta(0)`` turns the cache off), measured on
the ``Billing``'s clock from when the store was read.

What that means for a key:

- **expiry** is checked on every use against the cached ``expires_at``: an expired key is refused
  at once, cached or not;
- **the environment** (``X-Environment-ID``) is checked on every use against the cached
  environment: a key never answers in another scope;
- **roles** are cached as they were read. The roles of a key never change (spec: a key copies its
  account's roles at creation; new permissions need a new key), so the cache cannot serve stale
  roles;
- **revocation** (``scoped.api_keys.delete``) through this ``Billing`` drops the entry at once;
  a revocation by another process sharing the database, or a key's account removed behind the
  library's back, is honoured within the TTL.

Unknown, malformed, revoked and expired keys are never cached. At most ``max_entries`` keys are
kept (the oldest go first). The dictionary is guarded by a lock, so requests may run on many
threads.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from billingkit.domain.access import Actor

__all__ = ["DEFAULT_MAX_KEYS", "ApiKeyCache", "CachedKey"]

#: Keys one cache holds at most.
DEFAULT_MAX_KEYS = 10_000


@dataclass(frozen=True, slots=True)
class CachedKey:
    """What authenticating a key resolved, read from the store at ``read_at``."""

    tenant_id: str
    environment_id: str
    actor: Actor
    expires_at: datetime | None
    read_at: datetime


class ApiKeyCache:
    """Resolved API keys by hash (see the module doc). ``Billing`` makes one."""

    def __init__(self, max_entries: int = DEFAULT_MAX_KEYS) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._limit = max_entries
        self._lock = threading.Lock()
        self._items: dict[str, CachedKey] = {}

    def __repr__(self) -> str:
        return f"<ApiKeyCache keys={len(self._items)}>"

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key_hash: str, now: datetime, ttl: timedelta) -> CachedKey | None:
        """The entry of ``key_hash`` if it was read within ``ttl`` before ``now`` (an entry read
        "after" ``now``, the clock having gone back, is not trusted either)."""
        found = self._items.get(key_hash)
        if found is None:
            return None
        if not found.read_at <= now < found.read_at + ttl:
            self.forget(key_hash)
            return None
        return found

    def put(self, key_hash: str, entry: CachedKey) -> None:
        with self._lock:
            items = self._items
            items.pop(key_hash, None)
            while len(items) >= self._limit:
                items.pop(next(iter(items)))
            items[key_hash] = entry

    def forget(self, key_hash: str) -> None:
        """Drop one key (revoked through this ``Billing``)."""
        with self._lock:
            self._items.pop(key_hash, None)

    def clear(self) -> None:
        """Drop everything (e.g. after changing keys in the store behind the library's back)."""
        with self._lock:
            self._items.clear()
