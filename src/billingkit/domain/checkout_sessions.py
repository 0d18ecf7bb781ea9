"""Checkout sessions (reference notes §8): an action (create a subscription, change its quantities,
top up a wallet, add an add-on) that is carried out only once a payment provider confirms the
money.

A session is ``initiated`` while it is being set up, ``pending`` once the customer has a place to
pay (``payment_action``), and ends ``completed`` (the action was applied), ``failed`` (declined,
cancelled, or the provider's link expired) or ``expired`` (``expires_at`` passed while still
open). A terminal session never moves again.

Besides the spec's fields, a session keeps what billingkit needs to find and finish it, hidden
from the wire form (:meth:`CheckoutSession.to_dict`): ``open_key`` (the idempotency key while the
session is open, so the key is unique among open sessions only), ``open_wallet_id`` (one open
top-up per wallet), ``run_at`` (when the worker expires it; cleared once terminal),
``provider_session_id`` (the provider's link or registration id, searchable for webhooks), and
the draft records it made (``subscription_id``, ``invoice_id``, ``payment_id``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from billingkit.domain.resources import EnvironmentResource, iso
from billingkit.domain.validation import UtcDatetime

__all__ = [
    "OPEN_STATUSES",
    "CheckoutAction",
    "CheckoutSession",
    "CheckoutStatus",
    "PaymentActionType",
    "checkout_session_payload",
    "default_lifetime",
    "session_expiry",
]


class CheckoutAction(StrEnum):
    CREATE_SUBSCRIPTION = "create_subscription"
    MODIFY_SUBSCRIPTION = "modify_subscription"
    WALLET_TOPUP = "wallet_topup"
    ADD_ADDON = "add_addon"


class CheckoutStatus(StrEnum):
    INITIATED = "initiated"
    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"


class PaymentActionType(StrEnum):
    CHECKOUT_URL = "checkout_url"
    PAYMENT_LINK = "payment_link"


#: The statuses in which a session may still be paid (its key and wallet are held).
OPEN_STATUSES = frozenset({CheckoutStatus.INITIATED, CheckoutStatus.PENDING})

#: A session's lifetime when the request names no ``expires_at`` (reference notes §8): Razorpay's
#: links live 15 minutes, other providers' (the sandbox) 30.
RAZORPAY_LIFETIME = timedelta(minutes=15)
OTHER_LIFETIME = timedelta(minutes=30)


def default_lifetime(provider: str) -> timedelta:
    """How long a session of ``provider`` stays open when the caller names no ``expires_at``."""
    return RAZORPAY_LIFETIME if provider == "razorpay" else OTHER_LIFETIME


def session_expiry(requested: datetime, provider_expiry: datetime | None) -> datetime:
    """When a session expires: the requested instant, or the provider's link expiry when that
    comes sooner. Example: requested 12:30, the link expires 12:20 → 12:20."""
    if provider_expiry is not None and provider_expiry < requested:
        return provider_expiry
    return requested


#: Fields a session keeps for billingkit only (see the module doc); never on the wire.
INTERNAL_FIELDS = frozenset(
    {
        "open_key",
        "open_wallet_id",
        "run_at",
        "provider_session_id",
        "subscription_id",
        "invoice_id",
        "payment_id",
        "version",
    }
)


class CheckoutSession(EnvironmentResource):
    """Checkout session for customer ``customer_id``: ``action`` with ``configuration``, paid
    through ``payment_provider``; see the module doc for the statuses and the hidden fields."""

    customer_id: str
    action: CheckoutAction
    checkout_status: CheckoutStatus
    expires_at: UtcDatetime
    idempotency_key: str | None = None
    failure_reason: str | None = None
    success_url: str | None = None
    cancel_url: str | None = None
    failure_url: str | None = None
    completed_at: UtcDatetime | None = None
    cancelled_at: UtcDatetime | None = None
    checkout_invoice_id: str | None = None
    checkout_payment_id: str | None = None
    payment_provider: str
    payment_provider_config: dict[str, Any] = {}
    payment_action: dict[str, Any] | None = None
    provider_result: dict[str, Any] = {}
    configuration: dict[str, Any] = {}
    result: dict[str, Any] = {}
    metadata: dict[str, str] = {}
    open_key: str | None = None
    open_wallet_id: str | None = None
    run_at: UtcDatetime | None = None
    provider_session_id: str | None = None
    subscription_id: str | None = None
    invoice_id: str | None = None
    payment_id: str | None = None
    version: int = 1

    @property
    def is_open(self) -> bool:
        """Still ``initiated`` or ``pending``: it may be paid, failed or expired."""
        return self.checkout_status in OPEN_STATUSES

    def closed(self, status: CheckoutStatus, at: datetime, **changes: Any) -> CheckoutSession:
        """This session moved to the terminal ``status`` at ``at``: its key and wallet released,
        nothing left due for the worker; ``changes`` are further fields to set."""
        fields: dict[str, Any] = {
            "checkout_status": status,
            "open_key": None,
            "open_wallet_id": None,
            "run_at": None,
            **changes,
        }
        if status is CheckoutStatus.COMPLETED:
            fields["completed_at"] = at
        else:
            fields["cancelled_at"] = at
        return self.model_copy(update=fields)

    def __repr__(self) -> str:
        return f"<CheckoutSession {self.id} {self.action.value} {self.checkout_status.value}>"

    def to_dict(self) -> dict[str, Any]:
        """The reference's ``CheckoutSessionResponse`` (without the hidden fields)."""
        data = self.model_dump(mode="json", exclude=set(INTERNAL_FIELDS))
        if self.payment_action is not None:  # in the reference's order, whatever the store kept
            data["payment_action"] = {"type": self.payment_action["type"], "url": self.payment_action["url"]}
        return data


def checkout_session_payload(session: CheckoutSession) -> dict[str, Any]:
    """The ``checkout_session`` of checkout webhook payloads (the reference's
    ``webhookDto.CheckoutSession``)."""
    return {
        "id": session.id,
        "action": session.action.value,
        "checkout_status": session.checkout_status.value,
        "customer_id": session.customer_id,
        "payment_provider": session.payment_provider,
        "payment_action": session.payment_action,
        "expires_at": iso(session.expires_at),
        "completed_at": iso(session.completed_at),
        "cancelled_at": iso(session.cancelled_at),
        "failure_reason": session.failure_reason,
        "checkout_invoice_id": session.checkout_invoice_id,
        "checkout_payment_id": session.checkout_payment_id,
    }
