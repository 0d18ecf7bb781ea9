"""A payment recorded against an invoice, as stored, with its attempts.

A payment moves an invoice's ``amount_paid`` only when it succeeds. Its ``idempotency_key`` is unique
in the environment (archived payments keep theirs), so one request recorded twice is one payment;
the key derives from the invoice, the amount, the payment method and the intent (spec rule 4) unless
the caller names one. ``attempts`` lists each try at collecting it (a provider charge, a retry).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from billingkit.domain.invoices import PaymentStatus
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import DecimalText, UtcDatetime

__all__ = ["Payment", "PaymentAttempt", "PaymentDestinationType", "PaymentMethodType"]


class PaymentMethodType(StrEnum):
    """How the money comes: ``OFFLINE`` (bank transfer, cash, check: recorded by hand),
    ``CREDITS`` (a wallet: ``payment_method_id`` is its id), or through a payment provider
    (``CARD``, ``ACH``, ``PAYMENT_LINK``, ``UPI``)."""

    CARD = "CARD"
    ACH = "ACH"
    OFFLINE = "OFFLINE"
    CREDITS = "CREDITS"
    PAYMENT_LINK = "PAYMENT_LINK"
    UPI = "UPI"


class PaymentDestinationType(StrEnum):
    INVOICE = "INVOICE"
    CUSTOMER = "CUSTOMER"


class PaymentAttempt(BaseModel):
    """One try at collecting a payment: its number (from 1), what came of it and when."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    attempt_number: int
    payment_status: PaymentStatus
    error_message: str | None = None
    gateway_attempt_id: str | None = None
    created_at: UtcDatetime
    metadata: dict[str, str] = {}


class Payment(EnvironmentResource):
    """``amount`` of ``currency`` paid (or being paid) to ``destination_id`` (an invoice)."""

    idempotency_key: str
    destination_type: PaymentDestinationType = PaymentDestinationType.INVOICE
    destination_id: str
    invoice_number: str | None = None
    customer_id: str | None = None
    payment_method_type: PaymentMethodType
    payment_method_id: str | None = None
    payment_gateway: str | None = None
    gateway_payment_id: str | None = None
    gateway_tracking_id: str | None = None
    gateway_metadata: dict[str, str] = {}
    payment_url: str | None = None
    amount: DecimalText
    currency: str
    payment_status: PaymentStatus = PaymentStatus.INITIATED
    track_attempts: bool = False
    save_card_and_make_default: bool = False
    error_message: str | None = None
    succeeded_at: UtcDatetime | None = None
    failed_at: UtcDatetime | None = None
    refunded_at: UtcDatetime | None = None
    voided_at: UtcDatetime | None = None
    attempts: tuple[PaymentAttempt, ...] = ()
    metadata: dict[str, str] = {}
    version: int = 1
    #: Internal, not on the wire: the digest of the request the payment was created with
    #: (:func:`billingkit.domain.payment_rules.payment_fingerprint`), so a key named again with
    #: another request is told apart from a retry.
    request_fingerprint: str | None = None

    def __repr__(self) -> str:
        return (
            f"<Payment {self.id} {self.amount} {self.currency} {self.payment_method_type.value} "
            f"{self.payment_status.value} -> {self.destination_id}>"
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form (the reference's ``PaymentResponse``); each attempt names its payment."""
        data = self.model_dump(mode="json", exclude={"request_fingerprint"})
        data["attempts"] = [
            {**attempt, "payment_id": self.id, "tenant_id": self.tenant_id} for attempt in data["attempts"]
        ]
        return data
