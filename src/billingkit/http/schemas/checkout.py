"""The checkout session answer (the reference's ``CheckoutSessionResponse``), on its own so that
the subscription answers can embed it."""

from __future__ import annotations

from typing import Any

from billingkit.domain.checkout_sessions import CheckoutAction, CheckoutStatus
from billingkit.http.schemas.base import EnvironmentRecordResponse, Timestamp, WireModel

__all__ = ["CheckoutSessionResponse", "PaymentActionResponse"]


class PaymentActionResponse(WireModel):
    """Where the customer pays: ``type`` ``checkout_url`` and the ``url`` to send them to."""

    type: str
    url: str


class CheckoutSessionResponse(EnvironmentRecordResponse):
    """A checkout session: ``checkout_status`` ``initiated`` → ``pending`` (the customer pays at
    ``payment_action.url``) → ``completed`` (``result``, ``checkout_invoice_id`` and
    ``checkout_payment_id`` set), ``failed`` (``failure_reason``) or ``expired`` (past
    ``expires_at`` unpaid). ``configuration`` holds the action's parameters."""

    customer_id: str
    action: CheckoutAction
    checkout_status: CheckoutStatus
    expires_at: Timestamp
    idempotency_key: str | None
    failure_reason: str | None
    success_url: str | None
    cancel_url: str | None
    failure_url: str | None
    completed_at: Timestamp | None
    cancelled_at: Timestamp | None
    checkout_invoice_id: str | None
    checkout_payment_id: str | None
    payment_provider: str
    payment_provider_config: dict[str, Any]
    payment_action: PaymentActionResponse | None
    provider_result: dict[str, Any]
    configuration: dict[str, Any]
    result: dict[str, Any]
    metadata: dict[str, str]
