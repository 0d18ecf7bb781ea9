"""Which subscription a line item belongs to.

Line items are stored inside their subscription (they are read and billed with it); the routes
that name a line item alone (``PUT|DELETE /subscriptions/lineitems/{id}``) find its subscription
through this index: one row per line item ever created, keyed by the line item's id, written in
the same unit of work as the line item (``services.subscription_lines`` is its only writer).
"""

from __future__ import annotations

from billingkit.domain.resources import EnvironmentResource

__all__ = ["LineItemOwner"]


class LineItemOwner(EnvironmentResource):
    """Line item ``id`` belongs to subscription ``subscription_id``."""

    subscription_id: str
