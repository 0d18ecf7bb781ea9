"""The ``checkout`` parameters of a payment-gated request (the reference's ``CheckoutParams``):
which provider takes the money, how, where the payer's browser goes afterwards, and the session's
idempotency key and lifetime.

They ride on ``POST /checkout/sessions`` and on the pay-first flows (``checkout`` of subscription
create, wallet top-up, modify execute and add-on attach); an absent, null or empty (``{}``)
``checkout`` means "no checkout".
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field

from billingkit.domain.payments import PaymentMethodType
from billingkit.domain.subscriptions import CollectionMethod
from billingkit.domain.validation import MAX_TEXT, DecimalText, InputModel, Key, Metadata, UtcDatetime

__all__ = ["CheckoutParams", "CheckoutRequest", "ProviderConfig"]

Url = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]


class ProviderConfig(InputModel):
    """The reference's ``CheckoutPaymentProviderConfig``: ``collection_method``
    (``send_invoice``, the default: the customer pays a payment link; ``charge_automatically``:
    the customer registers a recurring-payment mandate while paying), ``payment_method``
    (``CARD``, ``UPI``...: what the provider offers) and ``max_mandate_limit`` (the most one
    later automatic charge may take; default: the first invoice's amount)."""

    ignored: ClassVar[frozenset[str]] = frozenset({"customer_not_present"})

    collection_method: CollectionMethod = CollectionMethod.SEND_INVOICE
    payment_method: PaymentMethodType | None = None
    max_mandate_limit: DecimalText | None = None
    customer_not_present: bool | None = None


class CheckoutParams(InputModel):
    """How a payment-gated request is paid. ``payment_provider``: ``sandbox`` or ``razorpay``
    (default: ``sandbox`` in a development environment, ``razorpay`` otherwise).
    ``expires_at``: when the session ends unpaid (default: 15 minutes for Razorpay, 30 for the
    sandbox; a provider link that expires sooner moves it earlier). ``idempotency_key``: unique
    among the environment's open sessions (another open session with it is a 409)."""

    payment_provider: Key | None = None
    payment_provider_config: ProviderConfig | None = None
    success_url: Url | None = None
    cancel_url: Url | None = None
    failure_url: Url | None = None
    idempotency_key: Key | None = None
    expires_at: UtcDatetime | None = None
    metadata: Metadata = {}


def _empty_is_none(value: Any) -> Any:
    return None if value in ({}, "") else value


#: ``checkout`` on a request: the parameters, or ``None`` for null, absent or ``{}``.
CheckoutRequest = Annotated[CheckoutParams | None, BeforeValidator(_empty_is_none)]
