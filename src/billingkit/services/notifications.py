"""Recording notification events in the caller's unit of work (delivery is a separate concern).

Every event type comes from the catalogue (:data:`billingkit.domain.event_types.EVENT_TYPES`):
:func:`notify` and :func:`notification` build the payload with the type's own builder;
:func:`event` and :func:`record` take a resource built by the caller and check that the type is
declared and the resource sits under the type's key. A type the catalogue does not declare
cannot be recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.event_types import EVENT_TYPES, Built, EventType
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import ListQuery, Page
from billingkit.errors import InternalError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context

__all__ = [
    "event",
    "list_notifications",
    "notification",
    "notify",
    "record",
    "record_many",
    "record_with_fields",
]


def _declared(event_type: str, entity_type: str | None = None) -> EventType:
    """The catalogue's ``event_type``; ``InternalError`` (a bug, not a bad request) when it is not
    declared, or its resource key is not ``entity_type``."""
    declared = EVENT_TYPES.get(event_type)
    if declared is None:
        raise InternalError(f"event type {event_type!r} is not in the catalogue (domain.event_types)")
    if entity_type is not None and declared.resource != entity_type:
        raise InternalError(f"{event_type} carries a {declared.resource!r}, not a {entity_type!r}")
    return declared


def event(
    ctx: Context,
    *,
    event_type: str,
    entity_type: str,
    entity_id: str,
    resource: dict[str, Any],
    fields: Mapping[str, Any] | None = None,
) -> NotificationEvent:
    """The notification ``{"event_type": ..., "<entity_type>": resource, **fields}`` (not stored
    yet: see :func:`record_many`); ``fields`` must be among the type's declared top-level fields.
    Ids grow in the order events are made, which is their delivery order."""
    declared = _declared(event_type, entity_type)
    extra = dict(fields or {})
    if not set(extra) <= set(declared.fields):
        raise InternalError(f"{event_type} declares no top-level {sorted(set(extra) - set(declared.fields))}")
    return NotificationEvent(
        id=ctx.ids.new("sys_event"),
        event_type=event_type,
        entity_type=entity_type,
        entity_id=entity_id,
        payload={"event_type": event_type, entity_type: resource, **extra},
        dispatch_at=ctx.now,
        **ctx.stamp(),
    )


def notification(ctx: Context, event_type: str, subject: Any, *context: Any) -> NotificationEvent:
    """The notification ``event_type`` about ``subject`` (not stored yet), its resource built by
    the catalogue's builder from ``subject`` and ``context`` (e.g. a subscription's customer)."""
    declared = _declared(event_type)
    if declared.build is None or declared.resource is None:
        raise InternalError(f"billingkit cannot build the payload of {event_type} yet")
    built = declared.build(subject, *context)
    resource, fields = (built.resource, built.fields) if isinstance(built, Built) else (built, None)
    return event(
        ctx,
        event_type=event_type,
        entity_type=declared.resource,
        entity_id=resource["id"],
        resource=resource,
        fields=fields,
    )


def record_many(uow: UnitOfWork, ctx: Context, events: list[NotificationEvent]) -> None:
    """Store ``events`` (one insert) for delivery after commit, in their order."""
    uow.notifications.add_many(events)
    ctx.recorded.extend(events)


def notify(uow: UnitOfWork, ctx: Context, event_type: str, subject: Any, *context: Any) -> NotificationEvent:
    """Store :func:`notification` ``(ctx, event_type, subject, *context)`` for delivery after commit."""
    made = notification(ctx, event_type, subject, *context)
    uow.notifications.add(made)
    ctx.recorded.append(made)
    return made


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


def record_with_fields(
    uow: UnitOfWork,
    ctx: Context,
    event_type: str,
    *,
    entity_type: str,
    entity_id: str,
    fields: dict[str, Any],
    subject: Any = None,
    context: tuple[Any, ...] = (),
) -> NotificationEvent:
    """Store ``{"event_type": ..., "<resource>": build(subject, *context), **fields}`` (a type with a
    resource) or ``{"event_type": ..., **build(subject, *context), **fields}`` (a flat type) for
    delivery after commit;
    ``fields`` must be the top-level fields the catalogue declares for the type. The stored event
    is about ``entity_type`` ``entity_id``. What the alert evaluators record."""
    declared = _declared(event_type)
    if set(fields) - set(declared.fields):
        raise InternalError(f"{event_type} declares no fields {sorted(set(fields) - set(declared.fields))}")
    if declared.build is None:
        raise InternalError(f"billingkit cannot build the payload of {event_type} yet")
    built = declared.build(subject, *context)
    payload: dict[str, Any] = {"event_type": event_type}
    if declared.resource is None:
        payload.update(built)  # a flat type: the builder makes its fields
    else:
        payload[declared.resource] = built
    payload.update(fields)
    made = NotificationEvent(
        id=ctx.ids.new("sys_event"),
        event_type=event_type,
        entity_type=entity_type,
        entity_id=entity_id,
        payload=payload,
        dispatch_at=ctx.now,
        **ctx.stamp(),
    )
    uow.notifications.add(made)
    ctx.recorded.append(made)
    return made


def list_notifications(uow: UnitOfWork, ctx: Context, *, query: ListQuery) -> Page[NotificationEvent]:
    ctx.require("notification", Action.READ)
    return uow.notifications.list(query)
