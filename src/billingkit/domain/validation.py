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
from math import isfinite
from typing import Annotated, Any, ClassVar, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pydantic
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)
from pydantic_core import PydanticCustomError

from billingkit.domain.money import normalize_currency, parse_decimal
from billingkit.errors import ValidationError

__all__ = [
    "INT32_MAX",
    "MAX_FILTER_TEXT",
    "MAX_KEY",
    "MAX_NAME",
    "MAX_OFFSET",
    "MAX_TEXT",
    "NOT_SUPPORTED",
    "UNKNOWN_FIELD",
    "CurrencyCode",
    "DecimalText",
    "Description",
    "Email",
    "Identifier",
    "InputModel",
    "Int32",
    "JsonMetadata",
    "Key",
    "Metadata",
    "Name",
    "NonEmptyStr",
    "TimeZoneName",
    "UtcDatetime",
    "check_storable",
    "ensure_utc",
    "field_path",
    "parse_enum",
    "parse_input",
    "text_problem",
    "unknown_field_error",
    "unstorable_text",
]

M = TypeVar("M", bound=BaseModel)


#: The largest integer a stored integer column holds on every store (PostgreSQL ``integer``).
INT32_MAX = 2**31 - 1
#: The largest ``offset`` a list, search or event query accepts (every store's integers hold it).
MAX_OFFSET = INT32_MAX
#: Names (of plans, customers, meters...): at most this many characters.
MAX_NAME = 255
#: Lookup keys, codes, external ids and ids given in bodies: at most this many characters.
MAX_KEY = 255
#: Descriptions and any other free text without a narrower limit: at most this many characters.
MAX_TEXT = 4000
#: A string a search filter compares with (``eq``, ``contains``... and each ``in`` item).
MAX_FILTER_TEXT = 1000
_MAX_DEPTH = 32


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def unstorable_text(text: str) -> bool:
    """Whether no database can store or compare ``text`` (a NUL or a lone surrogate)."""
    return "\x00" in text or not (text.isascii() or _is_utf8(text))


def text_problem(text: str) -> str:
    """Why :func:`unstorable_text` refused ``text``."""
    if "\x00" in text:
        return "must not contain the NUL character (\\u0000)"
    return "must be valid Unicode text (it contains an unpaired surrogate)"


def _shown(key: str) -> str:
    """A name as shown in an error path: JSON-escaped when it cannot be shown as it is."""
    return json.dumps(key)[1:-1] if unstorable_text(key) else key


def check_storable(value: Any, field: str = "", *, max_text: int = MAX_TEXT) -> None:
    """Refuse what no store can hold, anywhere in ``value`` (dict keys and values, lists, at any
    depth): text with a NUL or a lone surrogate, text over ``max_text`` characters, non-finite
    numbers (NaN, Infinity, as floats or Decimals), nesting deeper than 32 levels.

    Raises :class:`~billingkit.errors.ValidationError` naming the offending ``field`` path
    (``metadata.region``, ``items[2].name``). Every input model runs it on its raw input.
    """
    _walk(value, [field] if field else [], 0, max_text)


def _walk(value: Any, path: list[str | int], depth: int, max_text: int) -> None:
    if isinstance(value, str):
        if unstorable_text(value):
            name = field_path(path)
            raise ValidationError(f"{name or 'value'} {text_problem(value)}", field=name or None)
        if len(value) > max_text:
            name = field_path(path)
            raise ValidationError(
                f"{name or 'value'} is longer than {max_text} characters", field=name or None
            )
    elif isinstance(value, float):
        if not isfinite(value):
            _not_finite(path)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            _not_finite(path)
    elif isinstance(value, dict | list | tuple):
        if depth >= _MAX_DEPTH:
            name = field_path(path)
            raise ValidationError(f"{name or 'value'} is nested too deeply", field=name or None)
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    if unstorable_text(key):
                        name = field_path([*path, _shown(key)])
                        raise ValidationError(f"{name}: the name {text_problem(key)}", field=name)
                    if len(key) > max_text:
                        name = field_path(path)
                        raise ValidationError(
                            f"{name or 'value'} has a key longer than {max_text} characters",
                            field=name or None,
                        )
                _walk(item, [*path, str(key)], depth + 1, max_text)
        else:
            for index, item in enumerate(value):
                _walk(item, [*path, index], depth + 1, max_text)


def _not_finite(path: list[str | int]) -> None:
    name = field_path(path)
    raise ValidationError(
        f"{name or 'value'} must be a finite number (not NaN or Infinity)", field=name or None
    )


class InputModel(BaseModel):
    """Base of request models: unknown fields are refused, values stripped.

    Before any field is validated, the raw input goes through :func:`check_storable`: text no
    database can store (NUL, lone surrogates), text over :data:`MAX_TEXT` characters and NaN or
    Infinity are a ``ValidationError`` naming the field, whatever the field's type (metadata keys,
    ``dict[str, Any]`` values, list items included). Narrower limits come from the field types
    (:data:`Name`, :data:`Key`...).

    A field the model does not have is refused (``extra="forbid"``) before the others are read:
    a misspelled field would otherwise be dropped silently, and in billing a dropped field is a
    wrong invoice. :func:`parse_input` (and the HTTP adapter) turn it into a ``ValidationError``
    whose ``field`` is the unknown field's path and whose ``details["accepted_fields"]`` lists
    :attr:`accepted_fields`. Fields of the reference API that this version cannot honour are
    named in :attr:`not_supported` (accepted only when empty: null, ``""``, ``[]``, ``{}``) or, when
    they cannot change anything here, in :attr:`ignored` (accepted and dropped).
    """

    model_config = ConfigDict(
        extra="forbid",
        str_strip_whitespace=True,
        frozen=True,
        str_max_length=MAX_TEXT,
        allow_inf_nan=False,
    )

    #: The names this model accepts, sorted (set once per class).
    accepted_fields: ClassVar[tuple[str, ...]] = ()
    #: Reference fields refused with "not supported by this version" unless empty.
    not_supported: ClassVar[frozenset[str]] = frozenset()
    #: Reference fields accepted and dropped: nothing in billingkit depends on them.
    ignored: ClassVar[frozenset[str]] = frozenset()
    _accepted: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.accepted_fields = tuple(sorted(cls.model_fields))
        cls._accepted = frozenset(cls.accepted_fields)

    @model_validator(mode="before")
    @classmethod
    def _check_raw_input(cls, data: Any) -> Any:
        # A BillingError is not a ValueError, so pydantic lets it through unchanged: the error
        # keeps the field path found here (pydantic would report it against the whole model).
        if not isinstance(data, dict):
            if not isinstance(data, Mapping):
                return data  # a model instance, or something pydantic refuses with its own error
            data = dict(data)
        check_storable(data)
        if not cls._accepted.issuperset(data):
            return cls._known_fields(data)
        return data

    @classmethod
    def _known_fields(cls, data: dict[Any, Any]) -> dict[Any, Any]:
        # Pydantic errors (not ours) so that pydantic adds where this model sits in the input
        # (``items[3]``); parse_input and the HTTP adapter add the field and the accepted list.
        known = {}
        for key, value in data.items():
            if key in cls._accepted:
                known[key] = value
            elif key in cls.not_supported:
                if value not in (None, "", [], {}):
                    raise PydanticCustomError(
                        NOT_SUPPORTED,
                        "{field} is not supported by this version of billingkit",
                        {"field": str(key)},
                    )
            elif key not in cls.ignored:
                raise PydanticCustomError(
                    UNKNOWN_FIELD,
                    "unknown field '{field}'; accepted: {accepted}",
                    {
                        "field": str(key),
                        "accepted": ", ".join(cls.accepted_fields),
                        "accepted_fields": list(cls.accepted_fields),
                    },
                )
        return known


#: The pydantic error type of an unknown field (see :class:`InputModel`).
UNKNOWN_FIELD = "unknown_field"
#: The pydantic error type of a reference field this version cannot honour.
NOT_SUPPORTED = "not_supported"


def unknown_field_error(error: Mapping[str, Any], loc: Sequence[int | str]) -> ValidationError | None:
    """Our error for one pydantic error dict if it is about an unknown or unsupported field,
    else ``None``.

    ``loc`` is where the error sits in the input (already rendered for the caller: prefixed,
    without pydantic's internal tags). The result's ``field`` is the field's path
    (``prices[1].cod``); for an unknown field the message and ``details["accepted_fields"]`` list
    the names the model accepts.
    """
    kind = error.get("type")
    ctx = error.get("ctx") or {}
    if kind == UNKNOWN_FIELD:
        path = field_path([*loc, str(ctx.get("field", ""))])
        accepted = list(ctx.get("accepted_fields") or ())
        return ValidationError(
            f"unknown field '{path}'; accepted: {', '.join(accepted)}",
            field=path,
            details={"accepted_fields": accepted},
        )
    if kind == NOT_SUPPORTED:
        path = field_path([*loc, str(ctx.get("field", ""))])
        return ValidationError(f"{path} is not supported by this version of billingkit", field=path)
    if kind == "extra_forbidden":  # a model outside InputModel that forbids extras
        path = field_path(loc)
        return ValidationError(f"unknown field '{path}'", field=path or None)
    return None


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
    unknown = unknown_field_error(first, [*prefix, *loc])
    if unknown is not None:
        return unknown
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
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise ValueError("datetime is outside the supported range (years 1-9999 in UTC)") from None


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


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    """At most 50 keys of at most 40 characters, each value at most 500 characters (a value that
    is not text is measured as JSON: add-on metadata holds any JSON)."""
    if len(value) > 50:
        raise ValueError("at most 50 metadata keys")
    for key, item in value.items():
        text = item if isinstance(item, str) else json.dumps(item, allow_nan=False)
        if len(key) > 40 or len(text) > 500:
            raise ValueError("metadata keys are at most 40 and values at most 500 characters")
    return value


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
#: A name: 1 to :data:`MAX_NAME` characters.
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME)]
#: A lookup key, code or external id: 1 to :data:`MAX_KEY` characters.
Key = Annotated[str, StringConstraints(min_length=1, max_length=MAX_KEY)]
#: The id of another resource given in a body: 1 to :data:`MAX_KEY` characters.
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=MAX_KEY)]
#: Free text (descriptions): at most :data:`MAX_TEXT` characters.
Description = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
Email = Annotated[str, AfterValidator(_email)]
TimeZoneName = Annotated[str, AfterValidator(_timezone)]
Metadata = Annotated[dict[str, str], AfterValidator(_metadata)]


#: Metadata whose values may be any JSON (the reference's add-on metadata); same limits as ``Metadata``.
JsonMetadata = Annotated[dict[str, pydantic.JsonValue], AfterValidator(_metadata)]


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

#: An integer that fits a stored integer column; larger values are a 400, not a database error.
Int32 = Annotated[int, Field(ge=-INT32_MAX, le=INT32_MAX)]
