"""Usage event ingestion: validate a whole batch, store each event id once, say what happened.

Rules:
- ``event_name`` and ``external_customer_id`` are required; ``event_id`` is generated
  (``event_<ULID>``) when absent; ``timestamp`` defaults to now and must carry a time zone;
  ``properties`` is an object; ``source`` and ``customer_id`` are optional strings.
- A batch is validated completely before anything is written: one invalid event is a
  ``ValidationError`` naming ``events[<index>].<field>`` and nothing is stored. An empty batch is
  accepted. A batch holds at most ``max_events`` events.
- Each ``(tenant, environment, event_id)`` is stored once. Repeats, in the same batch (the first
  occurrence wins) or of an earlier one, are reported as duplicates, never stored twice.
- Every new event is matched to the live meters of its ``event_name`` and their filters; an event
  that matches none is still stored and records ``event.rejected`` with the reason
  ``no_meter_for_event_name`` or ``no_matching_meter``.

The hot path builds one small frozen ``UsageEvent`` per event and no pydantic model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.resources import iso
from billingkit.domain.usage import MeterSpec, UsageEvent, property_text
from billingkit.errors import NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.meters import meters_for_events
from billingkit.services.notifications import record

__all__ = [
    "DEFAULT_MAX_BULK_EVENTS",
    "IngestResult",
    "event_to_dict",
    "get_event",
    "ingest_events",
    "parse_event",
]

ENTITY = "event"
DEFAULT_MAX_BULK_EVENTS = 1000
_MAX_TEXT = 255
_OPTIONAL_TEXT = ("event_id", "customer_id", "source")


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What happened to a batch: ``accepted`` ids were stored now; ``duplicate_ids`` were already
    stored (or repeated in the batch) and were not stored again. Both keep the batch's order."""

    accepted_ids: tuple[str, ...]
    duplicate_ids: tuple[str, ...]
    rejected: dict[str, str] = field(default_factory=dict)  # event id -> reason, for new events

    def to_dict(self) -> dict[str, Any]:
        return {
            "message": "Events accepted for processing",
            "accepted": len(self.accepted_ids),
            "duplicates": len(self.duplicate_ids),
            "accepted_ids": list(self.accepted_ids),
            "duplicate_ids": list(self.duplicate_ids),
        }


def _text(raw: Mapping[str, Any], name: str, path: str, *, required: bool) -> str | None:
    value = raw.get(name)
    if value is None:
        if required:
            raise ValidationError(f"{path}{name} is required", field=f"{path}{name}")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{path}{name} must be a non-empty string", field=f"{path}{name}")
    if len(value) > _MAX_TEXT:
        raise ValidationError(f"{path}{name} is longer than {_MAX_TEXT} characters", field=f"{path}{name}")
    return value


def _timestamp(value: Any, path: str, now: datetime) -> datetime:
    name = f"{path}timestamp"
    if value is None:
        return now
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
        except ValueError:
            raise ValidationError(f"{name} must be an ISO 8601 date-time", field=name) from None
    if not isinstance(value, datetime):
        raise ValidationError(f"{name} must be an ISO 8601 date-time", field=name)
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(f"{name} must include a time zone (e.g. Z or +00:00)", field=name)
    return value


def parse_event(raw: Any, ctx: Context, path: str = "") -> UsageEvent:
    """One event from its wire form (a mapping); errors name ``<path><field>``."""
    if not isinstance(raw, Mapping):
        raise ValidationError(
            f"{path.rstrip('.') or 'event'} must be an object", field=path.rstrip(".") or None
        )
    event_name = _text(raw, "event_name", path, required=True)
    customer = _text(raw, "external_customer_id", path, required=True)
    event_id, customer_id, source = (_text(raw, name, path, required=False) for name in _OPTIONAL_TEXT)
    properties = raw.get("properties")
    if properties is None:
        properties = {}
    elif not isinstance(properties, Mapping):
        raise ValidationError(f"{path}properties must be an object", field=f"{path}properties")
    return UsageEvent(
        event_id=event_id or ctx.ids.new("event"),
        event_name=event_name,  # type: ignore[arg-type]
        external_customer_id=customer,  # type: ignore[arg-type]
        timestamp=_timestamp(raw.get("timestamp"), path, ctx.now),
        properties=dict(properties),
        customer_id=customer_id,
        source=source,
    )


def _rejection(event: UsageEvent, meters: list[MeterSpec]) -> str | None:
    if not meters:
        return "no_meter_for_event_name"
    props = event.properties
    for meter in meters:
        if all(f.key in props and property_text(props[f.key]) in f.values for f in meter.filters):
            return None
    return "no_matching_meter"


def ingest_events(
    uow: UnitOfWork, ctx: Context, *, events: Sequence[Any], max_events: int = DEFAULT_MAX_BULK_EVENTS
) -> IngestResult:
    """Validate the batch, store the new events, report accepted and duplicate ids (see module)."""
    ctx.require(ENTITY, Action.WRITE)
    if len(events) > max_events:
        raise ValidationError(
            f"a batch holds at most {max_events} events, got {len(events)}",
            field="events",
            details={"max_events": max_events},
        )
    parsed = [parse_event(raw, ctx, f"events[{i}].") for i, raw in enumerate(events)]
    stored = uow.events.insert_new(parsed, ctx.now)
    new: list[UsageEvent] = []
    duplicates: list[str] = []
    for event in parsed:
        if event.event_id in stored:
            stored.discard(event.event_id)  # a later repeat in this batch is a duplicate
            new.append(event)
        else:
            duplicates.append(event.event_id)
    meters = {
        name: [m.to_spec() for m in found]
        for name, found in meters_for_events(uow, {e.event_name for e in new}).items()
    }
    rejected: dict[str, str] = {}
    for event in new:
        reason = _rejection(event, meters[event.event_name])
        if reason is not None:
            rejected[event.event_id] = reason
            record(
                uow,
                ctx,
                event_type="event.rejected",
                entity_type="event",
                entity_id=event.event_id,
                resource={**event_to_dict(event, ctx.env), "reason": reason},
            )
    return IngestResult(tuple(e.event_id for e in new), tuple(duplicates), rejected)


def get_event(uow: UnitOfWork, ctx: Context, *, event_id: str) -> UsageEvent:
    ctx.require(ENTITY, Action.READ)
    event = uow.events.find(event_id)
    if event is None:
        raise NotFound(f"event {event_id} not found")
    return event


def event_to_dict(event: UsageEvent, environment_id: str) -> dict[str, Any]:
    """The reference API's event shape."""
    return {
        "id": event.event_id,
        "event_name": event.event_name,
        "external_customer_id": event.external_customer_id,
        "customer_id": event.customer_id,
        "timestamp": iso(event.timestamp),
        "source": event.source,
        "properties": dict(event.properties),
        "environment_id": environment_id,
    }
