"""When a credit grant gives a subscription its credits, until when they last, and what a
subscription's status does to a grant that falls due (reference notes §6.1).

Pure rules; :mod:`billingkit.services.credit_grant_applications` stores their results as credit
grant applications (CGAs). Worked examples (UTC, a subscription starting 1 Jan 2024 unless said):

**Periods** (:func:`first_grant_period`, :func:`next_grant_period`)

* ``ONETIME``: one period starting with the subscription, ``[1 Jan, open)``, reason
  ``onetime_credit_grant``. A grant ``start_date`` of 15 Jan moves it to 15 Jan.
* ``RECURRING``, ``MONTHLY`` x 1: ``[1 Jan, 1 Feb)`` (``first_time_recurring_credit_grant``), then
  ``[1 Feb, 1 Mar)``, ``[1 Mar, 1 Apr)``... (``recurring_credit_grant``). From 31 Jan:
  ``[31 Jan, 29 Feb)``, ``[29 Feb, 31 Mar)``: each boundary is the start plus k periods in the
  subscription's time zone, so a clamped day comes back (as billing periods do).
  ``QUARTERLY`` x 2: ``[1 Jan, 1 Jul)``, ``[1 Jul, 1 Jan 2025)``.
* No period starts at or after the grant's ``end_date`` or the subscription's ``end_date`` (the
  earlier of the two), and the period holding it is cut there: monthly with ``end_date`` 15 Mar
  -> ``[1 Jan, 1 Feb)``, ``[1 Feb, 1 Mar)``, ``[1 Mar, 15 Mar)``, then none. The cut period still
  grants its full credits (grants are not prorated).

**Expiry** (:func:`grant_expiry`), for a CGA period starting 31 Jan 2024 10:00

* ``NEVER`` -> none.
* ``DURATION`` 2 ``DAY`` -> 2 Feb 10:00 (48 h); 1 ``WEEK`` -> 7 Feb 10:00; 1 ``MONTH`` -> 29 Feb
  10:00 (calendar month, the day clamped); 1 ``YEAR`` from 29 Feb 2024 -> 28 Feb 2025.
* ``BILLING_CYCLE`` -> the end of the subscription's billing period holding the CGA period start
  (:func:`billing_cycle_end`): monthly billing from 31 Jan -> 29 Feb 10:00.

**Status at processing** (:func:`decide`): ``cancelled`` -> cancel (no further CGA);
credits already expired -> skip; ``paused`` -> skip; ``draft``, ``incomplete`` -> defer (retry
later); ``active``, ``trialing`` -> apply. The next period's CGA is made when one is applied or
skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from types import MappingProxyType

from dateutil.relativedelta import relativedelta

from billingkit.domain.catalog import (
    CreditGrant,
    CreditGrantCadence,
    CreditGrantExpiryType,
    CreditGrantExpiryUnit,
    CreditGrantPeriod,
)
from billingkit.domain.credit_grant_applications import ApplicationReason
from billingkit.domain.periods import BillingPeriod, BillingSchedule, Period
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.domain.validation import ensure_utc
from billingkit.errors import ValidationError

__all__ = [
    "GRANT_BILLING_PERIODS",
    "Decision",
    "Disposition",
    "GrantPeriod",
    "billing_cycle_end",
    "decide",
    "disposition",
    "first_grant_period",
    "grant_expiry",
    "next_grant_period",
]

#: The billing period each grant period steps by.
GRANT_BILLING_PERIODS = MappingProxyType(
    {
        CreditGrantPeriod.DAILY: BillingPeriod.DAILY,
        CreditGrantPeriod.WEEKLY: BillingPeriod.WEEKLY,
        CreditGrantPeriod.MONTHLY: BillingPeriod.MONTHLY,
        CreditGrantPeriod.QUARTERLY: BillingPeriod.QUARTERLY,
        CreditGrantPeriod.HALF_YEARLY: BillingPeriod.HALF_YEARLY,
        CreditGrantPeriod.ANNUAL: BillingPeriod.ANNUAL,
    }
)


@dataclass(frozen=True, slots=True)
class GrantPeriod:
    """One period a grant gives its credits for: ``[start, end)`` (``end`` ``None``: open, for a
    ONETIME grant), and the reason its CGA records."""

    start: datetime
    end: datetime | None
    reason: ApplicationReason


def _window(
    grant: CreditGrant, subscription_start: datetime, subscription_end: datetime | None
) -> tuple[datetime, datetime | None]:
    """Where the grant's first period starts and the instant no period may start at or after."""
    start = ensure_utc(subscription_start, "start_date")
    if grant.start_date is not None and grant.start_date > start:
        start = grant.start_date
    ends = [end for end in (grant.end_date, subscription_end) if end is not None]
    return start, (min(ends) if ends else None)


def _schedule(grant: CreditGrant, anchor: datetime, timezone: str) -> BillingSchedule:
    if grant.period is None:
        raise ValidationError("a RECURRING grant needs a period", field="period")
    return BillingSchedule(
        anchor=anchor,
        period=GRANT_BILLING_PERIODS[grant.period],
        count=grant.period_count or 1,
        timezone=timezone,
    )


def _period(
    grant: CreditGrant, start: datetime, cut: datetime | None, timezone: str, anchor: datetime, first: bool
) -> GrantPeriod | None:
    if cut is not None and start >= cut:
        return None
    if grant.cadence is CreditGrantCadence.ONETIME:
        return GrantPeriod(start, None, ApplicationReason.ONETIME)
    end = _schedule(grant, anchor, timezone).next_boundary(start)
    if cut is not None:
        end = min(end, cut)
    reason = ApplicationReason.FIRST_TIME_RECURRING if first else ApplicationReason.RECURRING
    return GrantPeriod(start, end, reason)


def first_grant_period(
    grant: CreditGrant,
    *,
    subscription_start: datetime,
    subscription_end: datetime | None = None,
    timezone: str = "UTC",
) -> GrantPeriod | None:
    """The first period ``grant`` gives credits for on a subscription running from
    ``subscription_start`` (until ``subscription_end``), periods computed in ``timezone``;
    ``None`` when the grant ends before it could start (see the module's examples)."""
    start, cut = _window(grant, subscription_start, subscription_end)
    return _period(grant, start, cut, timezone, start, first=True)


def next_grant_period(
    grant: CreditGrant,
    previous_start: datetime,
    *,
    subscription_start: datetime,
    subscription_end: datetime | None = None,
    timezone: str = "UTC",
) -> GrantPeriod | None:
    """The period after the one starting at ``previous_start``: ``None`` for a ONETIME grant
    and once the grant or the subscription has ended.

    Example: monthly from 31 Jan 2024, previous 29 Feb -> ``[31 Mar, 30 Apr)``.
    """
    if grant.cadence is CreditGrantCadence.ONETIME:
        return None
    anchor, cut = _window(grant, subscription_start, subscription_end)
    start = _schedule(grant, anchor, timezone).next_boundary(ensure_utc(previous_start, "period_start"))
    return _period(grant, start, cut, timezone, anchor, first=False)


# -- expiry --------------------------------------------------------------------------------------


def billing_cycle_end(
    schedule: BillingSchedule,
    instant: datetime,
    *,
    current: Period | None = None,
    end_date: datetime | None = None,
) -> datetime:
    """The end of the subscription billing period holding ``instant``: the ``current`` period's
    end when it holds ``instant`` (a first stub or a trial window is not on the ``schedule``'s
    lattice), else the lattice period's; never after ``end_date``.

    Example: monthly calendar billing, current period [10 Jan, 1 Feb): 20 Jan -> 1 Feb;
    15 Feb -> 1 Mar.
    """
    instant = ensure_utc(instant, "instant")
    end = (
        current.end if current is not None and current.contains(instant) else schedule.next_boundary(instant)
    )
    return min(end, end_date) if end_date is not None else end


def grant_expiry(
    grant: CreditGrant, period_start: datetime, *, cycle_end: datetime | None = None
) -> datetime | None:
    """When the credits of the grant's period starting ``period_start`` expire (``None``: never).

    ``DURATION``: ``DAY`` and ``WEEK`` are multiples of 24 hours, ``MONTH`` and ``YEAR`` calendar
    steps in UTC with the day clamped (31 Jan + 1 month -> 29 Feb 2024). ``BILLING_CYCLE``:
    ``cycle_end`` (see :func:`billing_cycle_end`), required then (``ValidationError`` without it).
    """
    start = ensure_utc(period_start, "period_start")
    kind = grant.expiration_type
    if kind is CreditGrantExpiryType.NEVER:
        return None
    if kind is CreditGrantExpiryType.BILLING_CYCLE:
        if cycle_end is None:
            raise ValidationError("BILLING_CYCLE expiry needs the billing period's end", field="cycle_end")
        return cycle_end
    n, unit = grant.expiration_duration, grant.expiration_duration_unit
    if n is None or unit is None:
        raise ValidationError("DURATION expiry needs a duration and unit", field="expiration_duration")
    if unit is CreditGrantExpiryUnit.DAY:
        return start + timedelta(days=n)
    if unit is CreditGrantExpiryUnit.WEEK:
        return start + timedelta(weeks=n)
    step = relativedelta(months=n) if unit is CreditGrantExpiryUnit.MONTH else relativedelta(years=n)
    moved: datetime = start + step
    return moved


# -- what a due CGA does -------------------------------------------------------------------------


class Disposition(StrEnum):
    APPLY = "apply"
    DEFER = "defer"
    SKIP = "skip"
    CANCEL = "cancel"


_BY_STATUS = MappingProxyType(
    {
        SubscriptionStatus.ACTIVE: Disposition.APPLY,
        SubscriptionStatus.TRIALING: Disposition.APPLY,
        SubscriptionStatus.DRAFT: Disposition.DEFER,
        SubscriptionStatus.INCOMPLETE: Disposition.DEFER,
        SubscriptionStatus.PAUSED: Disposition.SKIP,
        SubscriptionStatus.CANCELLED: Disposition.CANCEL,
    }
)


def disposition(status: SubscriptionStatus) -> Disposition:
    """What a subscription in ``status`` does with a grant that falls due: ``active``,
    ``trialing`` apply; ``draft``, ``incomplete`` defer; ``paused`` skip; ``cancelled`` cancel."""
    return _BY_STATUS[status]


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with a due CGA, and why (``failure_reason`` of a skipped or cancelled one)."""

    disposition: Disposition
    reason: str | None = None


def decide(status: SubscriptionStatus, expiry: datetime | None, now: datetime) -> Decision:
    """The fate of a CGA due at ``now`` whose credits would expire at ``expiry``, on a
    subscription in ``status``: cancelled -> cancel; credits expired (``expiry <= now``) -> skip
    whatever else the status says, so the grant's next period is not held back; otherwise
    :func:`disposition`.

    | status | expiry | decision |
    |---|---|---|
    | cancelled | any | cancel |
    | active | 1 Feb, now 2 Feb | skip (expired) |
    | incomplete | 1 Mar, now 2 Feb | defer |
    | paused | none | skip |
    | trialing | none | apply |
    """
    if status is SubscriptionStatus.CANCELLED:
        return Decision(Disposition.CANCEL, "subscription cancelled")
    if expiry is not None and expiry <= now:
        return Decision(Disposition.SKIP, f"credits expired at {expiry.isoformat()} before they were granted")
    outcome = disposition(status)
    reason = f"subscription {status.value}" if outcome is not Disposition.APPLY else None
    return Decision(outcome, reason)
