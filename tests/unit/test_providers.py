"""The in-process outside parties behave as documented: the sandbox payment provider and the
memory webhook transport (the defaults of ``Billing`` and the test doubles of DESIGN §10.12)."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest

from billingkit import MemoryWebhookTransport, SandboxPaymentProvider
from billingkit.domain.gateways import (
    DeliveryResult,
    PaymentRequest,
    ProviderPaymentStatus,
    RefundRequest,
    WebhookRequest,
)
from billingkit.errors import IdempotencyConflict, InvalidOperation, NotFound, ValidationError

PENDING, SUCCEEDED, FAILED = ProviderPaymentStatus


def request(key: str = "k1", amount: str = "12.50", method: str | None = "pm_card") -> PaymentRequest:
    return PaymentRequest(
        idempotency_key=key,
        amount=Decimal(amount),
        currency="usd",
        customer_id="cust_1",
        payment_method_id=method,
    )


def test_a_payment_method_is_charged_at_once_and_the_declining_one_fails() -> None:
    sandbox = SandboxPaymentProvider()
    paid = sandbox.create_payment(request("k1"))
    declined = sandbox.create_payment(request("k2", method=SandboxPaymentProvider.DECLINED_METHOD))
    assert (paid.provider, paid.provider_payment_id, paid.status, paid.amount) == (
        "sandbox",
        "sbx_pay_000001",
        SUCCEEDED,
        Decimal("12.50"),
    )
    assert (paid.checkout_url, paid.failure_reason) == (None, None)
    assert (declined.provider_payment_id, declined.status, declined.failure_reason) == (
        "sbx_pay_000002",
        FAILED,
        "card_declined",
    )
    assert sandbox.get_payment("sbx_pay_000002") == declined


def test_without_a_payment_method_the_customer_pays_through_a_checkout_url_until_settled() -> None:
    sandbox = SandboxPaymentProvider()
    first = sandbox.create_payment(request("k1", method=None))
    second = sandbox.create_payment(request("k2", method=None))
    assert (first.status, first.checkout_url) == (
        PENDING,
        "https://sandbox.billingkit.invalid/checkout/sbx_pay_000001",
    )
    assert sandbox.settle(first.provider_payment_id).status is SUCCEEDED
    assert sandbox.get_payment(first.provider_payment_id).status is SUCCEEDED
    gave_up = sandbox.settle(second.provider_payment_id, succeeded=False)
    assert (gave_up.status, gave_up.failure_reason) == (FAILED, "checkout_abandoned")
    with pytest.raises(InvalidOperation, match="succeeded, not pending"):
        sandbox.settle(first.provider_payment_id)


def test_one_idempotency_key_is_one_payment_and_every_request_is_recorded() -> None:
    sandbox = SandboxPaymentProvider()
    first = sandbox.create_payment(request("k1", method=None))
    sandbox.settle(first.provider_payment_id)
    again = sandbox.create_payment(request("k1", method=None))
    assert again.provider_payment_id == first.provider_payment_id
    assert again.status is SUCCEEDED  # the payment as it stands now, not charged again
    with pytest.raises(IdempotencyConflict):
        sandbox.create_payment(request("k1", amount="99", method=None))
    assert [(r.idempotency_key, r.amount) for r in sandbox.requests] == [
        ("k1", Decimal("12.50")),
        ("k1", Decimal("12.50")),
        ("k1", Decimal("99")),
    ]
    assert sandbox.get_payment(first.provider_payment_id).amount == Decimal("12.50")


def test_unknown_payments_are_not_found_and_sandboxes_share_nothing() -> None:
    sandbox, other = SandboxPaymentProvider(), SandboxPaymentProvider()
    sandbox.create_payment(request())
    assert other.create_payment(request()).provider_payment_id == "sbx_pay_000001"  # deterministic ids
    for call in (lambda: other.get_payment("sbx_pay_000002"), lambda: other.settle("nope")):
        with pytest.raises(NotFound):
            call()


def test_concurrent_payments_get_distinct_ids() -> None:
    sandbox = SandboxPaymentProvider()
    threads = [
        threading.Thread(target=lambda i=i: [sandbox.create_payment(request(f"k{i}-{j}")) for j in range(50)])
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = {sandbox.get_payment(f"sbx_pay_{n:06d}").idempotency_key for n in range(1, 201)}
    assert len(ids) == 200


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"amount": Decimal(0)}, "amount"),
        ({"amount": Decimal("-1")}, "amount"),
        ({"amount": Decimal("NaN")}, "amount"),
        ({"amount": 12.5}, "amount"),
        ({"currency": "dollars"}, "currency"),
    ],
)
def test_a_payment_request_is_checked(fields: dict[str, object], field: str) -> None:
    values: dict[str, object] = {
        "idempotency_key": "k",
        "amount": Decimal("1"),
        "currency": "usd",
        "customer_id": "c",
    }
    with pytest.raises(ValidationError) as caught:
        PaymentRequest(**{**values, **fields})  # type: ignore[arg-type]
    assert caught.value.field == field


def hook(url: str = "https://a.test/hooks") -> WebhookRequest:
    return WebhookRequest(url=url, body=b'{"event_type":"customer.created"}', headers={"webhook-id": "msg_1"})


def test_the_memory_transport_keeps_each_delivery_and_answers_200_unless_told_otherwise() -> None:
    transport = MemoryWebhookTransport()
    transport.answer("https://down.test/hooks", status_code=None, error="connection refused")
    transport.answer("https://busy.test/hooks", status_code=503)
    results = [
        transport.deliver(hook(url))
        for url in ("https://a.test/hooks", "https://down.test/hooks", "https://busy.test/hooks")
    ]
    assert results == [DeliveryResult(200), DeliveryResult(None, "connection refused"), DeliveryResult(503)]
    assert [result.delivered for result in results] == [True, False, False]
    assert [(req.url, res) for req, res in transport.deliveries] == [
        ("https://a.test/hooks", DeliveryResult(200)),
        ("https://down.test/hooks", DeliveryResult(None, "connection refused")),
        ("https://busy.test/hooks", DeliveryResult(503)),
    ]
    assert transport.deliveries[0][0].headers == {"webhook-id": "msg_1"}
    transport.answer("https://busy.test/hooks")  # recovered
    assert transport.deliver(hook("https://busy.test/hooks")).delivered
    with pytest.raises(ValidationError) as caught:
        transport.answer("https://a.test/hooks", status_code=None)
    assert caught.value.field == "error"


def test_a_succeeded_payment_is_refunded_once_per_key_and_never_beyond_what_it_took() -> None:
    sandbox = SandboxPaymentProvider()
    paid = sandbox.create_payment(request("pay-r"))
    first = sandbox.refund_payment(RefundRequest("cn_1", paid.provider_payment_id, Decimal("7.00"), "usd"))
    assert (first.provider_refund_id, first.status, first.amount) == (
        "sbx_rfnd_000001",
        ProviderPaymentStatus.SUCCEEDED,
        Decimal("7.00"),
    )
    assert (
        sandbox.refund_payment(RefundRequest("cn_1", paid.provider_payment_id, Decimal("7.00"), "usd"))
        == first
    )
    with pytest.raises(IdempotencyConflict):
        sandbox.refund_payment(RefundRequest("cn_1", paid.provider_payment_id, Decimal("1.00"), "usd"))
    left = paid.amount - Decimal("7.00")
    with pytest.raises(InvalidOperation, match="cannot be"):
        sandbox.refund_payment(RefundRequest("cn_2", paid.provider_payment_id, left + Decimal("0.01"), "usd"))
    assert sandbox.refund_payment(RefundRequest("cn_3", paid.provider_payment_id, left, "usd")).amount == left
    pending = sandbox.create_payment(request("pay-p", method=None))
    with pytest.raises(InvalidOperation, match="only a succeeded payment"):
        sandbox.refund_payment(RefundRequest("cn_4", pending.provider_payment_id, Decimal("1.00"), "usd"))
    with pytest.raises(NotFound):
        sandbox.refund_payment(RefundRequest("cn_5", "sbx_pay_missing", Decimal("1.00"), "usd"))
    with pytest.raises(ValidationError):
        RefundRequest("cn_6", paid.provider_payment_id, Decimal("0"), "usd")
