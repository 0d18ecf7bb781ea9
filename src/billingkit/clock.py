"""Clocks: the system clock and a test clock you can set and advance."""

from __future__ import annotations

import math
import threading
from datetime import UTC, datetime, timedelta

from dateutil.relativedelta import relativedelta

from billingkit.errors import ValidationError

__all__ = ["SystemClock", "TestClock"]

# The keyword steps of TestClock.advance, largest first (the order errors name them in).
_CALENDAR_STEPS = ("years", "months")
_FIXED_STEPS = ("weeks", "days", "hours", "minutes", "seconds")


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class TestClock:
    """A clock that only moves when told to. Thread-safe.

    - :meth:`advance` moves forward only, by calendar steps (``years``, ``months``: the day is
      clamped to short months, as billing periods are) and fixed steps (``weeks`` ... ``seconds``,
      or a ``timedelta``).
    - :meth:`set` jumps to any instant, backwards too (to replay a scenario from an earlier time).

    >>> clock = TestClock(datetime(2026, 1, 31, tzinfo=UTC))
    >>> clock.advance(days=1).isoformat()
    '2026-02-01T00:00:00+00:00'
    >>> clock.set(datetime(2024, 1, 31, 9, tzinfo=UTC)) and clock.advance(months=1).isoformat()
    '2024-02-29T09:00:00+00:00'
    """

    __test__ = False  # not a pytest test class

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._now = self._check(start)
        self._lock = threading.Lock()

    @staticmethod
    def _check(value: datetime) -> datetime:
        if not isinstance(value, datetime):
            raise ValidationError("the test clock needs a datetime", field="now")
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValidationError("the test clock needs a timezone-aware datetime", field="now")
        return value.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def set(self, value: datetime) -> datetime:
        """Jump to ``value`` (timezone-aware; stored as UTC) and return it.

        Unlike :meth:`advance`, ``set`` may move backwards: a test that replays a scenario or
        checks behaviour "before" something needs that. Going back undoes nothing that was
        stored while the clock was later (invoices, events and ``updated_at`` keep their times).
        Raises ``ValidationError`` (field ``now``) for a naive datetime.
        """
        with self._lock:
            self._now = self._check(value)
            return self._now

    def advance(
        self,
        delta: timedelta | None = None,
        *,
        years: int = 0,
        months: int = 0,
        weeks: float = 0,
        days: float = 0,
        hours: float = 0,
        minutes: float = 0,
        seconds: float = 0,
    ) -> datetime:
        """Move forward and return the new time.

        Calendar steps apply first, in UTC: ``years`` and ``months`` (whole numbers) keep the day
        of month, clamped to the target month's length, as :mod:`billingkit.domain.periods` does
        (31 Jan + 1 month = 28 Feb, or 29 Feb in a leap year; 29 Feb + 1 year = 28 Feb). Then
        ``weeks``, ``days``, ``hours``, ``minutes``, ``seconds`` and ``delta`` are added as fixed
        durations. Steps may be mixed and some may be negative (``months=1, days=-1``), but the
        result must not be before now. Raises ``ValidationError`` naming the argument: a
        non-number, a fractional ``years``/``months``, a step that lands before now (use
        :meth:`set` to go back), or one that leaves the datetime range.
        """
        calendar = {"years": years, "months": months}
        fixed = {"weeks": weeks, "days": days, "hours": hours, "minutes": minutes, "seconds": seconds}
        for name, value in calendar.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValidationError(f"{name} must be a whole number, got {value!r}", field=name)
        for name, amount in fixed.items():
            if isinstance(amount, bool) or not isinstance(amount, int | float) or not math.isfinite(amount):
                raise ValidationError(f"{name} must be a finite number, got {amount!r}", field=name)
        if delta is not None and not isinstance(delta, timedelta):
            raise ValidationError(f"delta must be a timedelta, got {delta!r}", field="delta")
        steps: dict[str, object] = {"delta": delta, **calendar, **fixed}
        given = [name for name, value in steps.items() if value]
        with self._lock:
            before = self._now
            try:
                moved: datetime = before + relativedelta(years=years, months=months)
                after = moved + timedelta(**fixed) + (delta or timedelta(0))
            except (OverflowError, ValueError):
                field = given[0] if given else "delta"
                raise ValidationError(
                    f"advancing by {_describe(steps)} leaves the supported date range (years 1-9999)",
                    field=field,
                ) from None
            if after < before:
                negative = [name for name in given if _is_negative(steps[name])]
                raise ValidationError(
                    f"advance() only moves forward: {_describe(steps)} lands on {after.isoformat()}, "
                    f"before now ({before.isoformat()}); use set() to move the clock back",
                    field=negative[0] if negative else given[0],
                )
            self._now = after
            return after

    def __repr__(self) -> str:
        return f"TestClock({self._now.isoformat()})"


def _is_negative(value: object) -> bool:
    if isinstance(value, timedelta):
        return value < timedelta(0)
    return isinstance(value, int | float) and value < 0


def _describe(steps: dict[str, object]) -> str:
    parts = [f"{name}={value!r}" for name, value in steps.items() if value]
    return ", ".join(parts) or "nothing"
