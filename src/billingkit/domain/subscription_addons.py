"""Add-ons on a subscription: when an add-on's lines bill, and when its association counts.

Pure rules; :mod:`billingkit.services.subscription_addons` reads the store, calls them and writes.
Worked examples (UTC, a monthly subscription whose current period is ``[1 May, 1 Jun)``):

**Line windows** (:func:`line_window`)

* ``recurring`` add-on from 10 May: every line ``[10 May, open)``; it bills every period from
  then on (a FIXED ADVANCE line of 30.00 is charged 30.00 x 22/31 days for May when
  ``create_prorations`` asks for it at once, else from June; a FIXED ARREAR line is charged the
  share of May it covered at the end of May; usage counts from 10 May).
* ``onetime`` add-on from 10 May: its billing period is May (:func:`onetime_period`), so its FIXED
  lines are ``[1 May, 1 Jun)`` (charged once, in full: 30.00) and its USAGE lines
  ``[10 May, 1 Jun)`` (the usage of the rest of May); after 1 June none of its lines bills.
  From 5 June (a later period): FIXED ``[1 Jun, 1 Jul)``, USAGE ``[5 Jun, 1 Jul)``.

**In force** (:func:`in_force`): an association counts for a window it overlaps. Added 10 May,
removed with effect 1 June: counts for May's usage, not for June's. Removed with effect 10 May
(its own start): counts for nothing.

**Removal** (:func:`removal_end`): the effect date defaults to the current period's end; an
association that has not started by then ends at its own start (it never was in force).
"""

from __future__ import annotations

from datetime import datetime

from billingkit.domain.addon_associations import AddonCadence
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import BillingSchedule, Period
from billingkit.errors import ValidationError

__all__ = ["in_force", "line_window", "onetime_period", "removal_end"]


def onetime_period(start: datetime, current: Period, schedule: BillingSchedule) -> Period:
    """The billing period a ``onetime`` add-on starting at ``start`` bills in: the subscription's
    ``current`` period when it holds ``start`` (a first stub included), else the period of
    ``schedule`` holding ``start`` (a later one).

    Example: current ``[1 May, 1 Jun)``, start 10 May -> ``[1 May, 1 Jun)``; start 5 Jun ->
    ``[1 Jun, 1 Jul)``. Raises ``ValidationError`` for a naive ``start``.
    """
    if current.contains(start):
        return current
    return schedule.period_containing(start)


def line_window(
    cadence: AddonCadence,
    price_type: PriceType,
    start: datetime,
    period: Period | None,
    *,
    price_start: datetime | None = None,
    price_end: datetime | None = None,
) -> tuple[datetime, datetime | None]:
    """``(start_date, end_date)`` of an add-on line for a price of ``price_type`` whose association
    starts at ``start`` (``end_date`` ``None``: open), within the price's own
    ``[price_start, price_end)``.

    ``recurring``: from ``start``. ``onetime``: within ``period`` (its :func:`onetime_period`,
    required then): FIXED lines cover the whole period, so their one charge is the full price (a
    calendar first stub with ``create_prorations`` prorates it like the plan's fees); USAGE lines
    count from ``start``; both end with the period. Example: see the module doc.
    """
    if cadence is AddonCadence.RECURRING:
        begin, end = start, price_end
    else:
        if period is None:
            raise ValidationError("a onetime add-on line needs its billing period", field="cadence")
        begin = period.start if price_type is PriceType.FIXED else start
        end = period.end if price_end is None else min(period.end, price_end)
    if price_start is not None and price_start > begin:
        begin = price_start
    return begin, end


def in_force(start: datetime, end: datetime | None, window_start: datetime, window_end: datetime) -> bool:
    """Whether an association in force over ``[start, end)`` (``end`` ``None``: open) overlaps the
    window ``[window_start, window_end)``.

    Example: association ``[10 May, 1 Jun)``: window May -> True, June -> False; ``[10 May,
    10 May)`` (removed at its start) -> False for every window.
    """
    if end is not None and end <= start:
        return False
    return start < window_end and (end is None or end > window_start)


def removal_end(effective: datetime, association_start: datetime) -> datetime:
    """When an association removed with effect ``effective`` stops: ``effective``, or its own start
    when that is later (a removal before it started means it never is in force).

    Example: started 10 May, removed with effect 1 Jun -> 1 Jun; starting 5 Jun, removed with
    effect 1 Jun -> 5 Jun (nothing of it bills).
    """
    return max(effective, association_start)
