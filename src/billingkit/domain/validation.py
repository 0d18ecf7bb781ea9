"""Input validation shared by every layer: pydantic models in, billingkit errors out.

Input models are pydantic; a failure becomes one :class:`billingkit.errors.ValidationError` naming the
first offending field in JSON terms (``address.city``, ``items[3].event_name``), so callers of the
library and of the HTTP adapter see the same error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pydantic
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from billingkit.domain.money import normalize_currency, parse_decimal
from billingkit.errors import ValidationError

__all__ = [
    "INT32_MAX",
    "CurrencyCode",
    "DecimalText",
    "Email",
    "InputModel",
    "Int32",
    "JsonMetadata",
    "Metadata",
    "NonEmptyStr",
    "TimeZoneName",
    "UtcDatetime",
    "ensure_utc",
    "field_path",
    "parse_enum",
    "parse_input",
]

M = TypeVar("M", bound=BaseModel)


class InputModel(BaseModel):
    """Base of request models: unknown fields are ignored (clients send extras), values stripped."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, frozen=True)


def field_path(loc: Sequence[int | str]) -> str:
    """Render a pydantic location as a JSON path: ``("items", 3, "name")`` -> ``items[3].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def from_pydantic(exc: pydantic.ValidationError, *, prefix: Sequence[int | str] = ()) -> ValidationError:
    """Turn a pydantic error into our error, naming the first failing field."""
    first = exc.errors(include_url=False)[0]
    # Drop pydantic's internal union/validator tags ("function-after[...]") from the location.
    loc = [p for p in first["loc"] if not (isinstance(p, str) and "[" in p)]
    path = field_path([*prefix, *loc])
    message = str(first["msg"])
    if message.startswith("Value error, "):
        message = message.removeprefix("Value error, ")
    if first["type"] == "missing":
        message = "field required"
    text = f"{path}: {message}" if path else message
    details: dict[str, Any] = {
        "errors": [
            {"field": field_path([*prefix, *e["loc"]]), "message": e["msg"]}
            for e in exc.errors(include_url=False)[:20]
        ]
    }
    return ValidationError(text, field=path or None, details=details)


def parse_input(model: type[M], data: Mapping[str, Any], *, prefix: Sequence[int | str] = ()) -> M:
    """Validate ``data`` into ``model`` or raise :class:`~billingkit.errors.ValidationError`."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise from_pydantic(exc, prefix=prefix) from None


E = TypeVar("E", bound=Enum)


def parse_enum(enum_type: type[E], value: Any, *, field: str) -> E:
    """``value`` as a member of ``enum_type``; else a ``ValidationError`` naming ``field`` and
    listing the allowed values (``details.allowed_values``)."""
    try:
        return enum_type(value)
    except (ValueError, TypeError):
        allowed = [str(member.value) for member in enum_type]
        raise ValidationError(
            f"{field} must be one of {', '.join(allowed)}, got {value!r}",
            field=field,
            details={"allowed_values": allowed, "provided_value": repr(value)},
        ) from None


def ensure_utc(value: Any, field: str = "timestamp") -> datetime:
    """Return ``value`` as a UTC ``datetime`` (the same instant).

    Raises ``ValidationError`` naming ``field`` when ``value`` is not a ``datetime``, is naive (no time
    zone), or cannot be expressed in UTC. Example: ``2024-01-31T12:00:00+01:00`` → ``11:00 UTC``.
    """
    if not isinstance(value, datetime):
        raise ValidationError(f"{field} must be a datetime", field=field)
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(f"{field} must be timezone-aware (UTC)", field=field)
    if value.tzinfo is UTC:
        return value
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValidationError(f"{field} is outside the supported range", field=field) from None


def _utc(value: datetime) -> datetime:
    if value.tzinfo is UTC:  # the usual case, checked first: models are rebuilt from rows often
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("datetime must be timezone-aware (naive datetimes are ambiguous)")
    return value.astimezone(UTC)


_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _email(value: str) -> str:
    if not _EMAIL_RE.match(value) or len(value) > 254:
        raise ValueError("not a valid email address")
    return value


def _timezone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown IANA time zone {value!r}") from None
    return value


def _metadata(value: dict[str, str]) -> dict[str, str]:
    if len(value) > 50:
        raise ValueError("at most 50 metadata keys")
    for key, item in value.items():
        if len(key) > 40 or len(item) > 500:
            raise ValueError("metadata keys are at most 40 and values at most 500 characters")
    return value


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
Email = Annotated[str, AfterValidator(_email)]
TimeZoneName = Annotated[str, AfterValidator(_timezone)]
Metadata = Annotated[dict[str, str], AfterValidator(_metadata)]


def _json_metadata(value: dict[str, pydantic.JsonValue]) -> dict[str, pydantic.JsonValue]:
    if len(value) > 50:
        raise ValueError("at most 50 metadata keys")
    for key, item in value.items():
        text = item if isinstance(item, str) else json.dumps(item, allow_nan=False)
        if len(key) > 40 or len(text) > 500:
            raise ValueError("metadata keys are at most 40 and values at most 500 characters (as JSON)")
    return value


#: Metadata whose values may be any JSON (the reference's add-on metadata); same limits as ``Metadata``.
JsonMetadata = Annotated[dict[str, pydantic.JsonValue], AfterValidator(_json_metadata)]


def _exact_decimal(value: Any) -> Any:
    try:
        return parse_decimal(value, field="value")
    except ValidationError as exc:
        # pydantic reports ValueErrors against the field being validated, so the field name is added there.
        raise ValueError(exc.message.removeprefix("value ")) from None


def _currency(value: Any) -> str:
    try:
        return normalize_currency(value)
    except ValidationError as exc:
        raise ValueError(exc.message.removeprefix("currency ")) from None


#: An exact decimal from a string or int (floats, NaN and infinities are refused), e.g. ``"12.50"``.
DecimalText = Annotated[Decimal, BeforeValidator(_exact_decimal)]
#: A 3-letter ISO currency code, stored lowercase (``"USD"`` -> ``"usd"``).
CurrencyCode = Annotated[str, BeforeValidator(_currency)]

#: The largest integer a stored integer column holds on every store (PostgreSQL ``integer``).
INT32_MAX = 2**31 - 1
#: An integer that fits a stored integer column; larger values are a 400, not a database error.
Int32 = Annotated[int, Field(ge=-INT32_MAX, le=INT32_MAX)]
