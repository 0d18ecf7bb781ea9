"""Recording notification events in the caller's unit of work (delivery is a separate concern)."""

from __future__ import annotations

from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import ListQuery, Page
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context

__all__ = ["list_notifications", "record"]


def record(
    uow: UnitOfWork,
    ctx: Context,
    *,
    event_type: str,
    entity_type: str,
    entity_id: str,
    resource: dict[str, Any],
) -> NotificationEvent:
    """Store ``{"event_type": ..., "<entity_type>": resource}`` for delivery after commit."""
    event = NotificationEvent(
        id=ctx.ids.new("sys_event"),
        event_type=event_type,
        entity_type=entity_type,
        entity_id=entity_id,
        payload={"event_type": event_type, entity_type: resource},
        **ctx.stamp(),
    )
    uow.notifications.add(event)
    ctx.recorded.append(event)
    return event


def list_notifications(uow: UnitOfWork, ctx: Context, *, query: ListQuery) -> Page[NotificationEvent]:
    ctx.require("notification", Action.READ)
    return uow.notifications.list(query)
