"""Webhook endpoints and deliveries (docs/webhooks.md).

An endpoint is a receiver URL of one environment with the event types it wants (empty: all), the
static headers sent with each delivery, and its signing secret, stored encrypted
(``secret_ciphertext``; see :mod:`billingkit.services.webhook_secrets`). A delivery is one event
bound for one endpoint: ``pending`` until the receiver answers 2xx (``delivered``) or the attempts
run out (``failed``). ``next_attempt_at`` is when the dispatcher next sends it (``None`` once it is
final); while a dispatcher holds it, it is the end of that dispatcher's lease. Every attempt is
kept in ``attempts``.

The Standard Webhooks ``webhook-id`` of a delivery is its event's id (``message_id``): the same on
every attempt, every retry and every replay, so receivers deduplicate by it.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import Field

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime

__all__ = ["DeliveryStatus", "WebhookDelivery", "WebhookEndpoint", "attempt_record", "retry_delay"]


#: The keys of one attempt in :attr:`WebhookDelivery.attempts`, in wire order.
ATTEMPT_KEYS = ("at", "response_code", "latency_ms", "error")


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookEndpoint(EnvironmentResource):
    """A receiver: ``url`` gets every event of ``event_types`` (empty: every type) recorded from
    its creation on, while ``enabled``. ``failure_streak`` counts its deliveries that failed in a
    row (a delivered one resets it); the dispatcher disables the endpoint when it reaches
    ``Settings.webhook_disable_after`` and says why in ``disabled_reason``."""

    url: str
    description: str | None = None
    enabled: bool = True
    event_types: list[str] = []
    headers: dict[str, str] = {}
    secret_ciphertext: str = Field(repr=False)
    failure_streak: int = 0
    disabled_reason: str | None = None

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"<WebhookEndpoint {self.id} {state} {self.url}>"

    def wants(self, event_type: str) -> bool:
        """True when this endpoint subscribes to ``event_type``."""
        return not self.event_types or event_type in self.event_types

    def to_dict(self) -> dict[str, Any]:
        """The wire form: never the secret (the create and rotate answers add it once)."""
        return self.model_dump(mode="json", exclude={"secret_ciphertext"})


class WebhookDelivery(EnvironmentResource):
    """Event ``event_id`` (``event_type``, about ``entity_type`` ``entity_id``) bound for endpoint
    ``endpoint_id``. ``attempt_count`` attempts made so far; the last one's ``response_code``
    (``None``: no answer), ``latency_ms`` and ``error``; ``attempts`` lists them all, oldest first,
    as ``{"at", "response_code", "latency_ms", "error"}``."""

    endpoint_id: str
    event_id: str
    event_type: str
    entity_type: str
    entity_id: str
    delivery_status: DeliveryStatus = DeliveryStatus.PENDING
    next_attempt_at: UtcDatetime | None = None
    attempt_count: int = 0
    response_code: int | None = None
    latency_ms: int | None = None
    error: str | None = None
    delivered_at: UtcDatetime | None = None
    attempts: list[dict[str, Any]] = []

    @property
    def message_id(self) -> str:
        """The ``webhook-id`` header: the event's id, stable across attempts and replays."""
        return self.event_id

    def __repr__(self) -> str:
        state = self.delivery_status.value
        return f"<WebhookDelivery {self.id} {state} {self.event_type} -> {self.endpoint_id}>"

    def to_dict(self) -> dict[str, Any]:
        """The wire form; each attempt's keys in one order whatever the store kept (PostgreSQL's
        JSONB reorders them)."""
        data = self.model_dump(mode="json")
        data["attempts"] = [{key: attempt.get(key) for key in ATTEMPT_KEYS} for attempt in self.attempts]
        return data


def retry_delay(
    failures: int, *, base: timedelta, cap: timedelta, rng: random.Random | None = None
) -> timedelta:
    """How long to wait after the ``failures``-th failed attempt: ``base`` doubled per earlier
    failure, at most ``cap``, then jittered to a uniform point in its upper half (so receivers
    that come back are not hit by every sender at the same instant, and the wait never shrinks
    below half the schedule)."""
    seconds = base.total_seconds() * 2.0 ** min(max(failures - 1, 0), 64)  # 2**64: past any cap
    exact: timedelta = timedelta(seconds=min(seconds, cap.total_seconds()))
    share: float = (rng or random).uniform(0.5, 1.0)
    waited: timedelta = exact * share
    return waited


def attempt_record(
    at: datetime, response_code: int | None, latency_ms: float, error: str | None
) -> dict[str, Any]:
    """One entry of :attr:`WebhookDelivery.attempts`."""
    return {
        "at": at.isoformat().replace("+00:00", "Z"),
        "response_code": response_code,
        "latency_ms": round(latency_ms),
        "error": error,
    }
