"""Listing stored usage events: the filter, the page, and the in-memory reference every store follows.

Which events are listed: those with a timestamp in ``[start, end)`` and, when given, the exact
``external_customer_id``, ``event_name``, ``event_id`` and ``source``, whose properties pass
``property_filters`` (the meter filter rule: every key present, its text one of the values).

Order: ``sort="timestamp"`` lists by ``(timestamp, event id)``; ``sort="event_name"`` by
``(event_name, timestamp, event id)``; descending by default. Text compares by code point on every
store.

Paging: ``offset``/``limit`` as usual, plus keyset paging on ``(timestamp, id)`` (timestamp sort
only): ``after`` continues *after* a key in the listing order (the next page: pass the last key
of the page you have); ``before`` returns the events just *before* a key in the listing order (in
descending order: the newer events, for polling; pass the first key of the page you have).
``total_count`` counts every event the filters match, whatever the page; ``has_more`` says whether
more events follow the page in the direction of travel.

Example: 120 matching events, ``limit=50`` → 50 events, ``has_more`` True, ``total_count`` 120;
then ``after=<key of event 50>`` → the next 50.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from billingkit.domain.periods import ensure_utc
from billingkit.domain.usage import MeterFilter, UsageEvent, filters_match
from billingkit.errors import ValidationError

__all__ = [
    "MAX_EVENT_PAGE",
    "EventFilter",
    "EventKey",
    "EventPage",
    "EventSort",
    "filter_events",
    "format_key",
    "parse_key",
]

EventKey = tuple[datetime, str]
EventSort = Literal["timestamp", "event_name"]
MAX_EVENT_PAGE = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def format_key(event: UsageEvent) -> str:
    """The opaque-looking keyset cursor of an event: ``<UTC microseconds since epoch>::<id>``."""
    delta = event.timestamp - _EPOCH
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return f"{micros}::{event.event_id}"


def parse_key(text: str, field: str) -> EventKey:
    """The key written by :func:`format_key`; ``ValidationError`` on ``field`` otherwise."""
    micros, sep, event_id = text.partition("::") if isinstance(text, str) else ("", "", "")
    if not sep or not event_id or not micros.lstrip("-").isdigit() or not micros.isascii():
        raise ValidationError(f"{field} is not a key returned by an event query", field=field)
    try:
        return _EPOCH + timedelta(microseconds=int(micros)), event_id
    except OverflowError:
        raise ValidationError(f"{field} is out of range", field=field) from None


@dataclass(frozen=True, slots=True)
class EventFilter:
    """What to list (see the module docs). Raises ``ValidationError`` naming the field."""

    start: datetime
    end: datetime
    external_customer_id: str | None = None
    event_name: str | None = None
    event_id: str | None = None
    source: str | None = None
    property_filters: tuple[MeterFilter, ...] = ()
    sort: EventSort = "timestamp"
    descending: bool = True
    after: EventKey | None = None
    before: EventKey | None = None
    offset: int = 0
    limit: int = 50

    def __post_init__(self) -> None:
        start = ensure_utc(self.start, "start_time")
        end = ensure_utc(self.end, "end_time")
        if end <= start:
            raise ValidationError("end_time must be after start_time", field="end_time")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        if self.sort not in ("timestamp", "event_name"):
            raise ValidationError("sort must be timestamp or event_name", field="sort")
        if (self.after or self.before) and self.sort != "timestamp":
            raise ValidationError("iteration keys need sort=timestamp", field="sort")
        if self.after and self.before:
            raise ValidationError("give iter_first_key or iter_last_key, not both", field="iter_first_key")
        if isinstance(self.offset, bool) or not isinstance(self.offset, int) or self.offset < 0:
            raise ValidationError("offset must be an integer >= 0", field="offset")
        if (
            isinstance(self.limit, bool)
            or not isinstance(self.limit, int)
            or not 1 <= self.limit <= MAX_EVENT_PAGE
        ):
            raise ValidationError(f"page_size must be between 1 and {MAX_EVENT_PAGE}", field="page_size")
        if not all(isinstance(f, MeterFilter) for f in self.property_filters):
            raise ValidationError("property_filters must be MeterFilters", field="property_filters")
        object.__setattr__(self, "property_filters", tuple(self.property_filters))

    def matches(self, event: UsageEvent) -> bool:
        return (
            self.start <= event.timestamp < self.end
            and (self.external_customer_id is None or event.external_customer_id == self.external_customer_id)
            and (self.event_name is None or event.event_name == self.event_name)
            and (self.event_id is None or event.event_id == self.event_id)
            and (self.source is None or event.source == self.source)
            and filters_match(self.property_filters, event.properties)
        )


@dataclass(frozen=True, slots=True)
class EventPage:
    """One page of events in listing order."""

    events: tuple[UsageEvent, ...]
    has_more: bool
    total_count: int


def _order_key(sort: EventSort, event: UsageEvent) -> tuple[str | datetime, ...]:
    if sort == "event_name":
        return (event.event_name, event.timestamp, event.event_id)
    return (event.timestamp, event.event_id)


def filter_events(events: Iterable[UsageEvent], query: EventFilter) -> EventPage:
    """The page ``query`` selects from ``events`` (the reference for every event store)."""
    matched = [event for event in events if query.matches(event)]
    total = len(matched)
    matched.sort(key=lambda e: _order_key(query.sort, e), reverse=query.descending)
    if query.after is not None:
        key = query.after
        matched = [e for e in matched if ((e.timestamp, e.event_id) < key) == query.descending]
        matched = [e for e in matched if (e.timestamp, e.event_id) != key]
    if query.before is not None:
        key = query.before
        matched = [e for e in matched if ((e.timestamp, e.event_id) > key) == query.descending]
        matched = [e for e in matched if (e.timestamp, e.event_id) != key]
        matched.reverse()  # walk away from the key, then restore the listing order
        window = matched[query.offset : query.offset + query.limit + 1]
        page = window[: query.limit]
        page.reverse()
        return EventPage(tuple(page), len(window) > query.limit, total)
    window = matched[query.offset : query.offset + query.limit + 1]
    return EventPage(tuple(window[: query.limit]), len(window) > query.limit, total)
