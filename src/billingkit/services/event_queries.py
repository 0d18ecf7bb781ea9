"""Listing stored usage events (``GET /events``, ``POST /events/query``, ``scoped.events.query``).

Request fields (the reference API's ``GetEventsRequest``; every one optional):

- ``external_customer_id``, ``event_name``, ``event_id``, ``source``: exact matches (an empty
  string means "not given", as in the reference).
- ``start_time`` / ``end_time``: ISO 8601 strings or aware datetimes, ``[start, end)``; ``end``
  defaults to now and ``start`` to ``end`` minus 7 days. A time without a time zone is refused.
- ``property_filters``: ``{key: [values]}``: every key present with its text (see
  :func:`billingkit.domain.usage.property_text`) one of the values. The query-string form
  ``k1:v1,v2;k2:v3`` (a string) is accepted too, see :func:`parse_property_filters`.
- ``iter_last_key``: the next page after this key (pass the ``iter_last_key`` of the page you
  have); ``iter_first_key``: the events just before it in listing order, i.e. with the default
  ``order=desc`` the *newer* events (polling; pass the ``iter_first_key`` of the newest page).
  Keys need ``sort=timestamp``; at most one of them.
- ``sort``: ``timestamp`` (default) or ``event_name``; ``order``: ``asc`` or ``desc`` (default).
- ``page_size``: 1…1000, default 50, on GET and POST alike; ``offset``: ≥ 0, default 0 (applied
  after the key, if any).

Every bad input is a ``ValidationError`` naming the wire field (``page_size``, ``start_time``,
``property_filters.region``, ...). Reading events needs ``event`` read (``event_reader``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.event_queries import (
    MAX_EVENT_PAGE,
    EventFilter,
    EventKey,
    EventPage,
    format_key,
    parse_key,
)
from billingkit.domain.usage import MeterFilter
from billingkit.domain.validation import MAX_OFFSET, ensure_utc
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.events import event_to_dict, text_problem, unstorable_text

__all__ = [
    "DEFAULT_EVENT_PAGE",
    "DEFAULT_EVENT_WINDOW",
    "build_event_filter",
    "event_page_to_dict",
    "parse_property_filters",
    "query_events",
]

ENTITY = "event"
DEFAULT_EVENT_PAGE = 50
DEFAULT_EVENT_WINDOW = timedelta(days=7)


def _bad_text(text: str) -> str | None:
    """Why no database can compare with ``text`` (NUL, lone surrogate), or None."""
    return text_problem(text) if unstorable_text(text) else None


def _text(value: Any, field: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string", field=field)
    problem = _bad_text(value)
    if problem:
        raise ValidationError(f"{field} {problem}", field=field)
    return value


def _instant(value: Any, field: str) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValidationError(f"{field} must be an ISO 8601 date-time", field=field) from None
    if not isinstance(value, datetime):
        raise ValidationError(f"{field} must be an ISO 8601 date-time", field=field)
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(f"{field} must include a time zone (e.g. Z or +00:00)", field=field)
    return ensure_utc(value, field)


def _integer(value: Any, field: str, default: int, low: int, high: int | None = None) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{field} must be an integer", field=field)
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ValidationError(f"{field} must be {bounds}, got {value}", field=field)
    return value


def _choice(value: Any, field: str, allowed: tuple[str, ...]) -> str:
    if value is None or value == "":
        return allowed[0]
    if value not in allowed:
        raise ValidationError(
            f"{field} must be one of {', '.join(allowed)}, got {value!r}",
            field=field,
            details={"allowed_values": list(allowed)},
        )
    return str(value)


def _key(value: Any, field: str) -> EventKey | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string", field=field)
    key = parse_key(value, field)
    if _bad_text(key[1]):
        raise ValidationError(f"{field} is not a key returned by an event query", field=field)
    return key


def parse_property_filters(text: str | None) -> dict[str, list[str]] | None:
    """The query-string form of ``property_filters``: ``region:eu,us;tier:gold`` →
    ``{"region": ["eu", "us"], "tier": ["gold"]}``.

    ``;`` separates keys, the first ``:`` ends a key, ``,`` separates values; nothing is trimmed,
    so a key cannot contain ``:`` and a value cannot contain ``,`` or ``;`` here (use
    ``POST /events/query`` for those). Empty parts (a trailing ``;``) are skipped; a part without
    ``:``, an empty key, an empty value or a repeated key is a ``ValidationError``.
    """
    if text is None or text == "":
        return None
    filters: dict[str, list[str]] = {}
    for part in text.split(";"):
        if not part:
            continue
        key, sep, values = part.partition(":")
        if not sep or not key:
            raise ValidationError(
                f"property_filters must look like key:value1,value2;key2:value3, got {part!r}",
                field="property_filters",
            )
        field = f"property_filters.{key}"
        if key in filters:
            raise ValidationError(f"{field} is given twice", field=field)
        listed = values.split(",")
        if not all(listed):
            raise ValidationError(f"{field} has an empty value", field=field)
        filters[key] = listed
    return filters or None


def _property_filters(value: Any) -> tuple[MeterFilter, ...]:
    if isinstance(value, str):
        value = parse_property_filters(value)
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValidationError(
            "property_filters must be an object of property name to a list of values",
            field="property_filters",
        )
    filters: list[MeterFilter] = []
    for key, values in value.items():
        field = f"property_filters.{key}"
        if not isinstance(key, str) or not key:
            raise ValidationError("property_filters keys must be non-empty strings", field="property_filters")
        if _bad_text(key) or '"' in key or any(ord(ch) < 32 for ch in key):
            raise ValidationError(
                f"{field}: a property name must be valid text without double quotes or control characters",
                field=field,
            )
        if isinstance(values, str) or not isinstance(values, list | tuple) or not values:
            raise ValidationError(f"{field} must be a non-empty list of strings", field=field)
        for item in values:
            if not isinstance(item, str):
                raise ValidationError(f"{field} must be a non-empty list of strings", field=field)
            problem = _bad_text(item)
            if problem:
                raise ValidationError(f"{field}: a value {problem}", field=field)
        filters.append(MeterFilter(key, tuple(values)))
    return tuple(filters)


def build_event_filter(
    now: datetime,
    *,
    external_customer_id: Any = None,
    event_name: Any = None,
    event_id: Any = None,
    source: Any = None,
    start_time: Any = None,
    end_time: Any = None,
    property_filters: Any = None,
    iter_first_key: Any = None,
    iter_last_key: Any = None,
    sort: Any = None,
    order: Any = None,
    page_size: Any = None,
    offset: Any = None,
) -> EventFilter:
    """The :class:`EventFilter` of a request given in wire terms (see the module), at ``now``."""
    end = _instant(end_time, "end_time")
    start = _instant(start_time, "start_time")
    end_given = end is not None
    if end is None:
        end = now
    if start is None:
        start = end - DEFAULT_EVENT_WINDOW
    if end <= start:
        field = "end_time" if end_given else "start_time"
        raise ValidationError(f"{field}: start_time must be before end_time", field=field)
    chosen_sort = _choice(sort, "sort", ("timestamp", "event_name"))
    descending = _choice(order, "order", ("desc", "asc")) == "desc"
    before = _key(iter_first_key, "iter_first_key")
    after = _key(iter_last_key, "iter_last_key")
    if before is not None and after is not None:
        raise ValidationError(
            "give iter_first_key (newer events) or iter_last_key (next page), not both",
            field="iter_first_key",
        )
    if (before or after) and chosen_sort != "timestamp":
        field = "iter_first_key" if before else "iter_last_key"
        raise ValidationError(f"{field} needs sort=timestamp (keys are on timestamp and id)", field=field)
    return EventFilter(
        start=start,
        end=end,
        external_customer_id=_text(external_customer_id, "external_customer_id"),
        event_name=_text(event_name, "event_name"),
        event_id=_text(event_id, "event_id"),
        source=_text(source, "source"),
        property_filters=_property_filters(property_filters),
        sort="event_name" if chosen_sort == "event_name" else "timestamp",
        descending=descending,
        after=after,
        before=before,
        offset=_integer(offset, "offset", 0, 0, MAX_OFFSET),
        limit=_integer(page_size, "page_size", DEFAULT_EVENT_PAGE, 1, MAX_EVENT_PAGE),
    )


def query_events(uow: UnitOfWork, ctx: Context, **fields: Any) -> EventPage:
    """The page of stored events the request ``fields`` select (see the module)."""
    ctx.require(ENTITY, Action.READ)
    return uow.events.query(build_event_filter(ctx.now, **fields))


def event_page_to_dict(
    page: EventPage,
    environment_id: str,
    *,
    offset: int | None = None,
    iter_first_key: str | None = None,
    iter_last_key: str | None = None,
) -> dict[str, Any]:
    """The reference API's ``GetEventsResponse``: ``{events, has_more, iter_first_key,
    iter_last_key, total_count, offset}``.

    ``iter_first_key`` / ``iter_last_key`` are the keys of the page's first and last events (use
    them with ``sort=timestamp``). An empty page echoes the request's keys (``None`` where none
    was given), so a polling loop (``iter_first_key=<previous response's iter_first_key>``) can
    keep asking with the same key until newer events arrive. ``offset`` echoes the request.
    """
    first = format_key(page.events[0]) if page.events else iter_first_key
    last = format_key(page.events[-1]) if page.events else iter_last_key
    return {
        "events": [event_to_dict(event, environment_id) for event in page.events],
        "has_more": page.has_more,
        "iter_first_key": first,
        "iter_last_key": last,
        "total_count": page.total_count,
        "offset": offset or 0,
    }
