"""``scoped.notifications``: the notification events recorded in this environment."""

from __future__ import annotations

from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import Filter, ListQuery, Op, Page, Sort
from billingkit.facade.scoped import Scoped
from billingkit.services import notifications as svc

__all__ = ["Notifications"]


class Notifications:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def list(
        self, *, event_type: str | None = None, entity_id: str | None = None, limit: int = 50, offset: int = 0
    ) -> Page[NotificationEvent]:
        """Recorded events, oldest first, optionally of one type or one resource."""
        filters = []
        if event_type:
            filters.append(Filter("event_type", Op.EQ, event_type))
        if entity_id:
            filters.append(Filter("entity_id", Op.EQ, entity_id))
        query = ListQuery(
            filters=tuple(filters), sort=(Sort("created_at", descending=False),), limit=limit, offset=offset
        )
        return self._s.run(svc.list_notifications, query=query)
