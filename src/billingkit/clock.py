"""Clocks: the system clock and a test clock you can set and advance."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from billingkit.errors import ValidationError

__all__ = ["SystemClock", "TestClock"]


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class TestClock:
    """A clock that only moves when told to. Thread-safe.

    >>> clock = TestClock(datetime(2026, 1, 31, tzinfo=UTC))
    >>> clock.advance(days=1).isoformat()
    '2026-02-01T00:00:00+00:00'
    """

    __test__ = False  # not a pytest test class

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._now = self._check(start)
        self._lock = threading.Lock()

    @staticmethod
    def _check(value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValidationError("the test clock needs a timezone-aware datetime", field="now")
        return value.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def set(self, value: datetime) -> datetime:
        """Move to ``value`` (forwards or backwards) and return it."""
        with self._lock:
            self._now = self._check(value)
            return self._now

    def advance(self, delta: timedelta | None = None, **parts: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**parts)``; return the new time."""
        step = delta if delta is not None else timedelta(**parts)
        if step < timedelta(0):
            raise ValidationError("advance() moves forward only; use set()", field="delta")
        with self._lock:
            self._now = self._now + step
            return self._now

    def __repr__(self) -> str:
        return f"TestClock({self._now.isoformat()})"
