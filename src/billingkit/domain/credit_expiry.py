"""Credit expiry: which of a wallet's lots the worker expires now, which wait, and when the wallet
is due again (reference notes §6.2, §13).

A lot (a completed credit row with credits left) whose ``expiry_date`` is at or before ``now`` is
expired by a ``CREDIT_EXPIRED`` debit of all its credits left, unless its expiry is **postponed**:

1. while the customer has a subscription whose billing is pending (an active standalone or parent
   subscription whose current period ended at or before ``now`` and is not billed yet): that
   period's invoice may still be paid by these credits, which were live through the period;
2. while an unpaid invoice of the customer covers the lot's creation time (the invoice's period
   contains ``created_at``): the credits may have been granted against that invoice, which can
   still be paid, voided or credited.

A postponed lot is looked at again :data:`EXPIRY_RETRY` later (the reference's expiry job runs every
15 minutes). The wallet's next due time is the earliest of that retry and the expiry of the lots
still to expire; ``None`` when no lot with credits left expires.

Example: now = 1 Mar 00:00, lots A (10 credits, expired 28 Feb), B (5 credits, expires 1 Apr).
No billing pending and no unpaid invoice -> expire A, due again 1 Apr. With March's billing
pending -> expire nothing, due again 1 Mar 00:15.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from billingkit.domain.wallets import Lot

__all__ = ["EXPIRY_RETRY", "ExpiryPlan", "covers", "plan_expiry"]

#: How long a postponed expiry waits before the worker looks at it again.
EXPIRY_RETRY = timedelta(minutes=15)


@dataclass(frozen=True, slots=True)
class ExpiryPlan:
    """What to do with one wallet's lots at ``now``: ``expire`` (debit all their credits left),
    ``held`` (expired but postponed) and the wallet's ``next_expiry_at``."""

    expire: tuple[Lot, ...]
    held: tuple[Lot, ...]
    next_expiry_at: datetime | None


def covers(period: tuple[datetime, datetime | None], instant: datetime) -> bool:
    """Whether ``[start, end)`` contains ``instant`` (an open end covers every later instant)."""
    start, end = period
    return start <= instant and (end is None or instant < end)


def plan_expiry(
    lots: Iterable[Lot],
    now: datetime,
    *,
    billing_pending: bool,
    unpaid_periods: Sequence[tuple[datetime, datetime | None]] = (),
    retry: timedelta = EXPIRY_RETRY,
) -> ExpiryPlan:
    """Split ``lots`` into those to expire at ``now`` and those whose expiry waits (see the
    module docstring for the two postponement rules), with the wallet's next due time.

    ``billing_pending``: the customer has a period ended and not yet billed. ``unpaid_periods``:
    the ``[period_start, period_end)`` of the customer's unpaid invoices. Lots without an expiry
    or with nothing left never expire.
    """
    expire: list[Lot] = []
    held: list[Lot] = []
    later: list[datetime] = []
    for lot in lots:
        expiry = lot.transaction.expiry_date
        if expiry is None or lot.credits_left <= 0:
            continue
        if expiry > now:
            later.append(expiry)
            continue
        created = lot.transaction.created_at
        if billing_pending or any(covers(period, created) for period in unpaid_periods):
            held.append(lot)
        else:
            expire.append(lot)
    if held:
        later.append(now + retry)
    return ExpiryPlan(tuple(expire), tuple(held), min(later) if later else None)
