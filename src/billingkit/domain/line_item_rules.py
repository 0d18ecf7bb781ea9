"""Rules of a subscription's line items once they are not just copies of the plan: where an extra
line may sit, when a one-time line is charged, which end-date edits are allowed (spec rule 7),
and when a change ends a line and starts its replacement.

Pure: everything here reads only the subscription and its line items.

* **Period.** A line bills with its subscription's period (same ``billing_period`` and
  ``billing_period_count``) or once (``ONETIME``, FIXED prices only). Example: a MONTHLY
  subscription takes a MONTHLY or a ONETIME line, not a QUARTERLY one.
* **Window.** A line lives in ``[start_date, end_date)`` inside the subscription's window; once
  the subscription has started billing, a new line cannot start before the current period (the
  invoices of closed periods are issued). Example: current period [1 May, 1 Jun): a line from
  20 Apr is refused, one from 10 May is accepted.
* **One-time lines** are charged once, in full, at their *charge date*: their ``start_date``, or
  the end of the subscription's trial when that is later (nothing is invoiced during a trial).
  Their ``end_date`` only says whether the charge still happens: an end at or before the charge
  date cancels it.
* **What is invoiced.** ADVANCE charges of the current period are on an issued invoice once the
  subscription has started billing (active, incomplete, paused, cancelled), so they are invoiced
  until the current period's end; ARREAR charges until its start. Drafts and trialing
  subscriptions have nothing invoiced.
* **End-date edits (rule 7).** A recurring line's end date may move earlier or later within the
  subscription window (after the line's start, not after the subscription's ``end_date``) and a
  terminated line keeps its termination (it cannot be cleared). A one-time line's end date may
  change freely until its charge is invoiced; afterwards an edit that would change whether the
  charge happens is refused: backdating (an end at or before the charge date would disown a charge
  already invoiced) or forward-dating (an end after it would reinstate a cancelled charge whose
  invoice went out without it). Example: a one-time setup fee dated 10 May, on the invoice of the
  current period [1 May, 1 Jun): ``end_date`` 10 May is refused; 31 May is accepted (the charge
  stays).
* **Effective instants.** Updates and deletions take effect at an instant inside the subscription
  window and, once billing started, not before the current period (closed periods are invoiced).
"""

from __future__ import annotations

from datetime import datetime

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import BillingPeriod, InvoiceCadence
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionStatus
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "BILLED_STATUSES",
    "check_changeable",
    "check_effective",
    "check_end_date_edit",
    "check_line_period",
    "check_line_window",
    "deletion_end",
    "invoiced_until",
    "is_one_time",
    "is_recurring_advance_fee",
    "one_time_charge_date",
    "one_time_charged",
    "one_time_invoiced",
    "started_by",
]

#: Statuses whose current period's ADVANCE charges are on an issued invoice.
BILLED_STATUSES = frozenset(
    {
        SubscriptionStatus.ACTIVE,
        SubscriptionStatus.INCOMPLETE,
        SubscriptionStatus.PAUSED,
        SubscriptionStatus.CANCELLED,
    }
)


def is_one_time(line: SubscriptionLineItem) -> bool:
    """Whether ``line`` is charged once (its price's billing period is ``ONETIME``)."""
    return line.billing_period is BillingPeriod.ONETIME


def is_recurring_advance_fee(line: SubscriptionLineItem) -> bool:
    """A recurring FIXED line billed in ADVANCE: the only kind proration charges or credits."""
    return (
        line.price_type is PriceType.FIXED
        and line.invoice_cadence is InvoiceCadence.ADVANCE
        and not is_one_time(line)
    )


def one_time_charge_date(line: SubscriptionLineItem, sub: Subscription) -> datetime:
    """When one-time ``line`` is charged: its start date, or the trial end when that is later
    (nothing is invoiced during a trial). Example: start 3 May, trial until 15 May -> 15 May."""
    date = line.start_date or sub.start_date
    if sub.trial_end is not None and date < sub.trial_end:
        return sub.trial_end
    return date


def invoiced_until(sub: Subscription, cadence: InvoiceCadence) -> datetime | None:
    """The instant before which ``sub``'s charges of ``cadence`` are on issued invoices (None:
    nothing is invoiced yet). ADVANCE: the current period's end once billing started; ARREAR: its
    start. Example: active, current period [1 May, 1 Jun) -> ADVANCE 1 Jun, ARREAR 1 May."""
    if sub.subscription_status not in BILLED_STATUSES:
        return None
    if cadence is InvoiceCadence.ADVANCE:
        return sub.current_period_end
    return sub.current_period_start


def one_time_invoiced(line: SubscriptionLineItem, sub: Subscription) -> bool:
    """Whether the window one-time ``line``'s charge date falls in is invoiced already."""
    until = invoiced_until(sub, line.invoice_cadence)
    return until is not None and one_time_charge_date(line, sub) < until


def one_time_charged(line: SubscriptionLineItem, sub: Subscription, end: datetime | None) -> bool:
    """Whether one-time ``line`` ending at ``end`` is still charged: ``end`` (if any) lies after
    its charge date (:func:`one_time_charge_date`)."""
    return end is None or end > one_time_charge_date(line, sub)


def started_by(sub: Subscription) -> bool:
    """Whether ``sub`` has started billing (its current period's ADVANCE charges are invoiced)."""
    return sub.subscription_status in BILLED_STATUSES


def check_changeable(sub: Subscription) -> None:
    """Line items of a cancelled subscription are final: ``InvalidOperation``."""
    if sub.subscription_status is SubscriptionStatus.CANCELLED:
        raise InvalidOperation(f"subscription {sub.id} is cancelled: its line items cannot change")


def check_line_period(
    sub: Subscription,
    *,
    price_type: PriceType,
    currency: str,
    billing_period: BillingPeriod,
    billing_period_count: int,
    field: str,
) -> None:
    """A price a line of ``sub`` may bill: in the subscription's currency, and either with its
    period (``billing_period`` and ``billing_period_count``) or ONETIME (FIXED only). Raises
    ``ValidationError`` naming ``field``."""
    if currency.lower() != sub.currency.lower():
        raise ValidationError(
            f"the price is in {currency.lower()}; the subscription bills in {sub.currency}", field=field
        )
    if billing_period is BillingPeriod.ONETIME:
        if price_type is not PriceType.FIXED:
            raise ValidationError("only FIXED prices can be charged once (ONETIME)", field=field)
        return
    if (billing_period, billing_period_count) != (sub.billing_period, sub.billing_period_count):
        raise ValidationError(
            f"the price bills every {billing_period_count} x {billing_period.value}; a line item of "
            f"this subscription bills every {sub.billing_period_count} x {sub.billing_period.value} "
            "or once (ONETIME)",
            field=field,
        )


def check_line_window(sub: Subscription, start: datetime, end: datetime | None, *, prefix: str = "") -> None:
    """A new line ``[start, end)`` fits ``sub``: not before its start, nor before the current
    period once billing started, before its ``end_date``; ``end`` after ``start`` and not after
    the subscription's ``end_date``. Raises ``ValidationError`` on ``<prefix>start_date`` or
    ``<prefix>end_date``."""
    if start < sub.start_date:
        raise ValidationError(
            f"start_date must not be before the subscription's start ({sub.start_date.isoformat()})",
            field=prefix + "start_date",
        )
    if started_by(sub) and start < sub.current_period_start:
        raise ValidationError(
            "start_date must not be before the current period "
            f"({sub.current_period_start.isoformat()}): earlier periods are invoiced",
            field=prefix + "start_date",
        )
    if sub.end_date is not None and start >= sub.end_date:
        raise ValidationError(
            f"start_date must be before the subscription's end ({sub.end_date.isoformat()})",
            field=prefix + "start_date",
        )
    if end is not None:
        if end <= start:
            raise ValidationError("end_date must be after start_date", field=prefix + "end_date")
        if sub.end_date is not None and end > sub.end_date:
            raise ValidationError(
                f"end_date must not be after the subscription's end ({sub.end_date.isoformat()})",
                field=prefix + "end_date",
            )


def check_effective(sub: Subscription, line: SubscriptionLineItem, at: datetime, *, field: str) -> None:
    """``at`` may end or change ``line``: inside the subscription window, not before the current
    period once billing started, and before the line's own end. Raises ``ValidationError`` on
    ``field`` or ``InvalidOperation`` for a line that has ended by ``at``."""
    if at < sub.start_date or (sub.end_date is not None and at > sub.end_date):
        raise ValidationError(f"{field} must lie within the subscription's window", field=field)
    if started_by(sub) and at < sub.current_period_start:
        raise ValidationError(
            f"{field} must not be before the current period ({sub.current_period_start.isoformat()}): "
            "earlier periods are invoiced",
            field=field,
        )
    if line.end_date is not None and line.end_date <= at:
        raise InvalidOperation(f"line item {line.id} ended at {line.end_date.isoformat()}")


def check_end_date_edit(sub: Subscription, line: SubscriptionLineItem, end: datetime | None) -> None:
    """Spec rule 7 (see the module doc): may ``line``'s end date become ``end``? Raises
    ``ValidationError`` on ``end_date`` naming why not."""
    start = line.start_date or sub.start_date
    if end is None:
        if line.end_date is not None:
            raise ValidationError(
                f"line item {line.id} is terminated and keeps its termination: give another end_date",
                field="end_date",
            )
        return
    if sub.end_date is not None and end > sub.end_date:
        raise ValidationError(
            f"end_date must not be after the subscription's end ({sub.end_date.isoformat()})",
            field="end_date",
        )
    if not is_one_time(line):
        if end <= start:
            raise ValidationError(
                f"end_date must be after the line item's start ({start.isoformat()})", field="end_date"
            )
        return
    if end < start:
        raise ValidationError(
            f"end_date must not be before the one-time line item's date ({start.isoformat()})",
            field="end_date",
        )
    if one_time_invoiced(line, sub):
        was = one_time_charged(line, sub, line.end_date)
        now = one_time_charged(line, sub, end)
        if was and not now:
            raise ValidationError(
                f"one-time line item {line.id} was invoiced for {start.isoformat()}: backdating its "
                "end to that date or earlier would disown the charge (issue a credit note instead)",
                field="end_date",
            )
        if now and not was:
            raise ValidationError(
                f"one-time line item {line.id} was cancelled before its invoice was issued: "
                "forward-dating its end would charge it with no invoice (add a new line item instead)",
                field="end_date",
            )


def deletion_end(sub: Subscription, line: SubscriptionLineItem, at: datetime) -> datetime:
    """The end date deleting ``line`` at ``at`` gives it: ``at``, or the line's start when it has
    not started by then (it is never billed). Raises as :func:`check_effective`, and for a
    one-time line as :func:`check_end_date_edit` (an invoiced charge cannot be disowned)."""
    check_effective(sub, line, at, field="effective_from")
    start = line.start_date or sub.start_date
    end = max(at, start)
    if is_one_time(line):
        check_end_date_edit(sub, line, end)
    return end
