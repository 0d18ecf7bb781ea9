"""Answers of ``/v1/events``: ingestion, lookup, queries and usage reports."""

from __future__ import annotations

from typing import Any, Literal

from billingkit import AggregationType
from billingkit.http.schemas.base import DecimalString, Timestamp, WireModel

__all__ = [
    "BulkIngestEventResponse",
    "EventResponse",
    "GetEventByIDResponse",
    "GetEventsResponse",
    "GetUsageByMeterResponse",
    "GetUsageResponse",
    "IngestEventResponse",
    "UsageGroupResponse",
    "UsageWindowResponse",
]


class IngestEventResponse(WireModel):
    """``POST /events`` (202). Whether the id was already stored is in the ``Billingkit-Duplicate``
    header: the body stays the reference's map of strings."""

    message: str
    event_id: str


class BulkIngestEventResponse(WireModel):
    """``POST /events/bulk`` (202): a map of strings, as the reference specifies, so the counts
    are decimal strings (``"5"``) and the flag is ``"true"`` or ``"false"``."""

    message: str
    accepted: str
    duplicates: str
    evaluate_alerts_immediately: Literal["true", "false"]


class EventResponse(WireModel):
    """A stored event; ``id`` is the event id the sender gave (or billingkit generated)."""

    id: str
    event_name: str
    external_customer_id: str
    customer_id: str | None
    timestamp: Timestamp
    source: str | None
    properties: dict[str, Any]
    environment_id: str


class GetEventByIDResponse(WireModel):
    event: EventResponse


class GetEventsResponse(WireModel):
    """A page of events. ``iter_first_key`` / ``iter_last_key`` are the keys of the page's first
    and last events (an empty page echoes the request's); ``offset`` echoes the request."""

    events: list[EventResponse]
    has_more: bool
    iter_first_key: str | None
    iter_last_key: str | None
    total_count: int
    offset: int


class UsageWindowResponse(WireModel):
    """One time bucket ``[window_size, window_end)``: ``window_size`` holds the bucket's start
    instant (the reference's name for it)."""

    window_size: Timestamp
    window_end: Timestamp
    value: DecimalString
    event_count: int


class UsageGroupResponse(WireModel):
    """The value of one ``group_by`` property value (``group`` null: events without it)."""

    group: str | None
    value: DecimalString
    event_count: int


class GetUsageResponse(WireModel):
    """``POST /events/usage``: the window's total ``value`` (a decimal string) and ``event_count``,
    its time buckets (``results``, with ``window_size`` only) and its ``groups``."""

    event_name: str
    type: AggregationType
    value: DecimalString
    event_count: int
    results: list[UsageWindowResponse]
    groups: list[UsageGroupResponse]


class GetUsageByMeterResponse(GetUsageResponse):
    """``POST /events/usage/meter``: the same report for a stored meter."""

    meter_id: str
