"""Where a checkout session's customer pays: the sandbox page, or a provider's payment link.

- ``sandbox`` (the default in development environments; refused in production ones, where it
  would complete sessions without money): the customer pays on billingkit's own page
  ``GET /v1/checkout/sandbox/{session_id}`` (``Settings.public_url`` in front when set); its Pay
  and Decline buttons complete the session as a provider's webhook would. Nothing is asked of any
  outside party.
- ``razorpay`` (the default in production environments): the environment's Razorpay account
  (``Providers.for_environment``) opens a payment link for the first invoice's amount, expiring
  with the session (``expire_by``) and sending the payer back to ``success_url``. The link's notes
  carry the session id, so its webhook finds the session.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.access import EnvironmentType
from billingkit.domain.checkout_sessions import CheckoutSession, PaymentActionType
from billingkit.domain.gateways import PaymentRequest, ProviderPaymentStatus
from billingkit.domain.resources import iso
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import PaymentProvider, UnitOfWork
from billingkit.services.context import Context

__all__ = [
    "SANDBOX",
    "ProviderStart",
    "checkout_provider",
    "default_provider",
    "sandbox_path",
    "start_payment",
]

SANDBOX = "sandbox"
RAZORPAY = "razorpay"
#: Checkout providers billingkit knows; a request naming another is a 400.
KNOWN_PROVIDERS = (SANDBOX, RAZORPAY)
#: The note that names the session on everything a provider makes for it.
SESSION_NOTE = "checkout_session_id"


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
) -> ProviderStart:
    """Open the place where ``session``'s customer pays ``amount`` ``currency``. A provider that
    answers with anything but a pending payment (it refused the link) is ``InvalidOperation``."""
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
    answer = provider.create_payment(
        PaymentRequest(
            idempotency_key=f"checkout_{session.id}",
            amount=amount,
            currency=currency,
            customer_id=session.customer_id,
            description=description,
            metadata={SESSION_NOTE: session.id, "tenant_id": session.tenant_id, "environment_id": ctx.env},
            expires_at=session.expires_at,
            callback_url=session.success_url,
        )
    )
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
    return ProviderStart(action, answer.provider_payment_id, answer.expires_at, result)
