"""``/v1/events``: ingestion (202) and lookup."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query

from billingkit.errors import ValidationError
from billingkit.http.auth import EnvCaller
from billingkit.services.events import event_to_dict

router = APIRouter(prefix="/events", tags=["events"])


@router.post("", status_code=202)
def ingest_event(caller: EnvCaller, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    result = caller.events.ingest(body)
    event_id = (result.accepted_ids or result.duplicate_ids)[0]
    return {
        "message": "Event accepted for processing",
        "event_id": event_id,
        "duplicate": not result.accepted_ids,
    }


@router.post("/bulk", status_code=202)
def ingest_events(caller: EnvCaller, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    """Body ``{"events": [...]}``; the response adds counts and ids to the reference's message."""
    events = body.get("events")
    if not isinstance(events, list):
        raise ValidationError("events must be a list", field="events")
    return caller.events.ingest_bulk(events).to_dict()


@router.get("/lookup")
def lookup_event(
    caller: EnvCaller, event_id: Annotated[str, Query(min_length=1, max_length=255)]
) -> dict[str, Any]:
    return event_to_dict(caller.events.get(event_id), str(caller.environment_id))
