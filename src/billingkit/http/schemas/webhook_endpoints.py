"""Answers of the ``/webhooks`` routes: endpoints (the secret only in the create and rotate
answers), deliveries with their attempts, and replays."""

from __future__ import annotations

from billingkit.domain.webhooks import DeliveryStatus
from billingkit.http.schemas.base import EnvironmentRecordResponse, PaginationResponse, Timestamp, WireModel

__all__ = [
    "DeliveryAttemptResponse",
    "ListWebhookDeliveriesResponse",
    "ListWebhookEndpointsResponse",
    "ReplayResponse",
    "WebhookDeliveryResponse",
    "WebhookEndpointResponse",
    "WebhookEndpointSecretResponse",
]


class WebhookEndpointResponse(EnvironmentRecordResponse):
    """A receiver: ``event_types`` empty means every type. ``failure_streak``: its deliveries
    that failed in a row; ``disabled_reason`` says why the dispatcher disabled it."""

    url: str
    description: str | None
    enabled: bool
    event_types: list[str]
    headers: dict[str, str]
    failure_streak: int
    disabled_reason: str | None


class WebhookEndpointSecretResponse(WebhookEndpointResponse):
    """The endpoint and its signing ``secret`` (``whsec_...``): shown by create and rotate-secret
    only; keep it, it cannot be read again."""

    secret: str


class ListWebhookEndpointsResponse(WireModel):
    items: list[WebhookEndpointResponse]
    pagination: PaginationResponse


class DeliveryAttemptResponse(WireModel):
    """One attempt: when, the receiver's status code (null: no answer, see ``error``), and how
    long it took."""

    at: Timestamp
    response_code: int | None
    latency_ms: int
    error: str | None


class WebhookDeliveryResponse(EnvironmentRecordResponse):
    """Event ``event_id`` bound for endpoint ``endpoint_id``: ``pending`` (next attempt at
    ``next_attempt_at``), ``delivered`` or ``failed``; the last attempt's ``response_code``,
    ``latency_ms`` and ``error``, and every attempt in ``attempts``. The ``webhook-id`` header of
    its requests is ``event_id``."""

    endpoint_id: str
    event_id: str
    event_type: str
    entity_type: str
    entity_id: str
    delivery_status: DeliveryStatus
    next_attempt_at: Timestamp | None
    attempt_count: int
    response_code: int | None
    latency_ms: int | None
    error: str | None
    delivered_at: Timestamp | None
    attempts: list[DeliveryAttemptResponse]


class ListWebhookDeliveriesResponse(WireModel):
    items: list[WebhookDeliveryResponse]
    pagination: PaginationResponse


class ReplayResponse(WireModel):
    """The deliveries a replay made, due now."""

    deliveries: list[WebhookDeliveryResponse]
    count: int
