"""Invariants of the billing core: input checks shared by the calculators and the invoice checks.

Input checks turn loose values into exact ones or raise ``ValidationError`` naming the JSON field
(``require_decimal("1.5", field="overage_factor") == Decimal("1.5")``). Invoice checks refuse a
second charge of one line item for one period (``InvalidOperation``) and prove that the totals of a
draft add up: ``subtotal = Σ line amounts`` and ``total = max(0, subtotal - discount + tax - credits)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from operator import add, gt
from typing import Any

from billingkit.domain.money import ZERO, parse_decimal
from billingkit.domain.validation import ensure_utc
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "ChargeKey",
    "check_no_duplicate_charges",
    "check_totals",
    "require_bool",
    "require_choice",
    "require_decimal",
    "require_int",
    "require_optional_utc",
    "require_str",
    "require_utc",
]

#: Identity of one charge: (subscription line item id, kind, period start, period end).
ChargeKey = tuple[str, str, datetime, datetime]

_ZERO_OFFSET = timedelta(0)


def require_decimal(
    value: Any,
    *,
    field: str,
    minimum: Decimal | None = None,
    strictly_above: Decimal | None = None,
    maximum: Decimal | None = None,
) -> Decimal:
    """Parse ``value`` as an exact finite ``Decimal`` within bounds.

    Accepts ``Decimal``, ``int`` and decimal strings; floats, booleans, NaN and out-of-bound values
    raise ``ValidationError(field=field)``. Example: ``require_decimal("2", field="x", minimum=1)``
    returns ``Decimal("2")``.
    """
    result = parse_decimal(value, field=field)
    if minimum is not None and result < minimum:
        raise ValidationError(f"{field} must be at least {minimum}", field=field)
    if strictly_above is not None and result <= strictly_above:
        raise ValidationError(f"{field} must be greater than {strictly_above}", field=field)
    if maximum is not None and result > maximum:
        raise ValidationError(f"{field} must be at most {maximum}", field=field)
    return result


def require_int(value: Any, *, field: str, minimum: int | None = None) -> int:
    """Return ``value`` if it is an ``int`` (not a bool) >= ``minimum``; else ``ValidationError``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{field} must be an integer", field=field)
    if minimum is not None and value < minimum:
        raise ValidationError(f"{field} must be at least {minimum}", field=field)
    return value


def require_bool(value: Any, *, field: str) -> bool:
    """Return ``value`` if it is a ``bool``; else ``ValidationError``."""
    if not isinstance(value, bool):
        raise ValidationError(f"{field} must be a boolean", field=field)
    return value


def require_str(value: Any, *, field: str, allow_empty: bool = False) -> str:
    """Return ``value`` if it is a ``str`` (non-empty unless allowed); else ``ValidationError``."""
    if not isinstance(value, str) or (not allow_empty and not value):
        raise ValidationError(f"{field} must be a non-empty string", field=field)
    return value


def require_choice(value: Any, choices: Iterable[str], *, field: str) -> str:
    """Return ``value`` if it is one of ``choices`` (exact spelling); else ``ValidationError``."""
    allowed = tuple(choices)
    if not isinstance(value, str) or value not in allowed:
        raise ValidationError(
            f"{field} must be one of {', '.join(allowed)}",
            field=field,
            details={"allowed_values": list(allowed), "provided_value": repr(value)},
        )
    return value


def require_utc(value: Any, *, field: str) -> datetime:
    """Return ``value`` as a UTC ``datetime``; naive datetimes and non-datetimes raise.

    An aware datetime in another zone is converted to UTC (the same instant).
    """
    return ensure_utc(value, field)


def require_optional_utc(value: Any, *, field: str) -> datetime | None:
    """Like :func:`require_utc` but ``None`` passes through."""
    return None if value is None else require_utc(value, field=field)


def check_no_duplicate_charges(
    keys: Iterable[ChargeKey], previously_billed: Iterable[ChargeKey] = ()
) -> None:
    """Refuse a second charge of one line item for the same (or an overlapping) period.

    Two keys clash when line item id and kind are equal and their half-open periods overlap.
    Raises ``InvalidOperation`` naming the line item. Example: a FIXED line billed for
    ``[Jan 1, Feb 1)`` cannot be billed again for ``[Jan 15, Feb 15)``.
    """
    seen: dict[tuple[str, str], list[tuple[datetime, datetime]]] = {}
    for line_id, kind, start, end in previously_billed:
        seen.setdefault((line_id, kind), []).append((start, end))
    fresh: set[ChargeKey] = set()
    for key in keys:
        line_id, kind, start, end = key
        if key in fresh:
            raise InvalidOperation(
                f"line item {line_id} is charged twice for the same period",
                details={"subscription_line_item_id": line_id, "kind": kind},
            )
        fresh.add(key)
        for other_start, other_end in seen.get((line_id, kind), ()):
            # Half-open overlap; a zero-length period overlaps an equal zero-length one.
            if (start < other_end and other_start < end) or (start, end) == (
                other_start,
                other_end,
            ):
                raise InvalidOperation(
                    f"line item {line_id} was already charged for an overlapping period",
                    details={"subscription_line_item_id": line_id, "kind": kind},
                )


def check_totals(
    *,
    line_amounts: Sequence[Decimal],
    line_discounts: Sequence[Decimal],
    line_credits: Sequence[Decimal],
    subtotal: Decimal,
    total_discount: Decimal,
    total_tax: Decimal,
    tax_amounts: Sequence[Decimal],
    total_prepaid_credits_applied: Decimal,
    total: Decimal,
    amount_due: Decimal,
) -> None:
    """Verify that an invoice's figures add up; raise ``InvalidOperation`` when they do not.

    Checks: subtotal = Σ line amounts; total_discount = Σ line discounts; total_tax = Σ tax lines;
    credits = Σ line credits; no line discounted or credited below zero; total = max(0, subtotal -
    discount + tax - credits); amount_due = total. Example: 100 - 10 + 9 - 5 = 94.
    """
    if sum(line_amounts, ZERO) != subtotal:
        raise InvalidOperation("invoice subtotal is not the sum of its lines")
    if sum(line_discounts, ZERO) != total_discount:
        raise InvalidOperation("invoice total_discount is not the sum of its line discounts")
    if sum(tax_amounts, ZERO) != total_tax:
        raise InvalidOperation("invoice total_tax is not the sum of its tax lines")
    if sum(line_credits, ZERO) != total_prepaid_credits_applied:
        raise InvalidOperation("invoice credits are not the sum of the credits on its lines")
    count = len(line_amounts)
    if len(line_discounts) != count or len(line_credits) != count:
        raise ValueError("line_amounts, line_discounts and line_credits differ in length")
    # Per line: amount >= 0, discount >= 0, credit >= 0 and discount + credit <= amount (C loops).
    if count and (
        min(line_amounts) < ZERO
        or min(line_discounts) < ZERO
        or min(line_credits) < ZERO
        or any(map(gt, map(add, line_discounts, line_credits), line_amounts))
    ):
        raise InvalidOperation("an invoice line is discounted or credited below zero")
    expected = subtotal - total_discount + total_tax - total_prepaid_credits_applied
    if expected < ZERO:
        expected = ZERO
    if total != expected or total < ZERO:
        raise InvalidOperation("invoice total does not equal subtotal - discount + tax - credits")
    if amount_due != total:
        raise InvalidOperation("invoice amount_due differs from its total")
