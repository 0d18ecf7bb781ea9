"""``RazorpayFake``: a local stand-in for Razorpay's REST API, for tests that must not touch the network.

It serves, on ``127.0.0.1`` at a free port in a background thread, the calls
:class:`~billingkit.providers.razorpay.RazorpayPaymentProvider` makes, with the request and answer
bodies Razorpay documents: orders (``POST/GET /v1/orders``, ``GET /v1/orders/{id}/payments``),
recurring payments on a saved token (``POST /v1/payments/create/recurring``), payments
(``GET /v1/payments/{id}``), refunds (``POST /v1/payments/{id}/refund``,
``GET /v1/payments/{id}/refunds``), payment links (``POST/GET /v1/payment_links``) and
registration links (``POST /v1/subscription_registration/auth_links``, answered as the invoice
entity Razorpay makes; ``GET /v1/invoices[?receipt=]``, ``GET /v1/invoices/{id}``). Every call
needs the key pair (HTTP Basic auth; 401 otherwise); errors use Razorpay's body
``{"error": {"code": "BAD_REQUEST_ERROR", "description": ..., "field": ...}}``, and an unknown id
is a 400 "The id provided does not exist", as Razorpay answers.

A test steers it:

- :meth:`decline_token`: recurring charges of that token fail (payment status ``failed``);
- :meth:`drop_answer`: the next matching request is carried out, then the connection is closed
  without an answer (the retry-after-a-lost-answer path); :meth:`fail_next`: answered 503 unprocessed;
- :meth:`pay_link`, :meth:`expire_link`, :meth:`cancel_link`: the customer's side of a link;
- :meth:`authorise_mandate`: the customer pays a registration link and registers the mandate
  (a token, an order and a captured recurring payment carrying the link's notes);
- :meth:`webhook`: an event body signed as Razorpay signs it (``X-Razorpay-Signature``).

``fake.requests`` records every request (method, path, query, JSON body, whether it was
authorised). Payments on a token are captured at once; ids count up (``order_F0000000000001``).

    with RazorpayFake() as fake:
        provider = fake.provider()   # a RazorpayPaymentProvider pointed at the fake
        ...
"""

from __future__ import annotations

import base64
import hmac
import itertools
import json
import re
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from billingkit.providers.razorpay import RazorpayPaymentProvider, sign_webhook
from billingkit.testing.razorpay_wire import (
    Entity,
    Refusal,
    amount_of,
    checked_notes,
    collection,
    currency_of,
    error_body,
    link_entity,
    order_entity,
    payment_entity,
    refund_entity,
    registration_link_entity,
    token_entity,
)

__all__ = ["RazorpayFake", "RazorpayWebhook", "RecordedRequest"]

#: Timestamps count up from here, one second per entity, so answers are the same every run.
EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the fake received: ``status`` is what it answered (``None`` when dropped)."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    authorized: bool
    status: int | None


@dataclass(frozen=True, slots=True)
class RazorpayWebhook:
    """A webhook delivery as Razorpay makes it: POST ``body`` (raw bytes) with ``headers``."""

    event: str
    body: bytes
    headers: dict[str, str]


class RazorpayFake:
    """A fake Razorpay API server; start it with ``with RazorpayFake() as fake`` (or
    :meth:`start` / :meth:`close`). ``base_url`` is where it listens."""

    def __init__(
        self,
        key_id: str = "rzp_test_fake",
        key_secret: str = "fake_secret",
        *,
        webhook_secret: str = "fake_webhook_secret",
    ) -> None:
        self.key_id, self.key_secret, self.webhook_secret = key_id, key_secret, webhook_secret
        self.orders: dict[str, Entity] = {}
        self.payments: dict[str, Entity] = {}
        self.refunds: dict[str, Entity] = {}
        self.links: dict[str, Entity] = {}
        self.invoices: dict[str, Entity] = {}
        self.tokens: dict[str, Entity] = {}
        #: The ``subscription_registration`` each registration link was asked with, by its id.
        self.registrations: dict[str, Entity] = {}
        self._requests: list[RecordedRequest] = []
        self._declined: dict[str, tuple[str, str]] = {}
        self._drops: list[tuple[str, str]] = []
        self._failures: list[tuple[str, str, int]] = []
        self._ids = itertools.count(1)
        self._clock = itertools.count(EPOCH)
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> RazorpayFake:
        """Listen on a free port of 127.0.0.1 in a daemon thread."""
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="razorpay-fake", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop listening (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> RazorpayFake:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the Razorpay fake is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def provider(self, **options: Any) -> RazorpayPaymentProvider:
        """A :class:`RazorpayPaymentProvider` with this fake's keys and URL (``options`` are passed on)."""
        options.setdefault("webhook_secret", self.webhook_secret)
        options.setdefault("timeout", 5.0)
        return RazorpayPaymentProvider(self.key_id, self.key_secret, base_url=self.base_url, **options)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    # -- steering ----------------------------------------------------------------------------------
    def decline_token(
        self, token: str, *, reason: str = "card_declined", description: str = "The card was declined."
    ) -> None:
        """Recurring charges of ``token`` fail: the payment is created with status ``failed`` and
        ``error_reason`` = ``reason``."""
        with self._lock:
            self._declined[token] = (reason, description)

    def drop_answer(self, method: str, path: str, *, times: int = 1) -> None:
        """The next ``times`` requests of ``method`` whose path starts with ``path`` (e.g.
        ``"/v1/payments/create/recurring"``) are carried out, then the connection is closed with no
        answer, as when an answer is lost on the way back."""
        with self._lock:
            self._drops.extend([(method.upper(), path)] * times)

    def fail_next(self, method: str, path: str, *, status: int = 503, times: int = 1) -> None:
        """The next ``times`` matching requests are answered ``status`` without being carried out."""
        with self._lock:
            self._failures.extend([(method.upper(), path, status)] * times)

    def pay_link(self, link_id: str, *, method: str = "card") -> Entity:
        """The customer pays link ``link_id`` in full: an order and a captured payment are made and
        the link becomes ``paid``. Returns the payment."""
        with self._lock:
            link = self._entity(self.links, link_id)
            if link["status"] != "created":
                raise ValueError(f"payment link {link_id} is {link['status']}")
            order = self._new_order(link["amount"], link["currency"], None, [])
            payment = self._new_payment(order, method=method, notes=link["notes"], description="")
            link.update(
                status="paid",
                amount_paid=link["amount"],
                order_id=order["id"],
                updated_at=payment["created_at"],
                payments=[
                    {
                        "amount": payment["amount"],
                        "created_at": payment["created_at"],
                        "method": method,
                        "payment_id": payment["id"],
                        "plink_id": link_id,
                        "status": "captured",
                        "updated_at": payment["created_at"],
                    }
                ],
            )
            return dict(payment)

    def expire_link(self, link_id: str) -> None:
        """Link ``link_id`` passes its ``expire_by`` unpaid (status ``expired``)."""
        with self._lock:
            link = self._entity(self.links, link_id)
            link.update(status="expired", expired_at=self._now())

    def cancel_link(self, link_id: str) -> None:
        """The merchant cancels link ``link_id`` (status ``cancelled``)."""
        with self._lock:
            link = self._entity(self.links, link_id)
            link.update(status="cancelled", cancelled_at=self._now())

    def authorise_mandate(self, invoice_id: str, *, method: str | None = None) -> Entity:
        """The customer pays registration link ``invoice_id`` and registers its mandate: a token
        (``token_...``, ``recurring_details.status`` ``confirmed``), an order of the link's amount
        and a captured payment on it (``invoice_id``, ``token_id``, the link's notes); the link
        becomes ``paid``. Returns the payment (what ``payment.captured`` carries)."""
        with self._lock:
            invoice = self._entity(self.invoices, invoice_id)
            if invoice["status"] != "issued":
                raise ValueError(f"registration link {invoice_id} is {invoice['status']}")
            registration = self.registrations[invoice_id]
            method = method or str(registration["method"])
            token = token_entity(self._id("token"), method, registration, invoice, created_at=self._now())
            self.tokens[token["id"]] = token
            order = self._new_order(
                invoice["amount"], invoice["currency"], invoice["receipt"], invoice["notes"]
            )
            payment = self._new_payment(
                order,
                method=method,
                notes=invoice["notes"],
                description=invoice["description"],
                customer_id=invoice["customer_id"],
                token_id=token["id"],
                email=invoice["customer_details"]["email"],
                contact=invoice["customer_details"]["contact"],
            )
            payment.update(invoice_id=invoice_id, recurring=True)
            invoice.update(
                status="paid",
                order_id=order["id"],
                payment_id=payment["id"],
                amount_paid=invoice["amount"],
                amount_due=0,
                paid_at=payment["created_at"],
            )
            return dict(payment)

    def webhook(self, event: str, entity_id: str) -> RazorpayWebhook:
        """The delivery Razorpay makes for ``event`` (e.g. ``payment_link.paid``,
        ``payment.captured``, ``payment.failed``, ``refund.processed``) about entity ``entity_id``
        (a ``plink_``, ``pay_`` or ``rfnd_`` id): the event body with the entities it contains,
        signed with ``webhook_secret`` in ``X-Razorpay-Signature``, with an ``X-Razorpay-Event-Id``."""
        with self._lock:
            payload: dict[str, Any] = {}
            if entity_id.startswith("plink_"):
                link = self._entity(self.links, entity_id)
                payload["payment_link"] = {"entity": dict(link)}
                if link.get("order_id"):
                    payload["order"] = {"entity": dict(self.orders[link["order_id"]])}
                if link.get("payments"):
                    payload["payment"] = {"entity": dict(self.payments[link["payments"][-1]["payment_id"]])}
            elif entity_id.startswith("token_"):
                token = self._entity(self.tokens, entity_id)
                payload["token"] = {"entity": dict(token)}
            elif entity_id.startswith("rfnd_"):
                refund = self._entity(self.refunds, entity_id)
                payload["refund"] = {"entity": dict(refund)}
                payload["payment"] = {"entity": dict(self.payments[refund["payment_id"]])}
            else:
                payload["payment"] = {"entity": dict(self._entity(self.payments, entity_id))}
            number = next(self._ids)
            body = json.dumps(
                {
                    "entity": "event",
                    "account_id": "acc_F0000000000000",
                    "event": event,
                    "contains": list(payload),
                    "payload": payload,
                    "created_at": self._now(),
                },
                separators=(",", ":"),
            ).encode()
        headers = {
            "Content-Type": "application/json",
            "X-Razorpay-Signature": sign_webhook(body, self.webhook_secret),
            "X-Razorpay-Event-Id": f"evt_F{number:013d}",
        }
        return RazorpayWebhook(event=event, body=body, headers=headers)

    # -- the API -----------------------------------------------------------------------------------
    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        for verb, pattern, action in _ROUTES:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                with self._lock:
                    return 200, action(self, *match.groups(), query=query, body=body)
        raise Refusal(404, "The requested URL was not found on the server.")

    def _create_order(self, *, query: dict[str, str], body: Any) -> Entity:
        amount, currency = amount_of(body), currency_of(body)
        receipt = body.get("receipt")
        if receipt is not None and (not isinstance(receipt, str) or len(receipt) > 40):
            raise Refusal(400, "The receipt may not be greater than 40 characters.", "receipt")
        return dict(self._new_order(amount, currency, receipt, checked_notes(body)))

    def _list_orders(self, *, query: dict[str, str], body: Any) -> Entity:
        return _by_receipt(self.orders, query)

    def _get_order(self, order_id: str, *, query: dict[str, str], body: Any) -> Entity:
        return dict(self._entity(self.orders, order_id))

    def _order_payments(self, order_id: str, *, query: dict[str, str], body: Any) -> Entity:
        self._entity(self.orders, order_id)
        return collection([p for p in self.payments.values() if p["order_id"] == order_id], query)

    def _create_recurring(self, *, query: dict[str, str], body: Any) -> Entity:
        for field in ("order_id", "customer_id", "token", "recurring"):
            if not isinstance(body, dict) or not body.get(field):
                raise Refusal(400, f"The {field} field is required.", field)
        amount, currency = amount_of(body), currency_of(body)
        order = self._entity(self.orders, body["order_id"])
        if amount != order["amount"] or currency != order["currency"]:
            raise Refusal(400, "The amount and currency must match the order's.", "amount")
        if order["status"] == "paid":
            raise Refusal(400, "Order has already been paid.")
        declined = self._declined.get(body["token"])
        payment = self._new_payment(
            order,
            method="card",
            notes=checked_notes(body),
            description=str(body.get("description") or ""),
            customer_id=body["customer_id"],
            token_id=body["token"],
            email=body.get("email"),
            contact=body.get("contact"),
            declined=declined,
        )
        return {"razorpay_payment_id": payment["id"]}

    def _get_payment(self, payment_id: str, *, query: dict[str, str], body: Any) -> Entity:
        return dict(self._entity(self.payments, payment_id))

    def _refund(self, payment_id: str, *, query: dict[str, str], body: Any) -> Entity:
        payment = self._entity(self.payments, payment_id)
        body = body if isinstance(body, dict) else {}
        if payment["status"] not in ("captured",):
            raise Refusal(400, f"The payment is {payment['status']}: only captured payments can be refunded.")
        left = payment["amount"] - payment["amount_refunded"]
        amount = body.get("amount", left)
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
            raise Refusal(400, "The amount must be an integer of at least 1.", "amount")
        if amount > left:
            raise Refusal(400, "The refund amount provided is greater than amount captured.", "amount")
        receipt = body.get("receipt")
        if receipt is not None and (not isinstance(receipt, str) or len(receipt) > 40):
            raise Refusal(400, "The receipt may not be greater than 40 characters.", "receipt")
        refund = refund_entity(
            self._id("rfnd"),
            payment,
            amount,
            notes=checked_notes(body),
            receipt=receipt,
            speed=str(body.get("speed") or "normal"),
            created_at=self._now(),
        )
        self.refunds[refund["id"]] = refund
        payment["amount_refunded"] += amount
        full = payment["amount_refunded"] == payment["amount"]
        payment.update(refund_status="full" if full else "partial", status="refunded" if full else "captured")
        return dict(refund)

    def _payment_refunds(self, payment_id: str, *, query: dict[str, str], body: Any) -> Entity:
        self._entity(self.payments, payment_id)
        return collection([r for r in self.refunds.values() if r["payment_id"] == payment_id], query)

    def _create_link(self, *, query: dict[str, str], body: Any) -> Entity:
        amount, currency = amount_of(body), currency_of(body)
        reference = body.get("reference_id")
        if reference is not None:
            if not isinstance(reference, str) or len(reference) > 40:
                raise Refusal(400, "The reference id may not be greater than 40 characters.", "reference_id")
            if any(link["reference_id"] == reference for link in self.links.values()):
                raise Refusal(400, f"Payment Link with reference id {reference} already exists")
        link_id = self._id("plink")
        link = link_entity(
            link_id,
            body,
            amount=amount,
            currency=currency,
            reference=reference or "",
            notes=checked_notes(body),
            created_at=self._now(),
        )
        self.links[link_id] = link
        return dict(link)

    def _list_links(self, *, query: dict[str, str], body: Any) -> Entity:
        items = [
            dict(link)
            for link in reversed(self.links.values())
            if "reference_id" not in query or link["reference_id"] == query["reference_id"]
        ]
        return {"payment_links": items}

    def _get_link(self, link_id: str, *, query: dict[str, str], body: Any) -> Entity:
        return dict(self._entity(self.links, link_id))

    def _create_registration_link(self, *, query: dict[str, str], body: Any) -> Entity:
        amount, currency = amount_of(body), currency_of(body)
        receipt = body.get("receipt")
        if receipt is not None and (not isinstance(receipt, str) or len(receipt) > 40):
            raise Refusal(400, "The receipt may not be greater than 40 characters.", "receipt")
        if receipt is not None and any(i["receipt"] == receipt for i in self.invoices.values()):
            raise Refusal(400, "Invoice receipt should be unique.", "receipt")
        invoice = registration_link_entity(
            self._id("inv"),
            body,
            amount=amount,
            currency=currency,
            customer_id=self._id("cust"),
            notes=checked_notes(body),
            created_at=self._now(),
        )
        self.invoices[invoice["id"]] = invoice
        self.registrations[invoice["id"]] = dict(body["subscription_registration"])
        return dict(invoice)

    def _list_invoices(self, *, query: dict[str, str], body: Any) -> Entity:
        return _by_receipt(self.invoices, query)

    def _get_invoice(self, invoice_id: str, *, query: dict[str, str], body: Any) -> Entity:
        return dict(self._entity(self.invoices, invoice_id))

    # -- state -------------------------------------------------------------------------------------
    def _id(self, prefix: str) -> str:
        return f"{prefix}_F{next(self._ids):013d}"

    def _now(self) -> int:
        return next(self._clock)

    @staticmethod
    def _entity(table: dict[str, Entity], entity_id: str) -> Entity:
        found = table.get(entity_id)
        if found is None:
            raise Refusal(400, "The id provided does not exist")
        return found

    def _new_order(self, amount: int, currency: str, receipt: str | None, notes: Any) -> Entity:
        order = order_entity(self._id("order"), amount, currency, receipt, notes, created_at=self._now())
        self.orders[order["id"]] = order
        return order

    def _new_payment(
        self,
        order: Entity,
        *,
        method: str,
        notes: Any,
        description: str,
        customer_id: str | None = None,
        token_id: str | None = None,
        email: str | None = None,
        contact: str | None = None,
        declined: tuple[str, str] | None = None,
    ) -> Entity:
        payment = payment_entity(
            self._id("pay"),
            order,
            method=method,
            notes=notes,
            description=description,
            created_at=self._now(),
            customer_id=customer_id,
            token_id=token_id,
            email=email,
            contact=contact,
            declined=declined,
        )
        self.payments[payment["id"]] = payment
        order["attempts"] += 1
        if declined is None:
            order.update(status="paid", amount_paid=order["amount"], amount_due=0)
        else:
            order["status"] = "attempted"
        return payment

    # -- the server's side -------------------------------------------------------------------------
    def _handle(self, handler: _Handler, method: str) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        authorized = hmac.compare_digest(
            handler.headers.get("Authorization", ""),
            "Basic " + base64.b64encode(f"{self.key_id}:{self.key_secret}".encode()).decode(),
        )
        with self._lock:
            failure = _take(self._failures, method, parsed.path)
            drop = _take(self._drops, method, parsed.path) if failure is None else None
        if not authorized:
            status, answer = 401, error_body("Authentication failed", source="NA")
        elif failure is not None:
            status, answer = (
                failure[2],
                error_body("Service unavailable, try again later", code="SERVER_ERROR", source="NA"),
            )
        else:
            try:
                status, answer = self._route(method, parsed.path, query, body)
            except Refusal as refusal:
                status, answer = refusal.status, error_body(refusal.description, field=refusal.field)
            except Exception as exc:  # a bug in the fake answers as Razorpay's servers would
                status, answer = 500, error_body(f"fake error: {exc!r}", code="SERVER_ERROR", source="NA")
        with self._lock:
            self._requests.append(
                RecordedRequest(method, parsed.path, query, body, authorized, None if drop else status)
            )
        if drop is not None:
            handler.close_connection = True
            return
        data = json.dumps(answer).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


class _Handler(BaseHTTPRequestHandler):
    fake: RazorpayFake

    def do_GET(self) -> None:
        self.fake._handle(self, "GET")

    def do_POST(self) -> None:
        self.fake._handle(self, "POST")

    def log_message(self, format: str, *args: Any) -> None:  # tests stay quiet
        pass


_ID = r"([A-Za-z0-9_]+)"
_ROUTES: list[tuple[str, str, Callable[..., Entity]]] = [
    ("POST", "/v1/orders", RazorpayFake._create_order),
    ("GET", "/v1/orders", RazorpayFake._list_orders),
    ("GET", f"/v1/orders/{_ID}", RazorpayFake._get_order),
    ("GET", f"/v1/orders/{_ID}/payments", RazorpayFake._order_payments),
    ("POST", "/v1/payments/create/recurring", RazorpayFake._create_recurring),
    ("GET", f"/v1/payments/{_ID}", RazorpayFake._get_payment),
    ("POST", f"/v1/payments/{_ID}/refund", RazorpayFake._refund),
    ("GET", f"/v1/payments/{_ID}/refunds", RazorpayFake._payment_refunds),
    ("POST", "/v1/payment_links/?", RazorpayFake._create_link),
    ("GET", "/v1/payment_links/?", RazorpayFake._list_links),
    ("GET", f"/v1/payment_links/{_ID}", RazorpayFake._get_link),
    ("POST", "/v1/subscription_registration/auth_links", RazorpayFake._create_registration_link),
    ("GET", "/v1/invoices", RazorpayFake._list_invoices),
    ("GET", f"/v1/invoices/{_ID}", RazorpayFake._get_invoice),
]


def _by_receipt(table: dict[str, Entity], query: dict[str, str]) -> Entity:
    """A page of ``table``'s entities, those with the query's ``receipt`` when it names one."""
    items = [e for e in table.values() if "receipt" not in query or e["receipt"] == query["receipt"]]
    return collection(items, query)


def _take(rules: list[Any], method: str, path: str) -> Any:
    for i, rule in enumerate(rules):
        if rule[0] == method and path.startswith(rule[1]):
            return rules.pop(i)
    return None
