"""Sign-in throttling: repeated failed passwords lock an email out for a while.

Each :class:`~billingkit.Billing` holds one :class:`LoginThrottle`; nothing is shared between
``Billing`` objects or processes. Time comes from the caller (the ``Billing`` clock).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta

from billingkit.errors import TooManyRequests, ValidationError

__all__ = ["LoginThrottle"]


@dataclass(slots=True)
class _Entry:
    window_start: datetime
    last_attempt: datetime
    failures: int = 0
    lockouts: int = 0
    locked_until: datetime | None = None


class LoginThrottle:
    """Counts sign-in attempts per key (the lowercased email) and refuses them while locked.

    - An attempt counts as a failure when it starts; a correct password then clears the key
      (:meth:`succeeded`), so parallel guesses cannot slip past the limit.
    - ``max_failures`` failures within ``window`` (from the first of them) lock the key for
      ``lockout``; each further lockout without a success doubles it, up to ``max_lockout``.
      After a lockout ends the count starts again from zero.
    - A key with no attempt for ``forget_after`` (and not locked) is forgotten, lockout level
      included. At most ``max_entries`` keys are kept; past that the least recently tried key that
      is not locked is dropped (a locked one only when all are).

    Thread-safe: one lock guards the table.
    """

    def __init__(
        self,
        *,
        max_failures: int = 5,
        window: timedelta = timedelta(minutes=15),
        lockout: timedelta = timedelta(minutes=15),
        max_lockout: timedelta = timedelta(hours=1),
        forget_after: timedelta = timedelta(hours=24),
        max_entries: int = 10_000,
    ) -> None:
        if max_failures < 1 or max_entries < 1:
            raise ValidationError("max_failures and max_entries must be at least 1")
        if min(window, lockout) <= timedelta(0) or max_lockout < lockout or forget_after < max_lockout:
            raise ValidationError("throttle periods must be positive, lockout <= max_lockout <= forget_after")
        self.max_failures = max_failures
        self.window = window
        self.lockout = lockout
        self.max_lockout = max_lockout
        self.forget_after = forget_after
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(email: str) -> str:
        """The throttle key of an email: stripped and lowercased. Cut at 320 characters so a
        huge made-up value cannot bloat the table; no real address is that long (254 at most),
        so cutting never merges one with another."""
        return email.strip().lower()[:320]

    def attempt(self, key: str, now: datetime) -> None:
        """Start an attempt: raise :class:`TooManyRequests` while ``key`` is locked, else count
        the attempt as a failure (locking the key when it reaches the limit)."""
        with self._lock:
            self._forget_stale(now)
            entry = self._entries.get(key)
            if entry is not None and entry.locked_until is not None and now < entry.locked_until:
                wait = math.ceil((entry.locked_until - now).total_seconds())
                raise TooManyRequests(
                    f"too many failed sign-in attempts; try again in {wait} seconds",
                    retry_after=max(wait, 1),
                )
            if entry is None:
                entry = _Entry(window_start=now, last_attempt=now)
                self._entries[key] = entry
                if len(self._entries) > self.max_entries:
                    self._drop_one(now, keep=key)
            if entry.failures == 0 or now - entry.window_start >= self.window:
                entry.failures = 0
                entry.window_start = now
            entry.failures += 1
            entry.last_attempt = now
            self._entries.move_to_end(key)
            if entry.failures >= self.max_failures:
                step = self.lockout * (2 ** min(entry.lockouts, 32))
                entry.lockouts += 1
                entry.locked_until = now + min(step, self.max_lockout)
                entry.failures = 0

    def succeeded(self, key: str) -> None:
        """A correct password: forget everything about ``key``."""
        with self._lock:
            self._entries.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _drop_one(self, now: datetime, *, keep: str) -> None:
        # The least recently tried key that is not locked: flooding the table with made-up emails
        # must not free a locked key for more guesses. Only when every key is locked does the
        # oldest go (memory stays bounded either way). ``keep`` is the key just added.
        for key, entry in self._entries.items():
            if key != keep and (entry.locked_until is None or now >= entry.locked_until):
                del self._entries[key]
                return
        self._entries.popitem(last=False)

    def _forget_stale(self, now: datetime) -> None:
        # Entries are ordered by last attempt, so the stale ones are at the front.
        while self._entries:
            key, entry = next(iter(self._entries.items()))
            locked = entry.locked_until is not None and now < entry.locked_until
            if locked or now - entry.last_attempt < self.forget_after:
                return
            del self._entries[key]
