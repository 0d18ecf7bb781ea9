"""Notification events: one row per state change, recorded in the same unit of work."""

from __future__ import annotations

from typing import Any

from billingkit.domain.resources import EnvironmentResource

__all__ = ["NotificationEvent"]


class NotificationEvent(EnvironmentResource):
    """``event_type`` such as ``customer.created``; ``payload`` is the webhook body
    ``{"event_type": ..., "<resource>": {...}}``."""

    event_type: str
    payload: dict[str, Any]
    entity_type: str
    entity_id: str
