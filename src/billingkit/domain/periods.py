"""Billing periods and anchors: where each billing period of a subscription starts and ends.

A :class:`BillingSchedule` is a lattice of boundaries ``b(k) = anchor + k * (count * unit)`` for
every integer ``k`` (negative too), computed in the customer's IANA time zone and returned as UTC
instants.
Periods are half-open ``[b(k), b(k+1))``.

Rules:

- Every boundary is computed from the anchor plus ``k`` periods, never from the previous boundary,
  so an anchor day that is clamped in a short month comes back afterwards: anchor 31 Jan (monthly)
  → 29 Feb 2024 → 31 Mar → 30 Apr → 31 May. An annual anchor of 29 Feb falls on 28 Feb in other
  years.
- Weekly periods keep the anchor's weekday, monthly/quarterly/half-yearly periods its day of month,
  annual periods its month and day. The time of day always comes from the anchor.
- ``anniversary`` cycle: the anchor is the subscription start (or a given ``billing_anchor``).
  ``calendar`` cycle: boundaries sit on calendar starts (local midnight, Monday 00:00, the 1st of a
  month / quarter / half-year / year). The anchor is the calendar start of the period holding the
  subscription start plus one period, so the first period is a short stub:
  a monthly calendar subscription starting 10 Jan 15:00 has first period
  [10 Jan 15:00, 1 Feb 00:00).
- A start before the anchor gives a short first period up to the anchor: anchor day 20, start 5 Mar
  → first period [5 Mar, 20 Mar).
- An optional subscription end date cuts the last period short.

Time zones and DST: boundaries are local wall-clock times converted to UTC, so a monthly boundary
at 00:00 in Europe/Berlin is 23:00 UTC in winter and 22:00 UTC in summer, and a period that spans a
DST change is an hour shorter or longer. A wall time that does not exist (the spring-forward gap) is
read with the offset in force before the change, i.e. it lands as many minutes after the gap as it
was into it (02:30 on a 02:00→03:00 night becomes 03:30). A wall time that occurs twice (fall-back)
takes its first occurrence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.relativedelta import relativedelta

from billingkit.domain.validation import ensure_utc, parse_enum
from billingkit.errors import ValidationError

__all__ = [
    "MAX_PERIODS",
    "MAX_PERIOD_COUNT",
    "BillingCycle",
    "BillingPeriod",
    "BillingSchedule",
    "InvoiceCadence",
    "Period",
    "calendar_anchor",
    "check_billing_anchor",
    "ensure_utc",
    "epoch_seconds",
    "load_timezone",
    "next_billing_date",
    "period_multiple",
    "periods_between",
    "previous_billing_date",
]

#: Largest accepted ``billing_period_count``.
MAX_PERIOD_COUNT = 1000
#: Largest number of periods :meth:`BillingSchedule.periods` returns in one call.
MAX_PERIODS = 100_000


class BillingPeriod(StrEnum):
    """Length of one billing period (times ``billing_period_count``).

    ``ONETIME`` is accepted as a value but is not recurring: schedules reject it.
    """

    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    QUARTERLY = "QUARTERLY"
    HALF_YEARLY = "HALF_YEARLY"
    ANNUAL = "ANNUAL"
    ONETIME = "ONETIME"


class InvoiceCadence(StrEnum):
    """When a price is billed for a period: ``ADVANCE`` at its start, ``ARREAR`` at its end.

    The one definition; prices, subscription line items, invoices and proration all use it.
    """

    ADVANCE = "ADVANCE"
    ARREAR = "ARREAR"


class BillingCycle(StrEnum):
    """``anniversary``: periods follow the start (or anchor); ``calendar``: calendar-aligned."""

    ANNIVERSARY = "anniversary"
    CALENDAR = "calendar"


# Months per period for month-based periods, days per period for day-based ones.
_MONTHS = {
    BillingPeriod.MONTHLY: 1,
    BillingPeriod.QUARTERLY: 3,
    BillingPeriod.HALF_YEARLY: 6,
    BillingPeriod.ANNUAL: 12,
}
_DAYS = {BillingPeriod.DAILY: 1, BillingPeriod.WEEKLY: 7}


def period_multiple(longer: BillingPeriod, period: BillingPeriod, count: int = 1) -> int | None:
    """How many billing periods of ``count`` x ``period`` make up one ``longer`` period, or None
    when it is not a whole number of them (months and days never mix; ONETIME is no length).

    Examples: ANNUAL over MONTHLY -> 12; ANNUAL over 5 x MONTHLY -> None; WEEKLY over DAILY -> 7;
    MONTHLY over WEEKLY -> None.
    """
    for unit in (_MONTHS, _DAYS):
        big, small = unit.get(longer), unit.get(period)
        if big is not None and small is not None:
            step = small * count
            return big // step if big % step == 0 else None
    return None


def load_timezone(name: Any, field: str = "timezone") -> ZoneInfo:
    """Load an IANA time zone by name (``"Europe/Berlin"``).

    Raises ``ValidationError`` naming ``field`` for anything that is not a known IANA zone name.
    """
    if not isinstance(name, str) or not name or len(name) > 64:
        raise ValidationError(f"{field} must be an IANA time zone name", field=field)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError, UnicodeError):
        raise ValidationError(f"unknown time zone {name!r}", field=field) from None


def _coerce_period(value: Any, field: str = "billing_period") -> BillingPeriod:
    period = parse_enum(BillingPeriod, value, field=field)
    if period is BillingPeriod.ONETIME:
        raise ValidationError(f"{field} must be a recurring period, not ONETIME", field=field)
    return period


def _coerce_cycle(value: Any) -> BillingCycle:
    return parse_enum(BillingCycle, value, field="billing_cycle")


def _coerce_count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("billing_period_count must be an integer", field="billing_period_count")
    if not 1 <= value <= MAX_PERIOD_COUNT:
        raise ValidationError(
            f"billing_period_count must be between 1 and {MAX_PERIOD_COUNT}",
            field="billing_period_count",
        )
    return value


@dataclass(frozen=True, slots=True)
class Period:
    """A half-open interval ``[start, end)`` of UTC instants, ``start < end``.

    Raises ``ValidationError`` (fields ``start`` / ``end``) for naive datetimes or an empty
    interval.
    """

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        start = ensure_utc(self.start, "start")
        end = ensure_utc(self.end, "end")
        if end <= start:
            raise ValidationError("end must be after start", field="end")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)

    @property
    def seconds(self) -> int:
        """Length in whole seconds (instants truncated to the second)."""
        return epoch_seconds(self.end) - epoch_seconds(self.start)

    def contains(self, instant: datetime) -> bool:
        """True when ``start <= instant < end``. Raises ``ValidationError`` for a naive instant."""
        instant = ensure_utc(instant, "instant")
        return self.start <= instant < self.end


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)


def epoch_seconds(instant: datetime) -> int:
    """Whole seconds since 1970-01-01 UTC, truncated toward the past."""
    return (instant - _EPOCH) // _SECOND


def _calendar_floor(local: datetime, period: BillingPeriod) -> datetime:
    """Start (naive local wall time, 00:00) of the calendar period holding ``local``."""
    day = local.date()
    if period is BillingPeriod.DAILY:
        start = day
    elif period is BillingPeriod.WEEKLY:
        start = day - timedelta(days=day.weekday())
    elif period is BillingPeriod.MONTHLY:
        start = day.replace(day=1)
    elif period is BillingPeriod.QUARTERLY:
        start = date(day.year, (day.month - 1) // 3 * 3 + 1, 1)
    elif period is BillingPeriod.HALF_YEARLY:
        start = date(day.year, 1 if day.month < 7 else 7, 1)
    else:
        start = date(day.year, 1, 1)
    return datetime(start.year, start.month, start.day)


def _add_months(local: datetime, months: int) -> datetime:
    """``local`` moved by ``months`` calendar months, the day clamped to the target month's length
    (``dateutil.relativedelta``).

    Example: 31 Jan + 1 → 29 Feb (2024); 31 Jan + 2 → 31 Mar. Raises ``ValueError`` or
    ``OverflowError`` out of range.
    """
    moved: datetime = local + relativedelta(months=months)
    return moved


def _to_utc(local: datetime, zone: ZoneInfo) -> datetime:
    # fold=0: first occurrence of repeated wall times, pre-transition offset inside gaps.
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC)


@dataclass(frozen=True, slots=True)
class BillingSchedule:
    """The billing boundaries of a subscription.

    ``anchor`` (aware datetime, stored as UTC) is itself a boundary; ``period`` and ``count`` give
    the step (``count`` between 1 and :data:`MAX_PERIOD_COUNT`); ``timezone`` is the IANA zone in
    which calendar arithmetic happens. With ``cycle=calendar`` the anchor must be a calendar start
    in that zone (use :meth:`for_start` to derive it). Raises ``ValidationError`` on fields
    ``billing_anchor``, ``billing_period``, ``billing_period_count``, ``billing_cycle`` or
    ``timezone``.

    Example: monthly, anchor 2024-01-31 09:00 UTC → boundaries 2024-02-29 09:00, 2024-03-31 09:00.
    """

    anchor: datetime
    period: BillingPeriod
    count: int = 1
    cycle: BillingCycle = BillingCycle.ANNIVERSARY
    timezone: str = "UTC"
    _zone: ZoneInfo = field(init=False, repr=False, compare=False, hash=False)
    _local_anchor: datetime = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        anchor = ensure_utc(self.anchor, "billing_anchor")
        period = _coerce_period(self.period)
        count = _coerce_count(self.count)
        cycle = _coerce_cycle(self.cycle)
        zone = load_timezone(self.timezone)
        try:
            local = anchor.astimezone(zone).replace(tzinfo=None, fold=0)
        except (OverflowError, ValueError):
            raise ValidationError(
                "billing_anchor is outside the supported range", field="billing_anchor"
            ) from None
        if cycle is BillingCycle.CALENDAR:
            floor = _calendar_floor(local, period)
            try:
                aligned = _to_utc(floor, zone) == anchor
            except (OverflowError, ValueError):
                aligned = False
            if not aligned:
                raise ValidationError(
                    "with the calendar cycle the billing anchor must be the start of a calendar "
                    f"{period.value.lower()} period in {self.timezone}",
                    field="billing_anchor",
                )
            # Keep the intended wall time (00:00) even when that midnight is skipped by DST.
            local = floor
        setattr_(self, "anchor", anchor)
        setattr_(self, "period", period)
        setattr_(self, "count", count)
        setattr_(self, "cycle", cycle)
        setattr_(self, "_zone", zone)
        setattr_(self, "_local_anchor", local)

    @classmethod
    def for_start(
        cls,
        start: datetime,
        *,
        period: BillingPeriod,
        count: int = 1,
        cycle: BillingCycle = BillingCycle.ANNIVERSARY,
        timezone: str = "UTC",
        billing_anchor: datetime | None = None,
    ) -> BillingSchedule:
        """The schedule of a subscription starting at ``start``.

        anniversary: anchor = ``billing_anchor`` if given, else ``start``. calendar: anchor =
        :func:`calendar_anchor` of ``start``; a ``billing_anchor`` is then a ``ValidationError``
        (field ``billing_anchor``).
        Example: calendar, monthly, start 2024-01-10 → anchor 2024-02-01.
        """
        cycle = _coerce_cycle(cycle)
        check_billing_anchor(billing_cycle=cycle, billing_anchor=billing_anchor)
        if cycle is BillingCycle.CALENDAR:
            anchor = calendar_anchor(start, period=period, count=count, timezone=timezone)
        else:
            anchor = ensure_utc(start if billing_anchor is None else billing_anchor, "billing_anchor")
            ensure_utc(start, "start_date")
        return cls(anchor=anchor, period=period, count=count, cycle=cycle, timezone=timezone)

    # -- boundaries -------------------------------------------------------------------------------

    def boundary(self, k: int) -> datetime:
        """The ``k``-th boundary (``k = 0`` is the anchor; negative ``k`` are before it), in UTC.

        Raises ``ValidationError`` (field ``k``) when it falls outside the datetime range.
        """
        return self._boundary(k, "k")

    def _boundary(self, k: int, field_name: str) -> datetime:
        if k == 0:
            return self.anchor
        months = _MONTHS.get(self.period)
        try:
            if months is not None:
                local = _add_months(self._local_anchor, k * months * self.count)
            else:
                local = self._local_anchor + timedelta(days=k * _DAYS[self.period] * self.count)
            return _to_utc(local, self._zone)
        except (OverflowError, ValueError):
            raise ValidationError(
                f"{field_name} is outside the supported date range", field=field_name
            ) from None

    def _index_at_or_before(self, instant: datetime, field_name: str) -> int:
        """The largest ``k`` with ``boundary(k) <= instant``."""
        try:
            local = instant.astimezone(self._zone).replace(tzinfo=None)
        except (OverflowError, ValueError):
            raise ValidationError(
                f"{field_name} is outside the supported date range", field=field_name
            ) from None
        anchor = self._local_anchor
        months = _MONTHS.get(self.period)
        if months is not None:
            elapsed = (local.year - anchor.year) * 12 + local.month - anchor.month
            k = elapsed // (months * self.count)
        else:
            elapsed = (local.date() - anchor.date()).days
            k = elapsed // (_DAYS[self.period] * self.count)
        # The estimate is off by at most one or two steps (day of month, time of day, DST).
        while self._boundary(k, field_name) > instant:
            k -= 1
        while self._boundary(k + 1, field_name) <= instant:
            k += 1
        return k

    def next_boundary(self, instant: datetime) -> datetime:
        """The first boundary strictly after ``instant`` (the next billing date), in UTC.

        Example: monthly anchor 31 Jan, instant 31 Jan → 29 Feb (2024). Raises ``ValidationError``.
        """
        instant = ensure_utc(instant, "instant")
        return self._boundary(self._index_at_or_before(instant, "instant") + 1, "instant")

    def boundary_after_periods(self, instant: datetime, periods: int) -> datetime:
        """The boundary ``periods`` billing periods after the start of the period containing
        ``instant`` (the period of ``instant`` counts as the first, even when it started earlier).

        Example: monthly anchor 1 Jan, instant 1 Jan, 2 periods → 1 Mar; instant 15 Jan → 1 Mar.
        Raises ``ValidationError`` (field ``end_date``) beyond the supported date range.
        """
        instant = ensure_utc(instant, "start_date")
        return self._boundary(self._index_at_or_before(instant, "start_date") + periods, "end_date")

    def previous_boundary(self, instant: datetime) -> datetime:
        """The last boundary strictly before ``instant`` (the previous billing date), in UTC.

        For a boundary ``b``: ``previous_boundary(next_boundary(b)) == b`` and
        ``next_boundary(previous_boundary(b)) == b``. Raises ``ValidationError``.
        """
        instant = ensure_utc(instant, "instant")
        k = self._index_at_or_before(instant, "instant")
        if self._boundary(k, "instant") == instant:
            k -= 1
        return self._boundary(k, "instant")

    def period_containing(self, instant: datetime) -> Period:
        """The full billing period ``[b(k), b(k+1))`` holding ``instant``.

        Raises ``ValidationError`` for a naive or out-of-range instant.
        """
        instant = ensure_utc(instant, "instant")
        k = self._index_at_or_before(instant, "instant")
        return Period(self._boundary(k, "instant"), self._boundary(k + 1, "instant"))

    def first_period(self, start: datetime, *, end_date: datetime | None = None) -> Period:
        """The first period of a subscription starting at ``start``: ``[start, next boundary)``.

        It is a short stub when ``start`` is not a boundary, and is cut at ``end_date`` if that
        comes first. Raises ``ValidationError`` (``end_date`` not after ``start``, naive datetimes).
        """
        start = ensure_utc(start, "start_date")
        end = self._boundary(self._index_at_or_before(start, "start_date") + 1, "start_date")
        if end_date is not None:
            end_date = ensure_utc(end_date, "end_date")
            if end_date <= start:
                raise ValidationError("end_date must be after start_date", field="end_date")
            end = min(end, end_date)
        return Period(start, end)

    def periods(self, start: datetime, end: datetime, *, end_date: datetime | None = None) -> list[Period]:
        """The billing periods of a subscription that starts at ``start``, up to ``end``.

        Returns every period that begins before ``end``: the first is ``[start, next boundary)``,
        the others run boundary to boundary and are not clipped at ``end`` (so the last one usually
        reaches past it). With ``end_date`` (the subscription's end) no period goes past it and the
        one holding it is cut short. ``end <= start`` or ``end_date <= start`` gives ``[]``.
        Example: monthly anchor 15 Jan, start 15 Jan, end 20 Mar → [15 Jan, 15 Feb), [15 Feb,
        15 Mar), [15 Mar, 15 Apr). Raises ``ValidationError`` (naive datetimes, more than
        :data:`MAX_PERIODS` periods).
        """
        start = ensure_utc(start, "start")
        end = ensure_utc(end, "end")
        cut = None if end_date is None else ensure_utc(end_date, "end_date")
        result: list[Period] = []
        if end <= start or (cut is not None and cut <= start):
            return result
        k = self._index_at_or_before(start, "start")
        current = start
        while current < end and (cut is None or current < cut):
            k += 1
            boundary = self._boundary(k, "end")
            if cut is not None and boundary > cut:
                boundary = cut
            result.append(Period(current, boundary))
            if len(result) > MAX_PERIODS:
                raise ValidationError(f"more than {MAX_PERIODS} billing periods requested", field="end")
            current = boundary
        return result


def check_billing_anchor(*, billing_cycle: BillingCycle, billing_anchor: datetime | None) -> None:
    """A ``billing_anchor`` goes with the anniversary cycle only (calendar periods are anchored on
    calendar boundaries); otherwise a ``ValidationError`` on ``billing_anchor``."""
    if billing_cycle is BillingCycle.CALENDAR and billing_anchor is not None:
        raise ValidationError(
            "billing_anchor is only allowed with the anniversary cycle", field="billing_anchor"
        )


def calendar_anchor(
    start: datetime, *, period: BillingPeriod, count: int = 1, timezone: str = "UTC"
) -> datetime:
    """The anchor of a calendar-cycle subscription starting at ``start``, in UTC.

    It is the calendar start of the period holding ``start`` (in ``timezone``) plus ``count``
    periods: daily → next local midnight; weekly → next Monday 00:00 (a Monday start gives the
    following Monday); monthly → the 1st of the next month; quarterly → 1 Jan / 1 Apr / 1 Jul /
    1 Oct; half-yearly → 1 Jan / 1 Jul; annual → 1 Jan of the next year.
    Example: monthly, start 2024-01-10 15:00 Europe/Berlin → 2024-01-31 23:00 UTC (1 Feb 00:00
    local).
    Raises ``ValidationError``.
    """
    start = ensure_utc(start, "start_date")
    recurring = _coerce_period(period)
    count = _coerce_count(count)
    zone = load_timezone(timezone)
    try:
        floor = _calendar_floor(start.astimezone(zone).replace(tzinfo=None), recurring)
        months = _MONTHS.get(recurring)
        if months is not None:
            local = _add_months(floor, months * count)
        else:
            local = floor + timedelta(days=_DAYS[recurring] * count)
        return _to_utc(local, zone)
    except (OverflowError, ValueError):
        raise ValidationError("start_date is outside the supported date range", field="start_date") from None


def next_billing_date(
    current: datetime,
    *,
    anchor: datetime,
    period: BillingPeriod,
    count: int = 1,
    timezone: str = "UTC",
    end_date: datetime | None = None,
) -> datetime:
    """The first billing boundary after ``current``, capped at ``end_date``; UTC.

    Example: monthly, anchor 2024-01-31, current 2024-02-29 → 2024-03-31. Raises ``ValidationError``
    (also when ``end_date`` is not after ``current``).
    """
    schedule = BillingSchedule(anchor=anchor, period=period, count=count, timezone=timezone)
    result = schedule.next_boundary(current)
    if end_date is not None:
        end_date = ensure_utc(end_date, "end_date")
        if end_date <= ensure_utc(current, "instant"):
            raise ValidationError("end_date must be after the current date", field="end_date")
        result = min(result, end_date)
    return result


def previous_billing_date(
    current: datetime,
    *,
    anchor: datetime,
    period: BillingPeriod,
    count: int = 1,
    timezone: str = "UTC",
) -> datetime:
    """The last billing boundary strictly before ``current``; UTC. Inverse of
    :func:`next_billing_date` on boundaries. Raises ``ValidationError``.
    """
    schedule = BillingSchedule(anchor=anchor, period=period, count=count, timezone=timezone)
    return schedule.previous_boundary(current)


def periods_between(
    start: datetime,
    end: datetime,
    *,
    anchor: datetime,
    period: BillingPeriod,
    count: int = 1,
    timezone: str = "UTC",
    end_date: datetime | None = None,
) -> list[Period]:
    """Shorthand for ``BillingSchedule(anchor, period, count, timezone=...).periods(start, end,
    end_date=end_date)``. Raises ``ValidationError``.
    """
    schedule = BillingSchedule(anchor=anchor, period=period, count=count, timezone=timezone)
    return schedule.periods(start, end, end_date=end_date)
