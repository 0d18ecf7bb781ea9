"""Webhook deliveries of an environment: list and read them (with every attempt), retry one, and
replay events (one event, or an endpoint's events since a time).

A retry puts the delivery back in the queue, due now, for one more attempt (a delivered one is
refused: replay its event instead). A replay makes new deliveries of stored events, due now, with
the events' own ``webhook-id`` (a receiver that already processed one recognises it); the
dispatcher sends them as any other, in order per resource.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import model_validator

from billingkit.domain.access import Action
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.validation import InputModel, UtcDatetime
from billingkit.domain.webhooks import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from billingkit.errors import InvalidOperation, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.search import Searches, SearchRequest
from billingkit.services.webhook_dispatch import new_deliveries
from billingkit.services.webhook_endpoints import ENTITY, live_endpoint

__all__ = [
    "MAX_REPLAY",
    "DeliverySearch",
    "Replay",
    "ReplayRequest",
    "get_delivery",
    "replay",
    "retry_delivery",
    "search_deliveries",
]

#: The most events one replay re-sends.
MAX_REPLAY = 10_000


class DeliverySearch(SearchRequest):
    """Which deliveries to list, newest first: by endpoint, event, event type, entity, status."""

    kind: ClassVar[str] = "webhook_deliveries"

    endpoint_id: Annotated[str | None, Searches("endpoint_id", Op.EQ)] = None
    event_id: Annotated[str | None, Searches("event_id", Op.EQ)] = None
    event_type: Annotated[str | None, Searches("event_type", Op.EQ)] = None
    entity_id: Annotated[str | None, Searches("entity_id", Op.EQ)] = None
    delivery_status: Annotated[list[DeliveryStatus] | None, Searches("delivery_status", Op.IN)] = None


class ReplayRequest(InputModel):
    """What to send again: ``event_id`` (to ``endpoint_id``, or to every enabled endpoint that
    wants it), or every event since ``since`` to ``endpoint_id`` (that it wants)."""

    event_id: str | None = None
    endpoint_id: str | None = None
    since: UtcDatetime | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ReplayRequest:
        if self.event_id is None and self.since is None:
            raise ValueError("give event_id, or endpoint_id with since")
        if self.event_id is not None and self.since is not None:
            raise ValueError("give event_id or since, not both")
        if self.since is not None and self.endpoint_id is None:
            raise ValueError("a replay since a time needs endpoint_id")
        return self


@dataclass(frozen=True, slots=True)
class Replay:
    """The deliveries a replay made (due now)."""

    deliveries: list[WebhookDelivery]

    def to_dict(self) -> dict[str, Any]:
        return {"deliveries": [d.to_dict() for d in self.deliveries], "count": len(self.deliveries)}


def search_deliveries(uow: UnitOfWork, ctx: Context, *, search: DeliverySearch) -> Page[WebhookDelivery]:
    ctx.require(ENTITY, Action.READ)
    return uow.webhook_deliveries.list(search.to_query())


def get_delivery(uow: UnitOfWork, ctx: Context, *, delivery_id: str) -> WebhookDelivery:
    ctx.require(ENTITY, Action.READ)
    delivery = uow.webhook_deliveries.find(delivery_id)
    if delivery is None:
        raise NotFound(f"webhook delivery {delivery_id} not found")
    return delivery


def retry_delivery(uow: UnitOfWork, ctx: Context, *, delivery_id: str) -> WebhookDelivery:
    """Queue ``delivery_id`` for one more attempt, now. Its endpoint must be live and enabled."""
    ctx.require(ENTITY, Action.WRITE)
    delivery = get_delivery(uow, ctx, delivery_id=delivery_id)
    if delivery.delivery_status is DeliveryStatus.DELIVERED:
        raise InvalidOperation(
            f"webhook delivery {delivery_id} was delivered; replay its event to send it again"
        )
    _enabled(live_endpoint(uow, delivery.endpoint_id))
    queued = delivery.model_copy(
        update={"delivery_status": DeliveryStatus.PENDING, "next_attempt_at": ctx.now, **ctx.touch()}
    )
    return uow.webhook_deliveries.update_many([(delivery, queued)])[0]


def replay(uow: UnitOfWork, ctx: Context, *, data: ReplayRequest) -> Replay:
    """New deliveries of the events ``data`` names, due now (see :class:`ReplayRequest`)."""
    ctx.require(ENTITY, Action.WRITE)
    target = None if data.endpoint_id is None else _enabled(live_endpoint(uow, data.endpoint_id))
    made: list[WebhookDelivery] = []
    if data.event_id is not None:
        event = uow.notifications.find(data.event_id)
        if event is None:
            raise NotFound(f"event {data.event_id} not found")
        endpoints = [target] if target is not None else _enabled_endpoints(uow)
        made = new_deliveries(
            ctx.ids.new, event, [e for e in endpoints if e.wants(event.event_type)], ctx.now
        )
    else:
        assert target is not None and data.since is not None
        for event in _events_since(uow, data.since):
            if target.wants(event.event_type):
                made += new_deliveries(ctx.ids.new, event, [target], ctx.now)
    uow.webhook_deliveries.add_many(made)
    return Replay(made)


def _enabled(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    if not endpoint.enabled:
        raise InvalidOperation(f"webhook endpoint {endpoint.id} is disabled; enable it first")
    return endpoint


def _enabled_endpoints(uow: UnitOfWork) -> list[WebhookEndpoint]:
    query = ListQuery(filters=(Filter("enabled", Op.EQ, True),), limit=MAX_LIMIT)
    return list(uow.webhook_endpoints.list(query).items)


def _events_since(uow: UnitOfWork, since: Any) -> list[NotificationEvent]:
    """The events recorded at or after ``since``, oldest first (at most :data:`MAX_REPLAY`)."""
    events: list[NotificationEvent] = []
    while True:
        query = ListQuery(
            filters=(Filter("created_at", Op.GTE, since),),
            sort=(Sort("created_at", descending=False), Sort("id", descending=False)),
            limit=MAX_LIMIT,
            offset=len(events),
        )
        page = uow.notifications.list(query)
        events += page.items
        if len(events) > MAX_REPLAY:
            raise ValidationError(
                f"more than {MAX_REPLAY} events since {since.isoformat()}; replay a later time",
                field="since",
            )
        if len(page.items) < MAX_LIMIT:
            return events
