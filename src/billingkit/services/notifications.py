"""Recording notification events in the caller's unit of work (delivery is a separate concern)."""

from __future__ import annotations

from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import ListQuery, Page
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context

__all__ = ["event", "list_notifications", "record", "record_many"]


def event(
    ctx: Context, *, event_type: str, entity_type: str, entity_id: str, resource: dict[str, Any]
) -> NotificationEvent:
    """The notification ``{"event_type": ..., "<entity_type>": resource}`` (not stored yet: see
    :func:`record_many`). Ids grow in the order events are made, which is their delivery order."""
    return NotificationEvent(
        id=ctx.ids.new("sys_event"),
        event_type=event_type,
        entity_type=entity_type,
        entity_id=entity_id,
        payload={"event_type": event_type, entity_type: resource},
        **ctx.stamp(),
    )


def record_many(uow: UnitOfWork, ctx: Context, events: list[NotificationEvent]) -> None:
    """Store ``events`` (one insert) for delivery after commit, in their order."""
    uow.notifications.add_many(events)
    ctx.recorded.extend(events)


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
    made = event(ctx, event_type=event_type, entity_type=entity_type, entity_id=entity_id, resource=resource)
    uow.notifications.add(made)
    ctx.recorded.append(made)
    return made


def list_notifications(uow: UnitOfWork, ctx: Context, *, query: ListQuery) -> Page[NotificationEvent]:
    ctx.require("notification", Action.READ)
    return uow.notifications.list(query)
