"""Recording notification events in the caller's unit of work (delivery is a separate concern).

Every event type comes from the catalogue (:data:`billingkit.domain.event_types.EVENT_TYPES`):
:func:`notify` and :func:`notification` build the payload with the type's own builder (plus any
top-level ``fields`` the caller measured, e.g. an alert's thresholds);
:func:`event` and :func:`record` take a resource built by the caller. Either way :func:`event`
assembles the payload: it checks that the type is declared, the resource sits under the type's
key (or, for a flat type, that there is none) and every top-level field is one the type declares.
A type the catalogue does not declare cannot be recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, Unpack

from billingkit.domain.access import Action
from billingkit.domain.event_types import EVENT_TYPES, Built, EventType
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import ListQuery, Page
from billingkit.errors import InternalError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context

__all__ = [
    "Extra",
    "event",
    "list_notifications",
    "notification",
    "notify",
    "record",
    "record_many",
]


class Extra(TypedDict, total=False):
    """What a caller adds to a built notification: top-level ``fields`` it measured (an alert's
    thresholds, balances) and, for a flat type, what the notification is ``about`` (entity type,
    id)."""

    fields: Mapping[str, Any]
    about: tuple[str, str]


def _declared(event_type: str) -> EventType:
    """The catalogue's ``event_type``; ``InternalError`` (a bug, not a bad request) when it is not
    declared."""
    declared = EVENT_TYPES.get(event_type)
    if declared is None:
        raise InternalError(f"event type {event_type!r} is not in the catalogue (domain.event_types)")
    return declared


def event(
    ctx: Context,
    *,
    event_type: str,
    entity_type: str,
    entity_id: str,
    resource: dict[str, Any] | None,
    fields: Mapping[str, Any] | None = None,
) -> NotificationEvent:
    """The notification ``{"event_type": ..., "<entity_type>": resource, **fields}`` about
    ``entity_type`` ``entity_id`` (not stored yet: see :func:`record_many`). A flat type (no
    resource key, e.g. ``feature.wallet_balance.alert``) takes ``resource=None`` and is
    ``{"event_type": ..., **fields}``; ``entity_type`` then only names what it is about.
    ``fields`` must be among the type's declared top-level fields. Ids grow in the order events
    are made, which is their delivery order."""
    declared = _declared(event_type)
    if resource is None and declared.resource is not None:
        raise InternalError(f"{event_type} carries a {declared.resource!r}: give it")
    if resource is not None and declared.resource != entity_type:
        raise InternalError(f"{event_type} carries a {declared.resource!r}, not a {entity_type!r}")
    extra = dict(fields or {})
    if not set(extra) <= set(declared.fields):
        raise InternalError(f"{event_type} declares no top-level {sorted(set(extra) - set(declared.fields))}")
    payload: dict[str, Any] = {"event_type": event_type}
    if resource is not None:
        payload[entity_type] = resource
    return NotificationEvent(
        id=ctx.ids.new("sys_event"),
        event_type=event_type,
        entity_type=entity_type,
        entity_id=entity_id,
        payload={**payload, **extra},
        dispatch_at=ctx.now,
        **ctx.stamp(),
    )


def notification(
    ctx: Context, event_type: str, subject: Any, *context: Any, **extra: Unpack[Extra]
) -> NotificationEvent:
    """The notification ``event_type`` about ``subject`` (not stored yet), built by the
    catalogue's builder from ``subject`` and ``context`` (e.g. a subscription's customer), with
    the caller's top-level ``fields`` beside what the builder made.

    It is ``about`` an (entity type, id), by default the resource (its key and ``id``); a flat
    type, whose builder makes the top-level fields, must say what it is about."""
    declared = _declared(event_type)
    if declared.build is None:
        raise InternalError(f"billingkit cannot build the payload of {event_type} yet")
    built = declared.build(subject, *context)
    if isinstance(built, Built):
        resource, own = built.resource, built.fields
    elif declared.resource is None:
        resource, own = None, built
    else:
        resource, own = built, {}
    about = extra.get("about")
    if about is None:
        if resource is None or declared.resource is None:
            raise InternalError(f"{event_type} is flat: name what it is about")
        about = (declared.resource, resource["id"])
    return event(
        ctx,
        event_type=event_type,
        entity_type=about[0],
        entity_id=about[1],
        resource=resource,
        fields={**own, **extra.get("fields", {})},
    )


def record_many(uow: UnitOfWork, ctx: Context, events: list[NotificationEvent]) -> None:
    """Store ``events`` (one insert) for delivery after commit, in their order."""
    uow.notifications.add_many(events)
    ctx.recorded.extend(events)


def notify(
    uow: UnitOfWork, ctx: Context, event_type: str, subject: Any, *context: Any, **extra: Unpack[Extra]
) -> NotificationEvent:
    """Store :func:`notification` ``(ctx, event_type, subject, *context, **extra)`` for delivery
    after commit. The alert evaluators add their measured ``fields``."""
    made = notification(ctx, event_type, subject, *context, **extra)
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


def list_notifications(uow: UnitOfWork, ctx: Context, *, query: ListQuery) -> Page[NotificationEvent]:
    ctx.require("notification", Action.READ)
    return uow.notifications.list(query)
