"""Event properties as usage reads them: as text (filters, ``COUNT_UNIQUE``, ``group_by``) and as
exact numbers (the value aggregations), plus the rules for property names.

The SQL stores reproduce these rules per dialect (``storage/sql/json_props.py``), so the two
functions here are the reference they are tested against.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from billingkit.errors import ValidationError

__all__ = ["NUMERIC_STRING_PATTERN", "check_property_key", "check_text", "property_number", "property_text"]

NUMERIC_STRING_PATTERN = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,4})?$"
"""Which property strings count as numbers (POSIX/Python syntax), shared with the SQL stores."""
_NUMERIC_STRING = re.compile(NUMERIC_STRING_PATTERN)
_INF = float("inf")


def check_text(value: Any, field: str) -> str:
    """``value`` when it is a non-empty string; a ``ValidationError`` on ``field`` otherwise."""
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{field} must be a non-empty string", field=field)
    return value


def check_property_key(value: Any, field: str) -> str:
    """``value`` when it can name a property (see the comment); a ``ValidationError`` otherwise."""
    # A property name: any text but double quotes and control characters, so that every store
    # can address it (SQLite JSON paths quote names in double quotes).
    check_text(value, field)
    if '"' in value or any(ord(ch) < 32 for ch in value):
        raise ValidationError(f"{field} must not contain double quotes or control characters", field=field)
    return value  # type: ignore[no-any-return]


def _plain(number: Decimal) -> str:
    if number == 0:
        number = number.copy_abs()  # databases have no negative zero
    return format(number, "f")


def property_text(value: Any) -> str | None:
    """A property value as text for filters, COUNT_UNIQUE and group_by; ``None`` when it has none.

    Strings as they are; booleans ``true``/``false``; numbers in plain decimal notation of the value
    as sent (``2`` → ``2``, ``2.50`` → ``2.50``, ``2.0`` → ``2.0``, ``1e+16`` →
    ``10000000000000000``, negative zero → ``0``); JSON null, objects, lists and non-finite
    numbers have no text (they match no filter and group as ``None``).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (_INF, -_INF):
            return None
        return _plain(Decimal(repr(value)))
    if isinstance(value, Decimal):
        return _plain(value) if value.is_finite() else None
    return None


def property_number(value: Any) -> Decimal | None:
    """A property value as an exact Decimal, or ``None`` when it is not numeric.

    ints and finite Decimals as they are; finite floats via their shortest repr (``0.1`` → 0.1);
    strings that are plain decimal literals (``"2.50"``, ``"-1e3"``, ASCII digits, no spaces,
    exponent of at most 4 digits) parsed exactly; booleans and everything else → ``None``.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, str):
        return Decimal(value) if _NUMERIC_STRING.fullmatch(value) else None
    if isinstance(value, float):
        if value != value or value in (_INF, -_INF):
            return None
        return Decimal(repr(value))
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    return None
