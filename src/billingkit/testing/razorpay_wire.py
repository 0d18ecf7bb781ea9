"""Razorpay's bodies as :class:`~billingkit.testing.razorpay_fake.RazorpayFake` reads and writes
them: the checks it makes on request bodies (Razorpay's limits and error wording), its error body,
collections, and the order, payment, refund and payment link entities with the fields Razorpay
documents (empty ``notes`` answered as ``[]``, as Razorpay does)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

__all__ = [
    "Entity",
    "Refusal",
    "amount_of",
    "checked_notes",
    "collection",
    "currency_of",
    "error_body",
    "link_entity",
    "order_entity",
    "payment_entity",
    "refund_entity",
    "registration_link_entity",
    "token_entity",
]

Entity = dict[str, Any]


class Refusal(Exception):
    """Razorpay refuses the request: answered ``status`` with :func:`error_body`."""

    def __init__(self, status: int, description: str, field: str | None = None) -> None:
        super().__init__(description)
        self.status, self.description, self.field = status, description, field


def error_body(
    description: str, *, field: str | None = None, code: str = "BAD_REQUEST_ERROR", source: str = "business"
) -> Entity:
    """Razorpay's error body: ``{"error": {code, description, source, step, reason, metadata[, field]}}``."""
    error: Entity = {
        "code": code,
        "description": description,
        "source": source,
        "step": "payment_initiation" if source == "business" else "NA",
        "reason": "input_validation_failed" if source == "business" else "NA",
        "metadata": {},
    }
    if field is not None:
        error["field"] = field
    return {"error": error}


def amount_of(body: Any) -> int:
    """The body's ``amount``: an integer of minor units, at least 100 (Razorpay's 1.00 minimum)."""
    amount = body.get("amount") if isinstance(body, dict) else None
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise Refusal(400, "The amount must be an integer.", "amount")
    if amount < 100:
        raise Refusal(400, f"The amount must be at least {currency_of(body)} 1.00", "amount")
    return amount


def currency_of(body: Any) -> str:
    """The body's ``currency`` (default ``INR``, as Razorpay's): an upper-case 3-letter code."""
    currency = body.get("currency", "INR") if isinstance(body, dict) else None
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        raise Refusal(400, "The currency must be an upper-case ISO 4217 code.", "currency")
    return currency


def checked_notes(body: Any) -> Any:
    """The body's ``notes`` within Razorpay's limits (15 pairs, 256 characters); ``[]`` if none."""
    notes = body.get("notes") if isinstance(body, dict) else None
    if not notes:
        return []  # Razorpay answers empty notes as an empty list
    if not isinstance(notes, dict) or len(notes) > 15:
        raise Refusal(400, "The notes may not have more than 15 items.", "notes")
    if any(not isinstance(v, str) or len(v) > 256 for v in notes.values()):
        raise Refusal(400, "The notes values may not be greater than 256 characters.", "notes")
    return dict(notes)


def collection(items: list[Entity], query: dict[str, str]) -> Entity:
    """A page of ``items``, newest first (``skip``/``count`` as Razorpay reads them, default 10)."""
    newest_first = sorted(items, key=lambda item: item["created_at"], reverse=True)
    skip, count = int(query.get("skip", 0)), int(query.get("count", 10))
    page = [dict(item) for item in newest_first[skip : skip + count]]
    return {"entity": "collection", "count": len(page), "items": page}


def order_entity(
    order_id: str, amount: int, currency: str, receipt: str | None, notes: Any, *, created_at: int
) -> Entity:
    """A new order (status ``created``, nothing paid)."""
    return {
        "id": order_id,
        "entity": "order",
        "amount": amount,
        "amount_paid": 0,
        "amount_due": amount,
        "currency": currency,
        "receipt": receipt,
        "offer_id": None,
        "status": "created",
        "attempts": 0,
        "notes": notes,
        "created_at": created_at,
    }


def payment_entity(
    payment_id: str,
    order: Entity,
    *,
    method: str,
    notes: Any,
    description: str,
    created_at: int,
    customer_id: str | None = None,
    token_id: str | None = None,
    email: str | None = None,
    contact: str | None = None,
    declined: tuple[str, str] | None = None,
) -> Entity:
    """A payment of the whole ``order``: ``captured``, or ``failed`` with ``declined`` =
    ``(error_reason, error_description)``."""
    return {
        "id": payment_id,
        "entity": "payment",
        "amount": order["amount"],
        "currency": order["currency"],
        "status": "failed" if declined else "captured",
        "order_id": order["id"],
        "invoice_id": None,
        "international": False,
        "method": method,
        "amount_refunded": 0,
        "refund_status": None,
        "captured": declined is None,
        "description": description,
        "card_id": None,
        "bank": None,
        "wallet": None,
        "vpa": None,
        "email": email,
        "contact": contact,
        "customer_id": customer_id,
        "token_id": token_id,
        "notes": notes,
        "fee": None if declined else order["amount"] * 2 // 100,
        "tax": None if declined else 0,
        "error_code": "BAD_REQUEST_ERROR" if declined else None,
        "error_description": declined[1] if declined else None,
        "error_source": "bank" if declined else None,
        "error_step": "payment_authorization" if declined else None,
        "error_reason": declined[0] if declined else None,
        "acquirer_data": {},
        "created_at": created_at,
    }


def refund_entity(
    refund_id: str,
    payment: Entity,
    amount: int,
    *,
    notes: Any,
    receipt: str | None,
    speed: str,
    created_at: int,
) -> Entity:
    """A processed refund of ``amount`` of ``payment``."""
    return {
        "id": refund_id,
        "entity": "refund",
        "amount": amount,
        "currency": payment["currency"],
        "payment_id": payment["id"],
        "notes": notes,
        "receipt": receipt,
        "acquirer_data": {"arn": None},
        "created_at": created_at,
        "batch_id": None,
        "status": "processed",
        "speed_processed": "normal",
        "speed_requested": speed,
    }


def link_entity(
    link_id: str, body: Entity, *, amount: int, currency: str, reference: str, notes: Any, created_at: int
) -> Entity:
    """A new standard payment link (status ``created``) from its create request ``body``."""
    return {
        "accept_partial": bool(body.get("accept_partial", False)),
        "amount": amount,
        "amount_paid": 0,
        "callback_method": str(body.get("callback_method") or ""),
        "callback_url": str(body.get("callback_url") or ""),
        "cancelled_at": 0,
        "created_at": created_at,
        "currency": currency,
        "customer": body.get("customer") or {},
        "description": str(body.get("description") or ""),
        "expire_by": int(body.get("expire_by") or 0),
        "expired_at": 0,
        "first_min_partial_amount": int(body.get("first_min_partial_amount") or 0),
        "id": link_id,
        "notes": notes,
        "notify": body.get("notify") or {"email": False, "sms": False},
        "payments": None,
        "reference_id": reference,
        "reminder_enable": bool(body.get("reminder_enable", False)),
        "reminders": [],
        "short_url": f"https://rzp.io/i/{hashlib.sha256(link_id.encode()).hexdigest()[:8]}",
        "status": "created",
        "updated_at": created_at,
        "upi_link": False,
        "user_id": "",
    }


#: Razorpay's registration methods (``subscription_registration.method``).
MANDATE_METHODS = ("card", "emandate", "nach", "upi")


def registration_link_entity(
    invoice_id: str,
    body: Entity,
    *,
    amount: int,
    currency: str,
    customer_id: str,
    notes: Any,
    created_at: int,
) -> Entity:
    """A new registration link, as Razorpay answers ``POST /v1/subscription_registration/auth_links``:
    an invoice entity of ``type`` ``link``, status ``issued``, with the customer it made."""
    registration = body.get("subscription_registration")
    if not isinstance(registration, dict) or registration.get("method") not in MANDATE_METHODS:
        raise Refusal(400, "The subscription registration method is invalid.", "method")
    max_amount = registration.get("max_amount")
    if max_amount is not None and (isinstance(max_amount, bool) or not isinstance(max_amount, int)):
        raise Refusal(400, "The max amount must be an integer.", "max_amount")
    if body.get("type") != "link":
        raise Refusal(400, "The type field is invalid.", "type")
    if not body.get("description"):
        raise Refusal(400, "The description field is required.", "description")
    given = body.get("customer")
    customer: Entity = given if isinstance(given, dict) else {}
    receipt = body.get("receipt")
    return {
        "id": invoice_id,
        "entity": "invoice",
        "receipt": receipt,
        "invoice_number": receipt,
        "customer_id": customer_id,
        "customer_details": {
            "id": customer_id,
            "name": customer.get("name"),
            "email": customer.get("email"),
            "contact": customer.get("contact"),
            "gstin": None,
            "billing_address": None,
            "shipping_address": None,
            "customer_name": customer.get("name"),
            "customer_email": customer.get("email"),
            "customer_contact": customer.get("contact"),
        },
        "order_id": None,
        "line_items": [],
        "payment_id": None,
        "status": "issued",
        "expire_by": int(body.get("expire_by") or 0) or None,
        "issued_at": created_at,
        "paid_at": None,
        "cancelled_at": None,
        "expired_at": None,
        "sms_status": "pending" if body.get("sms_notify") else None,
        "email_status": "pending" if body.get("email_notify") else None,
        "date": created_at,
        "terms": None,
        "partial_payment": False,
        "gross_amount": amount,
        "tax_amount": 0,
        "taxable_amount": 0,
        "amount": amount,
        "amount_paid": 0,
        "amount_due": amount,
        "currency": currency,
        "currency_symbol": "₹" if currency == "INR" else currency,
        "description": str(body["description"]),
        "notes": notes,
        "comment": None,
        "short_url": f"https://rzp.io/i/{hashlib.sha256(invoice_id.encode()).hexdigest()[:7]}",
        "view_less": True,
        "billing_start": None,
        "billing_end": None,
        "type": "link",
        "group_taxes_discounts": False,
        "created_at": created_at,
        "idempotency_key": None,
    }


def token_entity(
    token_id: str, method: str, registration: Entity, invoice: Entity, *, created_at: int
) -> Entity:
    """The recurring token a paid registration link (``invoice``) leaves: confirmed, for its
    customer, with the registration's ``max_amount`` and ``expire_at``."""
    return {
        "id": token_id,
        "entity": "token",
        "method": method,
        "recurring": True,
        "recurring_details": {"status": "confirmed", "failure_reason": None},
        "max_amount": registration.get("max_amount"),
        "expired_at": registration.get("expire_at"),
        "customer_id": invoice["customer_id"],
        "created_at": created_at,
    }
