"""Answers of ``/v1/payments``: a payment of an invoice, with its attempts."""

from __future__ import annotations

from billingkit.domain.invoices import PaymentStatus
from billingkit.domain.payments import PaymentDestinationType, PaymentMethodType
from billingkit.http.schemas.base import (
    DecimalString,
    EnvironmentRecordResponse,
    PaginationResponse,
    Timestamp,
    WireModel,
)

__all__ = ["ListPaymentsResponse", "PaymentAttemptResponse", "PaymentResponse"]


class PaymentAttemptResponse(WireModel):
    """One try at collecting payment ``payment_id``: its number (from 1), what came of it, and the
    provider's id for it (``gateway_attempt_id``)."""

    id: str
    attempt_number: int
    payment_status: PaymentStatus
    error_message: str | None
    gateway_attempt_id: str | None
    created_at: Timestamp
    metadata: dict[str, str]
    payment_id: str
    tenant_id: str


class PaymentResponse(EnvironmentRecordResponse):
    """``amount`` of ``currency`` paid (or being paid) to invoice ``destination_id`` by
    ``payment_method_type``; ``payment_url`` is where the customer pays a PENDING provider payment."""

    idempotency_key: str
    destination_type: PaymentDestinationType
    destination_id: str
    invoice_number: str | None
    customer_id: str | None
    payment_method_type: PaymentMethodType
    payment_method_id: str | None
    payment_gateway: str | None
    gateway_payment_id: str | None
    gateway_tracking_id: str | None
    gateway_metadata: dict[str, str]
    payment_url: str | None
    amount: DecimalString
    currency: str
    payment_status: PaymentStatus
    track_attempts: bool
    save_card_and_make_default: bool
    error_message: str | None
    succeeded_at: Timestamp | None
    failed_at: Timestamp | None
    refunded_at: Timestamp | None
    voided_at: Timestamp | None
    attempts: list[PaymentAttemptResponse]
    metadata: dict[str, str]
    version: int


class ListPaymentsResponse(WireModel):
    items: list[PaymentResponse]
    pagination: PaginationResponse
