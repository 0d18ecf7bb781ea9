"""Proration: credits and charges for the unused part of a billing period.

Coefficient (second based): ``remaining_seconds / period_seconds``, where ``remaining_seconds``
runs from the change instant to the period end and both are whole seconds (instants truncated to
the second). Example: a change 10 days into a 30-day period leaves 20 days: coefficient
1728000 / 2592000 = 2/3. The coefficient is kept as two integers, so it is exact; money is rounded
once per line.

Amounts: the full-period amount of an item is its price applied to its quantity (any billing
model, tiers and packages included, see :mod:`billingkit.domain.pricing`); the prorated amount is
that times the coefficient, rounded half away from zero at the currency precision. Example: 30.00
per month, 2 seats, 2/3 of the month left → 60.00 * 2/3 = 40.00.

- a **credit** returns the unused part of an item that was billed in ADVANCE; items billed in ARREAR
  get no credit (they have not been billed yet), and a credit never exceeds what is left of the
  amount billed for the period (``amount_billed - already_credited``);
- a **charge** bills the rest of the period for a new ADVANCE item; a new ARREAR item gets no charge
  now (the period-end invoice bills the part of the period it covered).

Actions: ``quantity_change``, ``upgrade`` and ``downgrade`` credit the old item and charge the new
one; ``add_item`` only charges; ``remove_item`` and ``cancellation`` (immediate) only credit.

First stubs (``proration_behavior: create_prorations`` on regular invoices): a first period that
does not start on a billing boundary (a calendar cycle's first stub, an anniversary start before a
later ``billing_anchor``) is measured against the full billing period that ends where it ends
(:func:`stub_reference_period`); a FIXED line charged for ``[start, end)`` of it pays
``(end - start) / reference`` in seconds (:func:`stub_coefficient`). Example: monthly calendar
cycle, start 15 March 00:00 UTC: stub ``[15 Mar, 1 Apr)``, reference ``[1 Mar, 1 Apr)``, 31.00 x
17/31 = 17.00.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Context, Decimal, DivisionByZero, InvalidOperation, Overflow
from enum import StrEnum
from typing import Any

from billingkit.domain.money import ZERO, parse_decimal, round_money
from billingkit.domain.periods import BillingSchedule, InvoiceCadence, Period, ensure_utc, epoch_seconds
from billingkit.domain.pricing import PriceSpec, price_quantity
from billingkit.domain.validation import parse_enum
from billingkit.errors import ValidationError

__all__ = [
    "InvoiceCadence",
    "ProratedItem",
    "ProrationAction",
    "ProrationCoefficient",
    "ProrationKind",
    "ProrationLine",
    "ProrationResult",
    "prorate_change",
    "prorate_charge",
    "prorate_credit",
    "proration_coefficient",
    "stub_coefficient",
    "stub_reference_period",
]

_CTX = Context(prec=80, rounding=ROUND_HALF_EVEN, traps=[InvalidOperation, DivisionByZero, Overflow])
_DISPLAY = Context(prec=28, rounding=ROUND_HALF_EVEN)


class ProrationAction(StrEnum):
    """What changed mid-period."""

    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    QUANTITY_CHANGE = "quantity_change"
    CANCELLATION = "cancellation"
    ADD_ITEM = "add_item"
    REMOVE_ITEM = "remove_item"


class ProrationKind(StrEnum):
    """A proration line either credits the customer or charges them."""

    CREDIT = "credit"
    CHARGE = "charge"


@dataclass(frozen=True, slots=True)
class ProrationCoefficient:
    """``remaining_seconds / period_seconds``, exact, in [0, 1]."""

    remaining_seconds: int
    period_seconds: int

    @property
    def value(self) -> Decimal:
        """The coefficient as a Decimal to 28 significant digits (for display; money uses the
        exact fraction)."""
        return _DISPLAY.divide(Decimal(self.remaining_seconds), Decimal(self.period_seconds))

    def apply(self, amount: Decimal) -> Decimal:
        """``amount * remaining / period``, unrounded (80 significant digits)."""
        return _CTX.divide(
            _CTX.multiply(amount, Decimal(self.remaining_seconds)), Decimal(self.period_seconds)
        )


def proration_coefficient(period: Period, at: datetime) -> ProrationCoefficient:
    """The share of ``period`` left at instant ``at``: ``(end - at) / (end - start)`` in seconds.

    ``at`` at or after the period end gives 0; ``at`` at the period start gives 1.
    Example: 30-day period, ``at`` 10 days in → 1728000 / 2592000.
    Raises ``ValidationError``: field ``effective_date`` (naive, or before the period start),
    ``period`` (not a :class:`Period`, or shorter than one second).
    """
    if not isinstance(period, Period):
        raise ValidationError("period must be a Period", field="period")
    at = ensure_utc(at, "effective_date")
    if at < period.start:
        raise ValidationError("effective_date is before the period start", field="effective_date")
    total = period.seconds
    if total <= 0:
        raise ValidationError("period must be at least one second long", field="period")
    remaining = max(0, epoch_seconds(period.end) - epoch_seconds(at))
    return ProrationCoefficient(min(remaining, total), total)


def stub_reference_period(schedule: BillingSchedule, period: Period) -> Period | None:
    """The full billing period a first stub ``period`` is prorated against, or None if it is no stub.

    A stub starts between two boundaries of ``schedule`` and ends on the next one (a period cut
    short by the subscription's ``end_date`` ends off the schedule and is no stub here). The
    reference is ``[previous boundary, period end)``. Examples: calendar monthly, ``[15 Mar,
    1 Apr)`` -> ``[1 Mar, 1 Apr)`` (31 days); anniversary monthly anchored on 25 Jan, ``[10 Jan,
    25 Jan)`` -> ``[25 Dec, 25 Jan)`` (31 days). Raises ``ValidationError`` for naive datetimes.
    """
    if not isinstance(period, Period):
        raise ValidationError("period must be a Period", field="period")
    start_reference = schedule.period_containing(period.start)
    if start_reference.start == period.start or start_reference.end != period.end:
        return None
    return start_reference


def stub_coefficient(window: Period, reference: Period) -> Decimal:
    """``window`` seconds over ``reference`` seconds (whole seconds), capped at 1.

    Example: 17 days of a 31-day month -> 17/31. Raises ``ValidationError`` (field ``period``)
    when the reference is shorter than one second.
    """
    total = epoch_seconds(reference.end) - epoch_seconds(reference.start)
    if total <= 0:
        raise ValidationError("period must be at least one second long", field="period")
    covered = max(0, min(total, epoch_seconds(window.end) - epoch_seconds(window.start)))
    return _DISPLAY.divide(Decimal(covered), Decimal(total))


@dataclass(frozen=True, slots=True)
class ProratedItem:
    """An item of a subscription as proration sees it: a price, a quantity and its cadence.

    ``quantity`` is a non-negative Decimal (ints and decimal strings accepted). Raises
    ``ValidationError`` on fields ``price``, ``quantity``, ``invoice_cadence``.
    """

    price: PriceSpec
    quantity: Decimal
    invoice_cadence: InvoiceCadence = InvoiceCadence.ADVANCE

    def __post_init__(self) -> None:
        if not isinstance(self.price, PriceSpec):
            raise ValidationError("price must be a PriceSpec", field="price")
        object.__setattr__(
            self, "quantity", parse_decimal(self.quantity, field="quantity", allow_negative=False)
        )
        try:
            cadence = InvoiceCadence(self.invoice_cadence)
        except (ValueError, TypeError):
            raise ValidationError(
                "invoice_cadence must be ADVANCE or ARREAR", field="invoice_cadence"
            ) from None
        object.__setattr__(self, "invoice_cadence", cadence)


@dataclass(frozen=True, slots=True)
class ProrationLine:
    """One proration line. ``amount`` is positive for both kinds; :attr:`signed_amount` is negative
    for credits.

    ``full_amount`` is the unrounded full-period amount of the item, ``unrounded_amount`` = full *
    coefficient, ``amount`` the rounded (and for credits possibly capped) result in ``currency``.
    """

    kind: ProrationKind
    currency: str
    quantity: Decimal
    full_amount: Decimal
    coefficient: ProrationCoefficient
    unrounded_amount: Decimal
    amount: Decimal
    cap: Decimal | None = None
    capped: bool = False

    @property
    def signed_amount(self) -> Decimal:
        """``-amount`` for a credit, ``amount`` for a charge."""
        return -self.amount if self.kind is ProrationKind.CREDIT else self.amount

    def trace(self) -> dict[str, Any]:
        """How the line was computed (decimals as strings)."""
        data: dict[str, Any] = {
            "kind": self.kind.value,
            "currency": self.currency,
            "quantity": str(self.quantity),
            "full_amount": str(self.full_amount),
            "remaining_seconds": self.coefficient.remaining_seconds,
            "period_seconds": self.coefficient.period_seconds,
            "coefficient": str(self.coefficient.value),
            "unrounded_amount": str(self.unrounded_amount),
            "amount": str(self.amount),
        }
        if self.cap is not None:
            data["cap"] = str(self.cap)
            data["capped"] = self.capped
        return data


@dataclass(frozen=True, slots=True)
class ProrationResult:
    """The lines of one change: ``net = charge - credit`` (rounded parts; may be negative)."""

    action: ProrationAction
    credit: ProrationLine | None
    charge: ProrationLine | None
    net: Decimal

    def trace(self) -> dict[str, Any]:
        """How the change was computed (decimals as strings)."""
        return {
            "action": self.action.value,
            "credit": None if self.credit is None else self.credit.trace(),
            "charge": None if self.charge is None else self.charge.trace(),
            "net": str(self.net),
        }


def _check_item(item: Any, field: str) -> ProratedItem:
    if not isinstance(item, ProratedItem):
        raise ValidationError(f"{field} must be a ProratedItem", field=field)
    return item


def prorate_charge(item: ProratedItem, period: Period, at: datetime) -> ProrationLine | None:
    """Charge for the rest of ``period`` from ``at`` for a new ADVANCE item; ``None`` for ARREAR.

    Example: 30.00/month, 1 seat, added 10 days into a 30-day month → 30.00 * 20/30 = 20.00.
    Raises ``ValidationError`` (see :func:`proration_coefficient`).
    """
    item = _check_item(item, "new")
    coefficient = proration_coefficient(period, at)
    if item.invoice_cadence is InvoiceCadence.ARREAR:
        return None
    full = price_quantity(item.price, item.quantity).unrounded_amount
    unrounded = coefficient.apply(full)
    currency = item.price.currency
    return ProrationLine(
        ProrationKind.CHARGE,
        currency,
        item.quantity,
        full,
        coefficient,
        unrounded,
        round_money(unrounded, currency),
    )


def prorate_credit(
    item: ProratedItem,
    period: Period,
    at: datetime,
    *,
    amount_billed: Decimal | None = None,
    already_credited: Decimal = ZERO,
) -> ProrationLine | None:
    """Credit for the unused rest of ``period`` of an item billed in ADVANCE; ``None`` for ARREAR.

    The credit is capped at ``amount_billed - already_credited`` (never below zero);
    ``amount_billed`` defaults to the item's full-period amount, rounded. Example: 60.00 billed,
    cancelled with 2/3 of the month left → credit 40.00; with 30.00 already credited → 30.00.
    Raises ``ValidationError`` (fields ``amount_billed``, ``already_credited``, and see
    :func:`proration_coefficient`).
    """
    item = _check_item(item, "old")
    coefficient = proration_coefficient(period, at)
    if item.invoice_cadence is InvoiceCadence.ARREAR:
        return None
    currency = item.price.currency
    full = price_quantity(item.price, item.quantity).unrounded_amount
    billed = (
        round_money(full, currency)
        if amount_billed is None
        else parse_decimal(amount_billed, field="amount_billed", allow_negative=False)
    )
    credited = parse_decimal(already_credited, field="already_credited", allow_negative=False)
    cap = max(ZERO, _CTX.subtract(billed, credited))
    unrounded = coefficient.apply(full)
    amount = round_money(unrounded, currency)
    capped = amount > cap
    if capped:
        amount = round_money(cap, currency)
    return ProrationLine(
        ProrationKind.CREDIT,
        currency,
        item.quantity,
        full,
        coefficient,
        unrounded,
        amount,
        cap,
        capped,
    )


_NEEDS_OLD = {
    ProrationAction.UPGRADE,
    ProrationAction.DOWNGRADE,
    ProrationAction.QUANTITY_CHANGE,
    ProrationAction.REMOVE_ITEM,
    ProrationAction.CANCELLATION,
}
_NEEDS_NEW = {
    ProrationAction.UPGRADE,
    ProrationAction.DOWNGRADE,
    ProrationAction.QUANTITY_CHANGE,
    ProrationAction.ADD_ITEM,
}


def prorate_change(
    action: ProrationAction,
    period: Period,
    at: datetime,
    *,
    old: ProratedItem | None = None,
    new: ProratedItem | None = None,
    amount_billed: Decimal | None = None,
    already_credited: Decimal = ZERO,
) -> ProrationResult:
    """Credit and charge lines for one mid-period change at ``at``.

    ``old`` is required for upgrade, downgrade, quantity_change, remove_item and cancellation;
    ``new`` for upgrade, downgrade, quantity_change and add_item; giving one the action does not use
    is an error. Both items of a change must share a currency. Example: quantity 2 → 5 at 10.00,
    half the period left → credit 10.00, charge 25.00, net 15.00.
    Raises ``ValidationError`` (fields ``action``, ``old``, ``new``, ``currency`` and those of
    :func:`prorate_credit` / :func:`prorate_charge`).
    """
    action = parse_enum(ProrationAction, action, field="action")
    for name, item, needed in (("old", old, _NEEDS_OLD), ("new", new, _NEEDS_NEW)):
        if action in needed and item is None:
            raise ValidationError(f"{action.value} needs the {name} item", field=name)
        if action not in needed and item is not None:
            raise ValidationError(f"{action.value} takes no {name} item", field=name)
    if old is not None and new is not None:
        _check_item(old, "old")
        _check_item(new, "new")
        if old.price.currency != new.price.currency:
            raise ValidationError("old and new prices must share a currency", field="currency")
    credit = (
        None
        if old is None
        else prorate_credit(old, period, at, amount_billed=amount_billed, already_credited=already_credited)
    )
    charge = None if new is None else prorate_charge(new, period, at)
    net = (ZERO if charge is None else charge.amount) - (ZERO if credit is None else credit.amount)
    return ProrationResult(action, credit, charge, net)
