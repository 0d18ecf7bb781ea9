"""``RazorpayPaymentProvider``: the ``ports.PaymentProvider`` adapter that speaks Razorpay's REST API,
and the check of Razorpay's webhook signature.

How a :class:`~billingkit.domain.gateways.PaymentRequest` becomes Razorpay calls:

- with ``payment_method_id`` (a saved Razorpay token of the customer): an order
  (``POST /v1/orders``, the amount in minor units, ``receipt`` = the idempotency reference) and a
  recurring payment on it (``POST /v1/payments/create/recurring`` with ``token``, ``customer_id``,
  ``order_id``, ``recurring: "1"``), then the payment as Razorpay records it
  (``GET /v1/payments/{id}``). The provider payment id is Razorpay's ``pay_...`` id.
- without one: a payment link (``POST /v1/payment_links``, ``reference_id`` = the idempotency
  reference); the answer is ``pending`` with ``checkout_url`` = the link's ``short_url``, and the
  provider payment id is the link's ``plink_...`` id.
- :meth:`RazorpayPaymentProvider.create_mandate_link`: a registration link
  (``POST /v1/subscription_registration/auth_links``, ``type: "link"``, ``receipt`` = the
  idempotency reference): the customer pays the amount and registers a recurring-payment mandate
  (``subscription_registration.method`` and ``max_amount``) in one go; the provider payment id is
  the link's invoice id (``inv_...``), ``checkout_url`` its ``short_url``. Looked up first with
  ``GET /v1/invoices?receipt=``.

Razorpay takes no idempotency header on these calls, so the key travels in the request: the
reference (the key itself when it fits Razorpay's 40 characters, else ``bk_`` and 37 hex digits of
its SHA-256) is the order's ``receipt``, the link's ``reference_id`` or the refund's ``receipt``,
and the ``notes`` carry the key and a fingerprint of the request. Before creating anything the
provider looks the reference up (``GET /v1/orders?receipt=``, ``GET /v1/payment_links?reference_id=``,
``GET /v1/payments/{id}/refunds``), so a retry after a lost answer finds what the first attempt
made and never charges or refunds twice; a found request with another fingerprint is
:class:`IdempotencyConflict`. (Two concurrent first attempts with one key are not serialised
here: billingkit's own unique payment key is what keeps them apart.)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.gateways import (
    PaymentRequest,
    ProviderPayment,
    ProviderPaymentStatus,
    ProviderRefund,
    RefundRequest,
)
from billingkit.domain.minor_units import from_minor_units, to_minor_units
from billingkit.errors import ConfigurationError, IdempotencyConflict, InvalidOperation, ValidationError
from billingkit.providers.razorpay_api import HttpTransport, RazorpayApi, urllib_transport

__all__ = [
    "RAZORPAY_BASE_URL",
    "RazorpayPaymentProvider",
    "sign_webhook",
    "verify_webhook_signature",
]

RAZORPAY_BASE_URL = "https://api.razorpay.com"
#: The note keys billingkit writes on every order, payment, link and refund it creates.
KEY_NOTE = "billingkit_idempotency_key"
FINGERPRINT_NOTE = "billingkit_request"
#: Razorpay's limits: ``receipt`` and ``reference_id`` hold 40 characters; ``notes`` hold 15 pairs
#: of at most 256 characters each.
REFERENCE_LENGTH = 40
MAX_NOTES = 15
NOTE_LENGTH = 256

PENDING, SUCCEEDED, FAILED = ProviderPaymentStatus
#: Razorpay payment statuses. ``authorized`` is not money taken yet (it is captured, or given
#: back after 5 days); a ``refunded`` payment did take the money (refunds are their own records).
PAYMENT_STATUSES = {
    "created": PENDING,
    "authorized": PENDING,
    "captured": SUCCEEDED,
    "refunded": SUCCEEDED,
    "failed": FAILED,
}
#: Razorpay payment link statuses; a link that ends unpaid fails with a reason naming the end.
LINK_STATUSES = {
    "created": PENDING,
    "partially_paid": PENDING,
    "paid": SUCCEEDED,
    "expired": FAILED,
    "cancelled": FAILED,
    # A registration link is an invoice: issued, then paid (or expired, cancelled).
    "issued": PENDING,
}
REFUND_STATUSES = {"pending": PENDING, "processed": SUCCEEDED, "failed": FAILED}


class RazorpayPaymentProvider:
    """Takes payments through Razorpay (``name = "razorpay"``).

    ``key_id`` and ``key_secret`` are the API key pair (HTTP Basic auth); ``base_url`` is
    Razorpay's (a test points it at :class:`billingkit.testing.razorpay_fake.RazorpayFake`);
    ``timeout`` is seconds per HTTP call; ``transport`` replaces the ``urllib`` one (see
    :class:`~billingkit.providers.razorpay_api.HttpTransport`). ``webhook_secret`` is the secret
    of the Razorpay webhook that calls the host (:meth:`verify_webhook`).

    ``request.metadata`` becomes Razorpay ``notes`` (at most 13 pairs, values of at most 256
    characters), except three keys read for the recurring charge: ``razorpay_customer_id`` (the
    Razorpay customer owning the token; default ``request.customer_id``), ``email`` and
    ``contact`` (sent when present, as Razorpay asks for them on recurring payments).

    Errors: :class:`ServiceUnavailable` when Razorpay does not answer or answers 429/5xx (retry
    with the same request); :class:`ValidationError`/:class:`InvalidOperation` with Razorpay's
    description for what it refuses; :class:`NotFound` for an id it does not know;
    :class:`ConfigurationError` for a key pair it refuses. The secret never appears in an error,
    a log line or ``repr``.
    """

    name = "razorpay"

    def __init__(
        self,
        key_id: str,
        key_secret: str,
        *,
        base_url: str = RAZORPAY_BASE_URL,
        timeout: float = 30.0,
        transport: HttpTransport | None = None,
        webhook_secret: str | None = None,
    ) -> None:
        if not timeout > 0:
            raise ValidationError(f"timeout is seconds above 0, not {timeout!r}", field="timeout")
        self.api = RazorpayApi(
            key_id, key_secret, base_url=base_url, timeout=timeout, transport=transport or urllib_transport
        )
        self._webhook_secret = webhook_secret

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RazorpayPaymentProvider | None:
        """The provider that ``BILLINGKIT_RAZORPAY_KEY_ID`` and ``BILLINGKIT_RAZORPAY_KEY_SECRET``
        configure (with ``BILLINGKIT_RAZORPAY_BASE_URL`` and ``BILLINGKIT_RAZORPAY_WEBHOOK_SECRET``
        when set), or ``None`` when neither key variable is set. :class:`ConfigurationError` when
        only one of them is (empty counts as unset)."""
        env = os.environ if environ is None else environ
        key_id = env.get("BILLINGKIT_RAZORPAY_KEY_ID") or None
        key_secret = env.get("BILLINGKIT_RAZORPAY_KEY_SECRET") or None
        if key_id is None and key_secret is None:
            return None
        if key_id is None or key_secret is None:
            missing = "BILLINGKIT_RAZORPAY_KEY_ID" if key_id is None else "BILLINGKIT_RAZORPAY_KEY_SECRET"
            raise ConfigurationError(f"Razorpay needs both API key variables: {missing} is not set")
        return cls(
            key_id,
            key_secret,
            base_url=env.get("BILLINGKIT_RAZORPAY_BASE_URL") or RAZORPAY_BASE_URL,
            webhook_secret=env.get("BILLINGKIT_RAZORPAY_WEBHOOK_SECRET") or None,
        )

    @classmethod
    def per_environment_from_env(cls, environ: Mapping[str, str]) -> dict[str, RazorpayPaymentProvider]:
        """Environment id -> the provider of that environment's own Razorpay account, from the
        variables of :meth:`from_env` with ``__<environment id>`` appended to each name
        (``BILLINGKIT_RAZORPAY_KEY_ID__env_01J...``). :class:`ConfigurationError` as there."""
        prefix = "BILLINGKIT_RAZORPAY_KEY_ID__"
        found: dict[str, RazorpayPaymentProvider] = {}
        for name in environ:
            if not name.startswith(prefix) or not name[len(prefix) :]:
                continue
            environment_id = name[len(prefix) :]
            suffix = f"__{environment_id}"
            own = {
                base: environ.get(base + suffix, "")
                for base in (
                    "BILLINGKIT_RAZORPAY_KEY_ID",
                    "BILLINGKIT_RAZORPAY_KEY_SECRET",
                    "BILLINGKIT_RAZORPAY_BASE_URL",
                    "BILLINGKIT_RAZORPAY_WEBHOOK_SECRET",
                )
            }
            provider = cls.from_env(own)
            if provider is not None:
                found[environment_id] = provider
        return found

    # -- payments ------------------------------------------------------------------------------
    def create_payment(self, request: PaymentRequest) -> ProviderPayment:
        """Charge the saved token (order + recurring payment) or open a payment link; idempotent
        on ``request.idempotency_key`` (see the module docstring)."""
        units = to_minor_units(request.amount, request.currency)
        reference = idempotency_reference(request.idempotency_key)
        fingerprint = _fingerprint(
            "payment",
            str(request.amount.normalize()),
            request.currency.lower(),
            request.customer_id,
            request.payment_method_id or "",
            request.description,
            sorted(request.metadata.items()),
        )
        notes = _notes(request.metadata, request.idempotency_key, fingerprint)
        # One key names one payment whichever way it was asked for: look in both places.
        link = self._find_link(reference, notes)
        if link is not None:
            return _from_link(link)
        # (An order of ours always names a method, so for a request without one it can only be
        # another request's: _known refuses it.)
        order = self._known(
            self.api.get("orders", {"receipt": reference})["items"], "receipt", reference, notes, "payment"
        )
        if request.payment_method_id is None:
            return self._payment_link(request, units, reference, notes)
        return self._charge_token(request, request.payment_method_id, units, reference, notes, order)

    def get_payment(self, provider_payment_id: str) -> ProviderPayment:
        """The payment (``pay_...``), payment link (``plink_...``) or registration link (``inv_...``)
        as Razorpay has it now."""
        if provider_payment_id.startswith("plink_"):
            return _from_link(self.api.get(f"payment_links/{_segment(provider_payment_id)}"))
        if provider_payment_id.startswith("inv_"):
            return _from_link(self.api.get(f"invoices/{_segment(provider_payment_id)}"))
        return _from_payment(self.api.get(f"payments/{_segment(provider_payment_id)}"))

    def _charge_token(
        self,
        request: PaymentRequest,
        token: str,
        units: int,
        reference: str,
        notes: dict[str, str],
        order: dict[str, Any] | None,
    ) -> ProviderPayment:
        if order is not None:
            made = self.api.get(f"orders/{_segment(order['id'])}/payments")["items"]
            if made:  # the first attempt charged: answer with that payment, never charge again
                return _from_payment(max(made, key=lambda p: (p.get("created_at") or 0, p["id"])))
        else:
            order = self.api.post(
                "orders",
                {
                    "amount": units,
                    "currency": request.currency.upper(),
                    "receipt": reference,
                    "notes": notes,
                    "payment_capture": True,
                },
            )
        metadata = request.metadata
        body: dict[str, Any] = {
            "amount": units,
            "currency": request.currency.upper(),
            "order_id": order["id"],
            "customer_id": metadata.get("razorpay_customer_id", request.customer_id),
            "token": token,
            "recurring": "1",
            "description": request.description,
            "notes": notes,
        }
        body.update({key: metadata[key] for key in ("email", "contact") if key in metadata})
        created = self.api.post("payments/create/recurring", body)
        return _from_payment(self.api.get(f"payments/{_segment(created['razorpay_payment_id'])}"))

    def create_mandate_link(
        self, request: PaymentRequest, *, max_amount: Decimal, method: str
    ) -> ProviderPayment:
        """Open a registration link: the customer pays ``request.amount`` and authorises later
        charges of at most ``max_amount`` through ``method`` (``card``, ``upi``, ``emandate``,
        ``nach``); expiring at ``request.expires_at``. ``request.metadata`` keys ``name``,
        ``email`` and ``contact`` fill the link's ``customer``. Idempotent on the request's key."""
        currency = request.currency.upper()
        units = to_minor_units(request.amount, request.currency)
        limit = to_minor_units(max_amount, request.currency)
        if limit < units:
            raise ValidationError(
                f"the mandate's max amount {max_amount} is below the first payment {request.amount}",
                field="max_mandate_limit",
            )
        reference = idempotency_reference(request.idempotency_key)
        fingerprint = _fingerprint(
            "mandate",
            str(request.amount.normalize()),
            str(max_amount.normalize()),
            method,
            request.currency.lower(),
            request.customer_id,
            request.description,
            sorted(request.metadata.items()),
        )
        notes = _notes(
            {k: v for k, v in request.metadata.items() if k != "name"}, request.idempotency_key, fingerprint
        )
        found = self._known(
            self.api.get("invoices", {"receipt": reference}).get("items") or [],
            "receipt",
            reference,
            notes,
            "mandate",
        )
        if found is not None:
            return _from_link(found)
        customer = {
            key: request.metadata[key] for key in ("name", "email", "contact") if key in request.metadata
        }
        body: dict[str, Any] = {
            "type": "link",
            "amount": units,
            "currency": currency,
            "description": request.description or "recurring payment registration",
            "subscription_registration": {"method": method, "max_amount": limit},
            "receipt": reference,
            "sms_notify": False,
            "email_notify": False,
            "notes": notes,
        }
        if customer:
            body["customer"] = customer
        if request.expires_at is not None:
            body["expire_by"] = int(request.expires_at.timestamp())
        return _from_link(self.api.post("subscription_registration/auth_links", body))

    def _find_link(self, reference: str, notes: Mapping[str, str]) -> dict[str, Any] | None:
        links = self.api.get("payment_links", {"reference_id": reference}).get("payment_links") or []
        return self._known(links, "reference_id", reference, notes, "payment")

    def _payment_link(
        self, request: PaymentRequest, units: int, reference: str, notes: dict[str, str]
    ) -> ProviderPayment:
        body: dict[str, Any] = {
            "amount": units,
            "currency": request.currency.upper(),
            "accept_partial": False,
            "reference_id": reference,
            "description": request.description,
            "notes": notes,
        }
        if request.expires_at is not None:
            body["expire_by"] = int(request.expires_at.timestamp())
        if request.callback_url:
            body["callback_url"] = request.callback_url
            body["callback_method"] = "get"
        try:
            return _from_link(self.api.post("payment_links", body))
        except (InvalidOperation, ValidationError):
            # Razorpay keeps reference_id unique: a concurrent or lost first attempt made the link.
            link = self._find_link(reference, notes)
            if link is None:
                raise
            return _from_link(link)

    # -- refunds -------------------------------------------------------------------------------
    def refund_payment(self, request: RefundRequest) -> ProviderRefund:
        """Refund part or all of a captured payment (``POST /v1/payments/{id}/refund``, at normal
        speed); for a payment link, of the payment that paid it. Idempotent on the request's key."""
        payment = self._refundable_payment(request.provider_payment_id)
        currency = str(payment["currency"]).lower()
        if request.currency.lower() != currency:
            raise ValidationError(
                f"payment {request.provider_payment_id} is in {currency}, not {request.currency.lower()}",
                field="currency",
            )
        units = to_minor_units(request.amount, currency)
        reference = idempotency_reference(request.idempotency_key)
        fingerprint = _fingerprint(
            "refund", request.provider_payment_id, str(request.amount.normalize()), currency, request.reason
        )
        notes = _notes(
            {"reason": request.reason} if request.reason else {}, request.idempotency_key, fingerprint
        )
        path = f"payments/{_segment(payment['id'])}"
        refund = self._known(self.api.get(f"{path}/refunds")["items"], "receipt", reference, notes, "refund")
        if refund is None:
            if payment.get("status") not in ("captured", "refunded"):
                raise InvalidOperation(
                    f"payment {request.provider_payment_id} is {payment.get('status')}: "
                    "only a captured payment is refunded"
                )
            left = int(payment["amount"]) - int(payment.get("amount_refunded") or 0)
            if units > left:
                raise InvalidOperation(
                    f"payment {request.provider_payment_id} has {from_minor_units(left, currency)} "
                    f"{currency} left to refund, not {request.amount}"
                )
            refund = self.api.post(
                f"{path}/refund", {"amount": units, "speed": "normal", "receipt": reference, "notes": notes}
            )
        return ProviderRefund(
            provider=self.name,
            provider_refund_id=str(refund["id"]),
            provider_payment_id=request.provider_payment_id,
            idempotency_key=request.idempotency_key,
            status=REFUND_STATUSES.get(str(refund.get("status")), PENDING),
            amount=from_minor_units(int(refund["amount"]), currency),
            currency=currency,
            failure_reason="refund_failed" if refund.get("status") == "failed" else None,
        )

    def _refundable_payment(self, provider_payment_id: str) -> dict[str, Any]:
        """The Razorpay payment entity behind ``provider_payment_id`` (a link's captured payment)."""
        if not provider_payment_id.startswith("plink_"):
            return self.api.get(f"payments/{_segment(provider_payment_id)}")
        link = self.api.get(f"payment_links/{_segment(provider_payment_id)}")
        paid = [p for p in link.get("payments") or [] if p.get("status") == "captured"]
        if not paid:
            raise InvalidOperation(
                f"payment link {provider_payment_id} is {link.get('status')}: only a paid link is refunded"
            )
        return self.api.get(f"payments/{_segment(paid[-1]['payment_id'])}")

    # -- shared --------------------------------------------------------------------------------
    @staticmethod
    def _known(
        items: list[dict[str, Any]], field: str, reference: str, notes: Mapping[str, str], what: str
    ) -> dict[str, Any] | None:
        """The item billingkit made for this reference in an earlier attempt, or ``None``;
        :class:`IdempotencyConflict` when it was made for another request. Items without
        billingkit's notes (made by someone else, such as the order behind a paid link) are not
        billingkit's and are passed over."""
        for item in items:
            seen = _notes_of(item)
            if item.get(field) != reference or FINGERPRINT_NOTE not in seen:
                continue
            if seen[FINGERPRINT_NOTE] != notes[FINGERPRINT_NOTE]:
                raise IdempotencyConflict(
                    f"idempotency key {notes.get(KEY_NOTE, reference)!r} was used for another {what} request"
                )
            return item
        return None

    # -- webhooks ------------------------------------------------------------------------------
    def verify_webhook(self, body: bytes, signature: str) -> bool:
        """Whether ``signature`` (the ``X-Razorpay-Signature`` header) signs ``body`` with this
        provider's ``webhook_secret``; :class:`ConfigurationError` when it has none."""
        if not self._webhook_secret:
            raise ConfigurationError("this Razorpay provider has no webhook secret to check signatures with")
        return verify_webhook_signature(body, signature, self._webhook_secret)

    def __repr__(self) -> str:
        return f"RazorpayPaymentProvider(key_id={self.api.key_id!r}, base_url={self.api.base_url!r})"


# -- webhook signatures ---------------------------------------------------------------------------
def sign_webhook(body: bytes, secret: str) -> str:
    """The ``X-Razorpay-Signature`` Razorpay sends with ``body``: the hex HMAC-SHA256 of the raw
    body, keyed with the webhook's secret (what a test fake signs its webhooks with)."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify_webhook_signature(body: bytes, signature: str, secret: str) -> bool:
    """Whether ``signature`` is Razorpay's signature of the raw request ``body`` (the exact bytes
    received, before any JSON parsing) under the webhook ``secret``; compared in constant time."""
    if not secret or not isinstance(signature, str):
        return False
    return hmac.compare_digest(sign_webhook(body, secret), signature.strip().lower())


# -- mapping ----------------------------------------------------------------------------------------
def idempotency_reference(key: str) -> str:
    """The reference Razorpay keeps for ``key`` (``receipt``, ``reference_id``): the key itself
    when it is at most 40 printable ASCII characters, else ``bk_`` and the first 37 hex digits of
    its SHA-256 (the same key always gives the same reference)."""
    if len(key) <= REFERENCE_LENGTH and key.isascii() and key.isprintable():
        return key
    return "bk_" + hashlib.sha256(key.encode()).hexdigest()[: REFERENCE_LENGTH - 3]


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()[:32]


def _notes(metadata: Mapping[str, str], key: str, fingerprint: str) -> dict[str, str]:
    notes = {k: v for k, v in metadata.items() if k not in ("razorpay_customer_id", "email", "contact")}
    if len(notes) > MAX_NOTES - 2:
        raise ValidationError(
            f"Razorpay keeps at most {MAX_NOTES - 2} metadata entries beside billingkit's own",
            field="metadata",
        )
    for name, value in notes.items():
        if not isinstance(value, str) or len(value) > NOTE_LENGTH or len(name) > NOTE_LENGTH:
            raise ValidationError(
                f"metadata {name!r}: Razorpay keeps text of at most {NOTE_LENGTH} characters",
                field="metadata",
            )
    if len(key) <= NOTE_LENGTH:
        notes[KEY_NOTE] = key
    notes[FINGERPRINT_NOTE] = fingerprint
    return notes


def _from_payment(entity: Mapping[str, Any]) -> ProviderPayment:
    status = PAYMENT_STATUSES.get(str(entity.get("status")), PENDING)
    notes = _notes_of(entity)
    currency = str(entity["currency"]).lower()
    reason = None
    if status is FAILED:
        reason = str(
            entity.get("error_reason")
            or entity.get("error_code")
            or entity.get("error_description")
            or "failed"
        )
    return ProviderPayment(
        provider=RazorpayPaymentProvider.name,
        provider_payment_id=str(entity["id"]),
        idempotency_key=str(notes.get(KEY_NOTE, "")),
        status=status,
        amount=from_minor_units(int(entity["amount"]), currency),
        currency=currency,
        failure_reason=reason,
    )


def _from_link(entity: Mapping[str, Any]) -> ProviderPayment:
    raw = str(entity.get("status"))
    status = LINK_STATUSES.get(raw, PENDING)
    notes = _notes_of(entity)
    currency = str(entity["currency"]).lower()
    return ProviderPayment(
        provider=RazorpayPaymentProvider.name,
        provider_payment_id=str(entity["id"]),
        idempotency_key=str(notes.get(KEY_NOTE, "")),
        status=status,
        amount=from_minor_units(int(entity["amount"]), currency),
        currency=currency,
        checkout_url=entity.get("short_url") or None,
        failure_reason=f"payment_link_{raw}" if status is FAILED else None,
        expires_at=datetime.fromtimestamp(int(entity["expire_by"]), UTC) if entity.get("expire_by") else None,
    )


def _notes_of(entity: Mapping[str, Any]) -> dict[str, Any]:
    """An entity's ``notes`` (Razorpay answers empty notes as ``[]``)."""
    notes = entity.get("notes")
    return notes if isinstance(notes, dict) else {}


def _segment(identifier: str) -> str:
    """An id as one path segment (quoted, so an id never changes the route)."""
    return urllib.parse.quote(str(identifier), safe="")
