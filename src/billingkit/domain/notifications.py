"""Notification events: one row per state change, recorded in the same unit of work."""

from __future__ import annotations

from typing import Any

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime

__all__ = ["NotificationEvent"]


class NotificationEvent(EnvironmentResource):
    """``event_type`` such as ``customer.created``; ``payload`` is the webhook body
    ``{"event_type": ..., "<resource>": {...}}``. ``dispatch_at``: when the webhook dispatcher is
    to hand it to the endpoints that want it (``None`` once it has; see
    :mod:`billingkit.services.webhook_dispatch`)."""

    event_type: str
    payload: dict[str, Any]
    entity_type: str
    entity_id: str
    dispatch_at: UtcDatetime | None = None
