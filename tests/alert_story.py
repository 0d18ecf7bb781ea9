"""The story the alert tests start from: a customer on a monthly plan whose only price is usage.

Meter ``llm.tokens`` (SUM of ``tokens``), feature ``tokens`` in group ``ai``, plan ``Usage``:
1.00 usd per token, billed in arrear; feature ``calls`` (meter ``api.call``, SUM of ``tokens``,
not priced) with a 1,000 calls a month entitlement. Customer ``ada``
subscribes at the clock's instant (2026-05-01 09:30 UTC in the tests); her period ends a month later.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from billingkit import Scoped, Subscription
from billingkit.domain.notifications import NotificationEvent


@dataclass
class AlertStory:
    scoped: Scoped
    meter_id: str
    feature_id: str
    group_id: str
    entitlement_id: str
    customer_id: str
    subscription: Subscription

    @property
    def line_item_id(self) -> str:
        return self.subscription.line_items[0].id

    def use(
        self,
        tokens: int,
        at: datetime,
        *,
        immediately: bool = False,
        n: int = 0,
        event_name: str = "llm.tokens",
    ) -> None:
        """Ingest one event of ``tokens`` for ada at ``at`` (``api.call``: calls)."""
        self.scoped.events.ingest_bulk(
            [
                {
                    "event_id": f"evt-{event_name}-{at.isoformat()}-{tokens}-{n}",
                    "event_name": event_name,
                    "external_customer_id": "ada",
                    "timestamp": at,
                    "properties": {"tokens": tokens},
                }
            ],
            evaluate_alerts_immediately=immediately,
        )


def build_story(scoped: Scoped, *, external_id: str = "ada") -> AlertStory:
    meter = scoped.meters.create(
        name="Tokens", event_name="llm.tokens", aggregation={"type": "SUM", "field": "tokens"}
    )
    calls = scoped.meters.create(
        name="Calls", event_name="api.call", aggregation={"type": "SUM", "field": "tokens"}
    )
    calls_feature = scoped.features.create(
        name="Calls", type="metered", meter_id=calls.id, lookup_key="calls"
    )
    group = scoped.groups.create(name="AI", lookup_key="ai", entity_type="feature").group
    feature = scoped.features.create(
        name="Tokens", type="metered", meter_id=meter.id, lookup_key="tokens", group_id=group.id
    )
    plan = scoped.plans.create(
        name="Usage",
        prices=[
            {
                "type": "USAGE",
                "billing_model": "FLAT_FEE",
                "amount": "1.00",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ARREAR",
                "meter_id": meter.id,
            }
        ],
        entitlements=[{"feature_id": calls_feature.id, "usage_limit": 1000, "usage_reset_period": "MONTHLY"}],
    )
    (entitlement,) = scoped.plans.entitlements(plan.id)
    customer = scoped.customers.create(external_id=external_id, name=external_id.title())
    sub = scoped.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    return AlertStory(scoped, meter.id, feature.id, group.id, entitlement.id, customer.id, sub)


def critical_at(threshold: str, condition: str = "above", **more: Any) -> dict[str, Any]:
    """A config with one critical threshold."""
    return {"critical": {"threshold": threshold, "condition": condition}, **more}


class Inbox:
    """Every notification delivered to in-process subscribers."""

    def __init__(self) -> None:
        self.events: list[NotificationEvent] = []

    def __call__(self, event: NotificationEvent) -> None:
        self.events.append(event)

    def of(self, event_type: str) -> list[NotificationEvent]:
        return [e for e in self.events if e.event_type == event_type]
