"""The answer of ``POST /plans/{id}/sync/subscriptions``."""

from __future__ import annotations

from billingkit.http.schemas.base import WireModel

__all__ = ["PlanPriceSyncResponse"]


class PlanPriceSyncResponse(WireModel):
    """The reference's ``models.TemporalWorkflowResult`` (``workflow_id``, ``run_id``,
    ``message``) and what the sync did: billingkit's sync has finished when this answers, so the
    counts are final. ``price_sequence`` is the plan's highest price sequence when the sync
    started; every subscription it read is synced at least that far."""

    workflow_id: str
    run_id: str
    message: str
    plan_id: str
    price_sequence: int
    subscriptions_checked: int
    subscriptions_updated: int
    line_items_added: int
    line_items_ended: int
