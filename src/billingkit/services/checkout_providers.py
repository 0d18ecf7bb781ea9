"""Where a checkout session's customer pays: the sandbox page, or a provider's payment link.

- ``sandbox`` (the default in development environments; refused in production ones, where it
  would complete sessions without money): the customer pays on billingkit's own page
  ``GET /v1/checkout/sandbox/{session_id}`` (``Settings.public_url`` in front when set); its Pay
  and Decline buttons complete the session as a provider's webhook would. Nothing is asked of any
  outside party.
- ``razorpay`` (the default in production environments): the environment's Razorpay account
  (``Providers.for_environment``) opens a payment link for the first invoice's amount, expiring
  with the session (``expire_by``) and sending the payer back to ``success_url``. The link's notes
  carry the session id, so its webhook finds the session. With ``collection_method:
  charge_automatically`` it opens a registration link instead (:func:`mandate_terms`): the
  customer pays the same amount and registers a recurring-payment mandate of at most
  ``max_mandate_limit`` (default: that amount; through UPI at most :data:`UPI_MANDATE_CAP`).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.access import EnvironmentType
from billingkit.domain.checkout_sessions import CheckoutSession, PaymentActionType
from billingkit.domain.gateways import PaymentRequest, ProviderPayment, ProviderPaymentStatus
from billingkit.domain.payments import PaymentMethodType
from billingkit.domain.resources import iso
from billingkit.domain.subscriptions import CollectionMethod
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import MandateProvider, PaymentProvider, UnitOfWork
from billingkit.services.checkout_requests import ProviderConfig
from billingkit.services.context import Context

__all__ = [
    "SANDBOX",
    "UPI_MANDATE_CAP",
    "Mandate",
    "ProviderStart",
    "checkout_provider",
    "default_provider",
    "mandate_terms",
    "sandbox_path",
    "start_payment",
]

SANDBOX = "sandbox"
RAZORPAY = "razorpay"
#: Checkout providers billingkit knows; a request naming another is a 400.
KNOWN_PROVIDERS = (SANDBOX, RAZORPAY)
#: The note that names the session on everything a provider makes for it.
SESSION_NOTE = "checkout_session_id"
#: The most a UPI mandate may take per automatic charge without the payer authorising it again
#: (NPCI's UPI Autopay limit, as Razorpay documents it: 15,000 INR).
UPI_MANDATE_CAP = Decimal("15000")
#: billingkit's payment method -> Razorpay's registration method (default: card).
MANDATE_METHODS = {
    PaymentMethodType.CARD: "card",
    PaymentMethodType.UPI: "upi",
    PaymentMethodType.ACH: "emandate",
}


@dataclass(frozen=True, slots=True)
class Mandate:
    """A recurring-payment mandate to register while paying: its ``method`` (the provider's word)
    and the most one later charge may take."""

    method: str
    max_amount: Decimal


def mandate_terms(config: ProviderConfig | None, amount: Decimal) -> Mandate | None:
    """The mandate ``config`` asks for when the customer pays ``amount`` (``None`` for
    ``send_invoice``). ``max_mandate_limit`` defaults to ``amount``; a UPI mandate is capped at
    :data:`UPI_MANDATE_CAP`. ``ValidationError`` on ``payment_provider_config.*`` for a method
    that registers no mandate, or a limit below ``amount`` (the first payment must fit)."""
    if config is None or config.collection_method is not CollectionMethod.CHARGE_AUTOMATICALLY:
        return None
    kind = config.payment_method or PaymentMethodType.CARD
    method = MANDATE_METHODS.get(kind)
    if method is None:
        raise ValidationError(
            f"a mandate is registered through {', '.join(MANDATE_METHODS)}, not {kind.value}",
            field="payment_provider_config.payment_method",
        )
    limit = config.max_mandate_limit if config.max_mandate_limit is not None else amount
    if kind is PaymentMethodType.UPI:
        limit = min(limit, UPI_MANDATE_CAP)
    if limit < amount:
        raise ValidationError(
            f"max_mandate_limit {limit} is below the first payment of {amount}"
            + (f" (UPI mandates take at most {UPI_MANDATE_CAP})" if kind is PaymentMethodType.UPI else ""),
            field="payment_provider_config.max_mandate_limit",
        )
    return Mandate(method, limit)


@dataclass(frozen=True, slots=True)
class ProviderStart:
    """What starting the payment gave: where the customer pays, the provider's id for it, the
    provider's own expiry (``None``: it has none) and its ``provider_result``."""

    payment_action: dict[str, Any]
    provider_session_id: str
    expires_at: datetime | None
    provider_result: dict[str, Any]


def _environment_type(uow: UnitOfWork, ctx: Context) -> EnvironmentType:
    environment = uow.environments.find(ctx.env)
    return environment.type if environment is not None else EnvironmentType.DEVELOPMENT


def default_provider(uow: UnitOfWork, ctx: Context) -> str:
    """``sandbox`` in a development environment, ``razorpay`` in any other."""
    return SANDBOX if _environment_type(uow, ctx) is EnvironmentType.DEVELOPMENT else RAZORPAY


def checkout_provider(uow: UnitOfWork, ctx: Context, name: str) -> PaymentProvider | None:
    """Check that this environment may take checkout payments through ``name``: the provider
    object for a real provider, ``None`` for the sandbox. ``ValidationError`` on
    ``payment_provider`` for an unknown provider, the sandbox in a production environment, or a
    provider this environment has no credentials for."""
    if name not in KNOWN_PROVIDERS:
        raise ValidationError(
            f"payment_provider is one of {', '.join(KNOWN_PROVIDERS)}, not {name!r}", field="payment_provider"
        )
    if name == SANDBOX:
        if _environment_type(uow, ctx) is not EnvironmentType.DEVELOPMENT:
            raise ValidationError(
                "the sandbox takes no money: it serves development environments only",
                field="payment_provider",
            )
        return None
    provider = ctx.providers.for_environment(ctx.env, name)
    if provider is None:
        raise ValidationError(
            f"payment provider {name} is not configured for this environment", field="payment_provider"
        )
    return provider


def sandbox_path(session: CheckoutSession) -> str:
    """The sandbox page of ``session``: its path, with the scope in the query (the page is public,
    so the scope cannot come from an API key)."""
    query = urllib.parse.urlencode({"tenant_id": session.tenant_id, "environment_id": session.environment_id})
    return f"/v1/checkout/sandbox/{urllib.parse.quote(session.id, safe='')}?{query}"


def start_payment(
    ctx: Context,
    session: CheckoutSession,
    provider: PaymentProvider | None,
    *,
    amount: Decimal,
    currency: str,
    description: str,
    mandate: Mandate | None = None,
    customer: dict[str, str] | None = None,
) -> ProviderStart:
    """Open the place where ``session``'s customer pays ``amount`` ``currency``: with ``mandate``
    a registration link (the provider must be a ``MandateProvider``; ``customer`` holds the
    payer's ``name``/``email``/``contact`` it asks for). A provider that answers with anything
    but a pending payment (it refused the link) is ``InvalidOperation``."""
    if provider is None:
        base = (ctx.settings.public_url or "").rstrip("/")
        url = base + sandbox_path(session)
        action = {"type": PaymentActionType.CHECKOUT_URL.value, "url": url}
        provider_id = f"sbx_{session.id}"
        result: dict[str, Any] = {
            "provider_session_id": provider_id,
            "next_action": action,
            "provider_metadata": {},
        }
        return ProviderStart(action, provider_id, None, result)
    notes = {SESSION_NOTE: session.id, "tenant_id": session.tenant_id, "environment_id": ctx.env}
    request = PaymentRequest(
        idempotency_key=f"checkout_{session.id}",
        amount=amount,
        currency=currency,
        customer_id=session.customer_id,
        description=description,
        metadata={**notes, **(customer or {})} if mandate else notes,
        expires_at=session.expires_at,
        callback_url=session.success_url,
    )
    answer = _ask(provider, request, mandate)
    if answer.status is not ProviderPaymentStatus.PENDING or not answer.checkout_url:
        raise InvalidOperation(
            f"{provider.name} did not open a payment link: the payment is {answer.status.value}"
            + (f" ({answer.failure_reason})" if answer.failure_reason else "")
        )
    action = {"type": PaymentActionType.CHECKOUT_URL.value, "url": answer.checkout_url}
    result = {
        "provider_session_id": answer.provider_payment_id,
        "next_action": action,
        "expires_at": iso(answer.expires_at),
        "provider_metadata": {},
    }
    if mandate is not None:
        result["provider_metadata"] = {
            "mandate_method": mandate.method,
            "max_mandate_limit": str(mandate.max_amount),
        }
    return ProviderStart(action, answer.provider_payment_id, answer.expires_at, result)


def _ask(provider: PaymentProvider, request: PaymentRequest, mandate: Mandate | None) -> ProviderPayment:
    if mandate is None:
        return provider.create_payment(request)
    if not isinstance(provider, MandateProvider):
        raise ValidationError(
            f"{provider.name} registers no recurring-payment mandate: use collection_method send_invoice",
            field="payment_provider_config.collection_method",
        )
    return provider.create_mandate_link(request, max_amount=mandate.max_amount, method=mandate.method)
