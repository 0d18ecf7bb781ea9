"""What billingkit asks of the outside parties it talks to, and what they answer.

A payment provider (``ports.PaymentProvider``) takes a :class:`PaymentRequest` and answers with a
:class:`ProviderPayment`; a webhook transport (``ports.WebhookTransport``) sends one
:class:`WebhookRequest` and answers with a :class:`DeliveryResult`. These are values only: services
build the requests (and sign webhook requests), adapters speak the outside party's wire format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum

from billingkit.errors import ValidationError

__all__ = [
    "DeliveryResult",
    "PaymentRequest",
    "ProviderPayment",
    "ProviderPaymentStatus",
    "ProviderRefund",
    "RefundRequest",
    "WebhookRequest",
]


class ProviderPaymentStatus(StrEnum):
    """Where a payment stands at the provider."""

    PENDING = "pending"  # waiting for the customer (a checkout URL) or for the provider
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class PaymentRequest:
    """Ask a provider for ``amount`` (currency units, e.g. ``Decimal("12.50")`` usd) from a
    customer. With ``payment_method_id`` the stored method is charged at once; without one the
    customer is asked to pay (the answer carries a checkout URL). ``idempotency_key`` names the
    payment: asking again with the same key answers with the same payment and never charges twice
    (the spec derives it from the tenant, the payment method and the intent)."""

    idempotency_key: str
    amount: Decimal
    currency: str
    customer_id: str
    payment_method_id: str | None = None
    description: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    #: For a payment the customer is asked to make (no method): when the place to pay should stop
    #: taking money (``None``: the provider's default), and where the payer's browser goes after.
    expires_at: datetime | None = None
    callback_url: str | None = None

    def __post_init__(self) -> None:
        if not self.idempotency_key:
            raise ValidationError("a payment needs an idempotency key", field="idempotency_key")
        if not isinstance(self.amount, Decimal) or not self.amount.is_finite() or self.amount <= 0:
            raise ValidationError(
                f"a payment amount is a positive Decimal, not {self.amount!r}", field="amount"
            )
        if len(self.currency) != 3 or not self.currency.isalpha():
            raise ValidationError(f"currency is a 3-letter code, not {self.currency!r}", field="currency")


@dataclass(frozen=True, slots=True)
class ProviderPayment:
    """A payment as the provider sees it. ``checkout_url`` is where the customer pays a pending
    payment; ``failure_reason`` says why a failed one failed (the provider's words)."""

    provider: str
    provider_payment_id: str
    idempotency_key: str
    status: ProviderPaymentStatus
    amount: Decimal
    currency: str
    checkout_url: str | None = None
    failure_reason: str | None = None
    #: When ``checkout_url`` stops taking money, if the provider says (a link's expiry).
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class RefundRequest:
    """Give back ``amount`` (currency units, at most what the payment took less earlier refunds)
    of the provider's payment ``provider_payment_id`` to the method it was paid with.
    ``idempotency_key`` names the refund: asking again with the same key answers with the same
    refund and never refunds twice (a credit note's refund uses the note's id)."""

    idempotency_key: str
    provider_payment_id: str
    amount: Decimal
    currency: str
    reason: str = ""

    def __post_init__(self) -> None:
        if not self.idempotency_key:
            raise ValidationError("a refund needs an idempotency key", field="idempotency_key")
        if not isinstance(self.amount, Decimal) or not self.amount.is_finite() or self.amount <= 0:
            raise ValidationError(
                f"a refund amount is a positive Decimal, not {self.amount!r}", field="amount"
            )


@dataclass(frozen=True, slots=True)
class ProviderRefund:
    """A refund as the provider sees it (``status`` as a payment's: pending, succeeded, failed)."""

    provider: str
    provider_refund_id: str
    provider_payment_id: str
    idempotency_key: str
    status: ProviderPaymentStatus
    amount: Decimal
    currency: str
    failure_reason: str | None = None


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    """One delivery attempt: POST ``body`` to ``url`` with ``headers`` (the caller has set the
    Standard Webhooks ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature``), giving up
    after ``timeout`` seconds."""

    url: str
    body: bytes
    headers: Mapping[str, str]
    timeout: float = 10.0


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """What a receiver answered: its HTTP ``status_code``, or ``None`` with ``error`` saying why no
    answer came (refused, timed out), and how many seconds it took (``elapsed``). Only a 2xx
    answer is a delivery; anything else is retried."""

    status_code: int | None
    error: str | None = None
    elapsed: float = 0.0

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
