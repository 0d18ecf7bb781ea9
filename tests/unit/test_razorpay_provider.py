"""The Razorpay adapter on the wire: the bodies it sends, retries after lost answers, error mapping,
status mapping, webhook signatures and configuration. Razorpay's servers are the local fake
(``billingkit.testing.razorpay_fake``) or, for canned answers, an injected transport."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, RazorpayPaymentProvider, SandboxPaymentProvider
from billingkit.domain.gateways import PaymentRequest, ProviderPaymentStatus, RefundRequest
from billingkit.errors import (
    ConfigurationError,
    IdempotencyConflict,
    InvalidOperation,
    NotFound,
    ServiceUnavailable,
    ValidationError,
)
from billingkit.providers.razorpay import idempotency_reference, sign_webhook, verify_webhook_signature
from billingkit.providers.razorpay_api import HttpAnswer
from billingkit.testing.razorpay_fake import RazorpayFake

PENDING, SUCCEEDED, FAILED = ProviderPaymentStatus
D = Decimal


@pytest.fixture
def fake() -> Iterator[RazorpayFake]:
    with RazorpayFake() as server:
        yield server


def charge(
    key: str = "inv_1-pay", amount: str = "12.50", currency: str = "usd", **metadata: str
) -> PaymentRequest:
    return PaymentRequest(
        idempotency_key=key,
        amount=D(amount),
        currency=currency,
        customer_id="cust_bk_1",
        payment_method_id="token_F0000000000001",
        description="Invoice INV-1",
        metadata=metadata,
    )


def checkout(key: str = "inv_1-link", amount: str = "30.00") -> PaymentRequest:
    return PaymentRequest(idempotency_key=key, amount=D(amount), currency="inr", customer_id="cust_bk_1")


def calls(fake: RazorpayFake) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in fake.requests]


# -- the wire format ----------------------------------------------------------------------------------
def test_a_saved_token_is_charged_as_an_order_then_a_recurring_payment(fake: RazorpayFake) -> None:
    provider = fake.provider()
    payment = provider.create_payment(
        charge(
            razorpay_customer_id="cust_F0000000000042",
            email="ada@example.com",
            contact="+919000090000",
            po="77",
        )
    )
    assert (payment.provider, payment.status, payment.amount, payment.currency) == (
        "razorpay",
        SUCCEEDED,
        D("12.50"),
        "usd",
    )
    assert payment.provider_payment_id.startswith("pay_")
    assert calls(fake) == [
        ("GET", "/v1/payment_links"),
        ("GET", "/v1/orders"),
        ("POST", "/v1/orders"),
        ("POST", "/v1/payments/create/recurring"),
        ("GET", f"/v1/payments/{payment.provider_payment_id}"),
    ]
    lookup_link, lookup_order, order, recurring, _read = fake.requests
    assert all(r.authorized for r in fake.requests)
    assert lookup_link.query == {"reference_id": "inv_1-pay"}
    assert lookup_order.query == {"receipt": "inv_1-pay"}
    notes = order.body["notes"]
    assert order.body == {
        "amount": 1250,
        "currency": "USD",
        "receipt": "inv_1-pay",
        "notes": {
            "po": "77",
            "billingkit_idempotency_key": "inv_1-pay",
            "billingkit_request": notes["billingkit_request"],
        },
        "payment_capture": True,
    }
    assert len(notes["billingkit_request"]) == 32
    order_id = next(iter(fake.orders))
    assert recurring.body == {
        "amount": 1250,
        "currency": "USD",
        "order_id": order_id,
        "customer_id": "cust_F0000000000042",
        "token": "token_F0000000000001",
        "recurring": "1",
        "description": "Invoice INV-1",
        "notes": notes,
        "email": "ada@example.com",
        "contact": "+919000090000",
    }
    stored = fake.payments[payment.provider_payment_id]
    assert (stored["status"], stored["order_id"], stored["amount"]) == ("captured", order_id, 1250)
    assert fake.orders[order_id]["status"] == "paid"


def test_the_customer_id_defaults_to_the_requests_and_minor_units_follow_the_currency(
    fake: RazorpayFake,
) -> None:
    fake.provider().create_payment(charge(amount="1234", currency="jpy"))
    recurring = next(r for r in fake.requests if r.path == "/v1/payments/create/recurring")
    assert (recurring.body["customer_id"], recurring.body["amount"], recurring.body["currency"]) == (
        "cust_bk_1",
        1234,
        "JPY",
    )
    assert "email" not in recurring.body


def test_without_a_method_the_customer_gets_a_payment_link(fake: RazorpayFake) -> None:
    provider = fake.provider()
    pending = provider.create_payment(checkout())
    link = fake.links[pending.provider_payment_id]
    assert (pending.status, pending.checkout_url, pending.amount) == (PENDING, link["short_url"], D("30.00"))
    create = next(r for r in fake.requests if r.method == "POST")
    assert create.path == "/v1/payment_links"
    assert {k: create.body[k] for k in ("amount", "currency", "accept_partial", "reference_id")} == {
        "amount": 3000,
        "currency": "INR",
        "accept_partial": False,
        "reference_id": "inv_1-link",
    }
    assert not fake.orders and not fake.payments  # nothing is charged until the customer pays
    fake.pay_link(pending.provider_payment_id)
    assert provider.get_payment(pending.provider_payment_id).status is SUCCEEDED


@pytest.mark.parametrize(
    ("end", "reason"), [("expire_link", "payment_link_expired"), ("cancel_link", "payment_link_cancelled")]
)
def test_a_link_that_ends_unpaid_fails(fake: RazorpayFake, end: str, reason: str) -> None:
    provider = fake.provider()
    pending = provider.create_payment(checkout())
    getattr(fake, end)(pending.provider_payment_id)
    ended = provider.get_payment(pending.provider_payment_id)
    assert (ended.status, ended.failure_reason, ended.checkout_url) == (FAILED, reason, pending.checkout_url)


def test_a_declined_token_fails_with_razorpays_reason(fake: RazorpayFake) -> None:
    fake.decline_token("token_F0000000000001", reason="insufficient_funds", description="Not enough money.")
    failed = fake.provider().create_payment(charge())
    assert (failed.status, failed.failure_reason) == (FAILED, "insufficient_funds")
    assert fake.payments[failed.provider_payment_id]["error_description"] == "Not enough money."
    assert fake.orders[next(iter(fake.orders))]["status"] == "attempted"


def test_a_refund_is_sent_in_minor_units_with_the_key_as_receipt(fake: RazorpayFake) -> None:
    provider = fake.provider()
    payment = provider.create_payment(charge())
    refund = provider.refund_payment(
        RefundRequest("cn_1", payment.provider_payment_id, D("2.50"), "usd", reason="duplicate")
    )
    post = fake.requests[-1]
    assert (post.method, post.path) == ("POST", f"/v1/payments/{payment.provider_payment_id}/refund")
    assert {k: post.body[k] for k in ("amount", "speed", "receipt")} == {
        "amount": 250,
        "speed": "normal",
        "receipt": "cn_1",
    }
    assert post.body["notes"]["reason"] == "duplicate"
    assert (refund.provider_refund_id, refund.amount, refund.status) == (
        next(iter(fake.refunds)),
        D("2.50"),
        SUCCEEDED,
    )
    stored = fake.payments[payment.provider_payment_id]
    assert (stored["amount_refunded"], stored["refund_status"], stored["status"]) == (
        250,
        "partial",
        "captured",
    )


def test_a_paid_link_is_refunded_through_the_payment_that_paid_it(fake: RazorpayFake) -> None:
    provider = fake.provider()
    pending = provider.create_payment(checkout())
    paid = fake.pay_link(pending.provider_payment_id)
    refund = provider.refund_payment(RefundRequest("cn_2", pending.provider_payment_id, D("30.00"), "inr"))
    assert (refund.provider_payment_id, refund.amount) == (pending.provider_payment_id, D("30.00"))
    assert fake.refunds[refund.provider_refund_id]["payment_id"] == paid["id"]
    assert fake.payments[paid["id"]]["status"] == "refunded"
    assert provider.get_payment(pending.provider_payment_id).status is SUCCEEDED  # a refund is its own record


# -- idempotency: retries after a lost answer -----------------------------------------------------------
def test_a_lost_answer_to_the_charge_is_found_on_retry_and_charged_once(fake: RazorpayFake) -> None:
    provider = fake.provider()
    fake.drop_answer("POST", "/v1/payments/create/recurring")
    with pytest.raises(ServiceUnavailable, match="retry with the same idempotency key"):
        provider.create_payment(charge())
    assert len(fake.payments) == 1  # Razorpay did charge; the answer was lost
    again = provider.create_payment(charge())
    assert again.provider_payment_id == next(iter(fake.payments))
    assert (again.status, again.idempotency_key) == (SUCCEEDED, "inv_1-pay")
    assert (len(fake.orders), len(fake.payments)) == (1, 1)
    assert [c for c in calls(fake) if c[0] == "POST"] == [
        ("POST", "/v1/orders"),
        ("POST", "/v1/payments/create/recurring"),
    ]


def test_a_lost_answer_to_the_order_reuses_the_order(fake: RazorpayFake) -> None:
    provider = fake.provider()
    fake.drop_answer("POST", "/v1/orders")
    with pytest.raises(ServiceUnavailable):
        provider.create_payment(charge())
    payment = provider.create_payment(charge())
    assert (len(fake.orders), len(fake.payments)) == (1, 1)
    assert fake.payments[payment.provider_payment_id]["order_id"] == next(iter(fake.orders))


def test_a_lost_answer_to_the_link_finds_the_link(fake: RazorpayFake) -> None:
    provider = fake.provider()
    fake.drop_answer("POST", "/v1/payment_links")
    with pytest.raises(ServiceUnavailable):
        provider.create_payment(checkout())
    pending = provider.create_payment(checkout())
    assert list(fake.links) == [pending.provider_payment_id]


def test_a_link_made_between_lookup_and_create_is_taken_not_duplicated(
    fake: RazorpayFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Razorpay keeps reference_id unique: the create is refused and the existing link answers."""
    provider, racer = fake.provider(), fake.provider()
    real_find = provider._find_link
    raced: list[Any] = []

    def find_then_race(reference: str, notes: Mapping[str, str]) -> Any:
        if not raced:  # another attempt with the same key makes the link right after our lookup
            raced.append(racer.create_payment(checkout()))
            return None
        return real_find(reference, notes)

    monkeypatch.setattr(provider, "_find_link", find_then_race)
    assert provider.create_payment(checkout()) == raced[0]
    assert len(fake.links) == 1
    assert [r.status for r in fake.requests if r.method == "POST"] == [200, 400]


def test_a_lost_answer_to_the_refund_is_found_on_retry_and_refunded_once(fake: RazorpayFake) -> None:
    provider = fake.provider()
    payment = provider.create_payment(charge())
    request = RefundRequest("cn_1", payment.provider_payment_id, D("5.00"), "usd")
    fake.drop_answer("POST", f"/v1/payments/{payment.provider_payment_id}/refund")
    with pytest.raises(ServiceUnavailable):
        provider.refund_payment(request)
    refund = provider.refund_payment(request)
    assert list(fake.refunds) == [refund.provider_refund_id]
    assert fake.payments[payment.provider_payment_id]["amount_refunded"] == 500


def test_a_server_error_charges_nothing_and_the_retry_charges_once(fake: RazorpayFake) -> None:
    provider = fake.provider()
    fake.fail_next("POST", "/v1/payments/create/recurring", status=503)
    with pytest.raises(ServiceUnavailable) as unavailable:
        provider.create_payment(charge())
    assert unavailable.value.details == {
        "provider": "razorpay",
        "status": 503,
        "provider_code": "SERVER_ERROR",
        "provider_reason": "NA",
    }
    assert not fake.payments
    assert provider.create_payment(charge()).status is SUCCEEDED
    assert (len(fake.orders), len(fake.payments)) == (1, 1)


def test_a_long_key_travels_as_its_hash(fake: RazorpayFake) -> None:
    key = "tenant_01J0000000000000000000000:invoice_01J0000000000000000000:pay:" + "x" * 300
    reference = idempotency_reference(key)
    assert reference == "bk_" + hashlib.sha256(key.encode()).hexdigest()[:37]
    assert len(reference) == 40 and idempotency_reference(key) == reference
    assert idempotency_reference("short-key") == "short-key"
    assert idempotency_reference("clé-non-ascii") != "clé-non-ascii"
    provider = fake.provider()
    first = provider.create_payment(charge(key))
    assert provider.create_payment(charge(key)) == first
    order = next(iter(fake.orders.values()))
    assert order["receipt"] == reference
    assert "billingkit_idempotency_key" not in order["notes"]  # above Razorpay's 256 characters


def test_one_key_used_for_another_request_is_a_conflict_and_sends_nothing_new(fake: RazorpayFake) -> None:
    provider = fake.provider()
    provider.create_payment(charge())
    posts = len([r for r in fake.requests if r.method == "POST"])
    with pytest.raises(IdempotencyConflict, match="inv_1-pay"):
        provider.create_payment(charge(amount="99.00"))
    with pytest.raises(IdempotencyConflict):
        provider.create_payment(checkout("inv_1-pay", "12.50"))
    assert len([r for r in fake.requests if r.method == "POST"]) == posts


# -- errors ---------------------------------------------------------------------------------------------
def test_a_refused_field_is_a_validation_error_with_razorpays_words(fake: RazorpayFake) -> None:
    with pytest.raises(ValidationError) as refused:
        fake.provider().create_payment(charge(amount="0.50"))
    assert refused.value.field == "amount"
    assert refused.value.message == "Razorpay refused POST /v1/orders: The amount must be at least USD 1.00"
    assert refused.value.details["provider_reason"] == "input_validation_failed"
    assert not fake.orders


def test_amounts_and_metadata_razorpay_cannot_keep_are_refused_before_any_call(fake: RazorpayFake) -> None:
    provider = fake.provider()
    with pytest.raises(ValidationError) as fine:
        provider.create_payment(charge(amount="12.505"))
    assert fine.value.field == "amount"
    with pytest.raises(ValidationError) as many:
        provider.create_payment(charge(**{f"k{i}": "v" for i in range(14)}))
    assert many.value.field == "metadata"
    with pytest.raises(ValidationError):
        provider.create_payment(charge(note="x" * 257))
    assert fake.requests == []


def test_unknown_ids_and_unpaid_payments(fake: RazorpayFake) -> None:
    provider = fake.provider()
    for unknown in ("pay_F9999999999999", "plink_F9999999999999", "../orders"):
        with pytest.raises(NotFound, match=r"The id provided does not exist|was not found"):
            provider.get_payment(unknown)
    pending = provider.create_payment(checkout())
    with pytest.raises(InvalidOperation, match="only a paid link is refunded"):
        provider.refund_payment(RefundRequest("cn_x", pending.provider_payment_id, D("1.00"), "inr"))


def test_a_wrong_key_pair_is_a_configuration_error_that_never_shows_the_secret(fake: RazorpayFake) -> None:
    provider = RazorpayPaymentProvider(fake.key_id, "wrong-secret-123", base_url=fake.base_url)
    with pytest.raises(ConfigurationError) as refused:
        provider.get_payment("pay_F0000000000001")
    shown = f"{refused.value} {refused.value.details} {refused.value!r} {provider!r} {provider.api!r}"
    assert "rzp_test_fake" in shown and "Authentication failed" in shown
    assert "wrong-secret-123" not in shown
    assert fake.requests[0].authorized is False


def test_no_answer_at_all_is_service_unavailable() -> None:
    def refused(
        method: str, url: str, *, headers: Mapping[str, str], body: bytes | None, timeout: float
    ) -> HttpAnswer:
        raise ConnectionRefusedError(111, "Connection refused")

    provider = RazorpayPaymentProvider("rzp_test_x", "s3cret-value", transport=refused)
    with pytest.raises(ServiceUnavailable) as down:
        provider.get_payment("pay_1")
    assert str(down.value) == (
        "Razorpay did not answer GET /v1/payments/pay_1 (ConnectionRefusedError); "
        "it may or may not have acted: retry with the same idempotency key"
    )
    with pytest.raises(ValidationError):
        RazorpayPaymentProvider("rzp_test_x", "s", timeout=0)
    with pytest.raises(ConfigurationError):
        RazorpayPaymentProvider("", "s")


# -- status mapping (canned answers through an injected transport) -----------------------------------------
class Canned:
    """A transport answering every GET with one entity, recording what it was asked."""

    def __init__(self, entity: dict[str, Any]) -> None:
        self.entity, self.asked = entity, []

    def __call__(
        self, method: str, url: str, *, headers: Mapping[str, str], body: bytes | None, timeout: float
    ) -> HttpAnswer:
        self.asked.append((method, url, headers["Authorization"], timeout))
        return HttpAnswer(200, json.dumps(self.entity).encode())


@pytest.mark.parametrize(
    ("status", "expected", "reason"),
    [
        ("created", PENDING, None),
        ("authorized", PENDING, None),
        ("captured", SUCCEEDED, None),
        ("refunded", SUCCEEDED, None),
        ("failed", FAILED, "payment_failed"),
        ("something_new", PENDING, None),
    ],
)
def test_payment_statuses(status: str, expected: ProviderPaymentStatus, reason: str | None) -> None:
    entity = {
        "id": "pay_1",
        "entity": "payment",
        "amount": 500100,
        "currency": "INR",
        "status": status,
        "notes": {"billingkit_idempotency_key": "k"},
        "error_reason": "payment_failed" if status == "failed" else None,
    }
    transport = Canned(entity)
    payment = RazorpayPaymentProvider("rzp_test_x", "secret", transport=transport, timeout=7).get_payment(
        "pay_1"
    )
    assert (
        payment.status,
        payment.failure_reason,
        payment.amount,
        payment.currency,
        payment.idempotency_key,
    ) == (
        expected,
        reason,
        D("5001.00"),
        "inr",
        "k",
    )
    assert transport.asked == [
        ("GET", "https://api.razorpay.com/v1/payments/pay_1", "Basic cnpwX3Rlc3RfeDpzZWNyZXQ=", 7)
    ]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("created", PENDING),
        ("partially_paid", PENDING),
        ("paid", SUCCEEDED),
        ("expired", FAILED),
        ("cancelled", FAILED),
    ],
)
def test_link_statuses(status: str, expected: ProviderPaymentStatus) -> None:
    entity = {
        "id": "plink_1",
        "amount": 1000,
        "currency": "USD",
        "status": status,
        "notes": [],
        "short_url": "https://rzp.io/i/x",
    }
    link = RazorpayPaymentProvider("rzp_test_x", "secret", transport=Canned(entity)).get_payment("plink_1")
    assert (link.status, link.checkout_url, link.amount, link.idempotency_key) == (
        expected,
        "https://rzp.io/i/x",
        D("10.00"),
        "",
    )


# -- webhooks -------------------------------------------------------------------------------------------
def test_webhook_signatures() -> None:
    body = b'{"event":"payment.captured"}'
    signature = sign_webhook(body, "whsec")
    # computed independently: printf '%s' "$body" | openssl dgst -sha256 -hmac whsec
    assert signature == "4673dd707ef4c41b987cb7fefe1583142dc702388c93145b7814b9ad3d3c183e"
    assert verify_webhook_signature(body, signature, "whsec")
    assert verify_webhook_signature(body, signature.upper(), "whsec")  # hex digits in either case
    assert not verify_webhook_signature(body + b" ", signature, "whsec")  # the raw bytes, exactly
    assert not verify_webhook_signature(body, signature, "other")
    assert not verify_webhook_signature(body, "", "whsec")
    assert not verify_webhook_signature(body, signature, "")


def test_the_fake_signs_webhooks_as_razorpay_does(fake: RazorpayFake) -> None:
    provider = fake.provider()
    pending = provider.create_payment(checkout())
    paid = fake.pay_link(pending.provider_payment_id)
    delivery = fake.webhook("payment_link.paid", pending.provider_payment_id)
    assert provider.verify_webhook(delivery.body, delivery.headers["X-Razorpay-Signature"])
    assert not provider.verify_webhook(
        delivery.body.replace(b"paid", b"PAID"), delivery.headers["X-Razorpay-Signature"]
    )
    event = json.loads(delivery.body)
    assert (event["entity"], event["event"], event["contains"]) == (
        "event",
        "payment_link.paid",
        ["payment_link", "order", "payment"],
    )
    assert event["payload"]["payment_link"]["entity"]["status"] == "paid"
    assert event["payload"]["payment"]["entity"]["id"] == paid["id"]
    assert event["payload"]["payment_link"]["entity"]["notes"]["billingkit_idempotency_key"] == "inv_1-link"
    assert delivery.headers["X-Razorpay-Event-Id"].startswith("evt_")
    with pytest.raises(ConfigurationError):
        RazorpayPaymentProvider("rzp_test_x", "secret").verify_webhook(delivery.body, "sig")


# -- configuration ------------------------------------------------------------------------------------------
def test_configuration_from_the_environment() -> None:
    assert RazorpayPaymentProvider.from_env({}) is None
    assert (
        RazorpayPaymentProvider.from_env(
            {"BILLINGKIT_RAZORPAY_KEY_ID": "", "BILLINGKIT_RAZORPAY_KEY_SECRET": ""}
        )
        is None
    )
    provider = RazorpayPaymentProvider.from_env(
        {
            "BILLINGKIT_RAZORPAY_KEY_ID": "rzp_live_1",
            "BILLINGKIT_RAZORPAY_KEY_SECRET": "topsecret",
            "BILLINGKIT_RAZORPAY_BASE_URL": "http://127.0.0.1:9/",
            "BILLINGKIT_RAZORPAY_WEBHOOK_SECRET": "whsec",
        }
    )
    assert provider is not None
    assert repr(provider) == "RazorpayPaymentProvider(key_id='rzp_live_1', base_url='http://127.0.0.1:9')"
    assert provider.verify_webhook(b"x", sign_webhook(b"x", "whsec"))
    with pytest.raises(ConfigurationError, match="BILLINGKIT_RAZORPAY_KEY_SECRET is not set"):
        RazorpayPaymentProvider.from_env({"BILLINGKIT_RAZORPAY_KEY_ID": "rzp_live_1"})
    with pytest.raises(ConfigurationError, match="BILLINGKIT_RAZORPAY_KEY_ID is not set"):
        RazorpayPaymentProvider.from_env({"BILLINGKIT_RAZORPAY_KEY_SECRET": "topsecret"})


def test_billing_from_env_pays_through_razorpay_when_configured(fake: RazorpayFake) -> None:
    env = {
        "BILLINGKIT_TOKEN_SECRET": "s",
        "BILLINGKIT_RAZORPAY_KEY_ID": fake.key_id,
        "BILLINGKIT_RAZORPAY_KEY_SECRET": fake.key_secret,
        "BILLINGKIT_RAZORPAY_BASE_URL": fake.base_url,
    }
    billing = Billing.from_env(env)
    provider = billing.providers.payment_provider
    assert isinstance(provider, RazorpayPaymentProvider)
    assert provider.create_payment(charge()).status is SUCCEEDED
    billing.close()
    sandboxed = Billing.from_env({"BILLINGKIT_TOKEN_SECRET": "s"})
    assert isinstance(sandboxed.providers.payment_provider, SandboxPaymentProvider)
    sandboxed.close()
