"""Checkout sessions paid through Razorpay, on every store, against the local Razorpay fake (its
documented request and answer bodies, its signed webhooks): the payment link asked for, a webhook
with a bad signature ignored, a good one applied once even when delivered twice at the same
time, links that end unpaid, and a link that expires before the session.

The clock starts at 2026-05-01 09:30 UTC; the first invoice is 30.00 usd.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock, ValidationError
from billingkit.domain.checkout_sessions import CheckoutSession, CheckoutStatus
from billingkit.domain.gateways import PaymentRequest, ProviderPayment
from billingkit.domain.invoices import PaymentStatus
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.providers import RazorpayPaymentProvider
from billingkit.services.access import BootstrapResult
from billingkit.testing.razorpay_fake import RazorpayFake
from tests.checkout_world import checkout_plan, subscription_params

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@dataclass
class World:
    s: Scoped
    billing: Billing
    clock: TestClock
    fake: RazorpayFake
    plan_id: str

    def open(self, **fields: Any) -> CheckoutSession:
        return self.s.checkout.create(
            customer_external_id="c1",
            action="create_subscription",
            configuration=subscription_params(self.plan_id),
            payment_provider="razorpay",
            **fields,
        )

    def deliver(self, event: str, entity_id: str, *, signature: str | None = None) -> str:
        hook = self.fake.webhook(event, entity_id)
        sent = hook.headers["X-Razorpay-Signature"] if signature is None else signature
        return self.s.checkout.razorpay_webhook(
            hook.body, signature=sent, event_id=hook.headers["X-Razorpay-Event-Id"]
        )


@pytest.fixture
def fake() -> Iterator[RazorpayFake]:
    with RazorpayFake() as started:
        yield started


def _world(
    billing: Billing, setup: BootstrapResult, clock: TestClock, provider: Any, fake: RazorpayFake
) -> World:
    environment_id = setup.environments[0][0].id
    # A second Billing on the same store, whose test environment has its own Razorpay account.
    own = Billing(billing.storage, clock, environment_providers={environment_id: provider})
    s = own.scope(setup.tenant.id, environment_id)
    plan_id = checkout_plan(s)
    s.customers.create(external_id="c1", name="Ada")
    return World(s, own, clock, fake, plan_id)


@pytest.fixture
def w(billing: Billing, setup: BootstrapResult, clock: TestClock, fake: RazorpayFake) -> World:
    return _world(billing, setup, clock, fake.provider(), fake)


def test_the_session_opens_a_payment_link_with_razorpays_documented_body(w: World) -> None:
    session = w.open(success_url="https://shop.test/ok")

    (create,) = [r for r in w.fake.requests if (r.method, r.path) == ("POST", "/v1/payment_links")]
    expires = NOW + timedelta(minutes=15)  # Razorpay's default lifetime
    assert create.authorized
    assert {k: v for k, v in create.body.items() if k != "notes"} == {
        "amount": 3000,
        "currency": "USD",
        "accept_partial": False,
        "reference_id": f"checkout_{session.id}",
        "description": f"subscription to plan {w.plan_id}",
        "expire_by": int(expires.timestamp()),
        "callback_url": "https://shop.test/ok",
        "callback_method": "get",
    }
    assert create.body["notes"]["checkout_session_id"] == session.id
    (link,) = w.fake.links.values()
    assert session.payment_action == {"type": "checkout_url", "url": link["short_url"]}
    assert (session.expires_at, session.provider_result["provider_session_id"]) == (expires, link["id"])
    assert session.provider_result["expires_at"] == "2026-05-01T09:45:00Z"


def test_a_webhook_with_a_bad_signature_is_ignored_and_a_good_one_applied(w: World) -> None:
    session = w.open()
    link_id = session.provider_result["provider_session_id"]
    payment = w.fake.pay_link(link_id)

    assert (
        w.deliver("payment_link.paid", link_id, signature="0" * 64) == "ignored: the signature does not match"
    )
    assert w.s.checkout.razorpay_webhook(b"{}", signature=None) == "ignored: the signature does not match"
    still = w.s.checkout.get(session.id)
    assert still.checkout_status is CheckoutStatus.PENDING
    assert (
        w.s.subscriptions.get(session.subscription_id or "").subscription_status is SubscriptionStatus.DRAFT
    )

    assert w.deliver("payment_link.paid", link_id) == "applied"
    done = w.s.checkout.get(session.id)
    assert (done.checkout_status, done.checkout_payment_id) == (CheckoutStatus.COMPLETED, session.payment_id)
    assert done.provider_result["provider_payment_intent_id"] == payment["id"]
    assert done.provider_result["provider_metadata"]["event_id"].startswith("evt_")
    assert (
        w.s.subscriptions.get(session.subscription_id or "").subscription_status is SubscriptionStatus.ACTIVE
    )
    paid = w.s.payments.get(session.payment_id or "")
    assert (paid.payment_status, paid.payment_gateway, [a.gateway_attempt_id for a in paid.attempts]) == (
        PaymentStatus.SUCCEEDED,
        "razorpay",
        [payment["id"]],
    )
    # The same event again: the session has ended, nothing is applied twice.
    assert w.deliver("payment_link.paid", link_id) == f"ignored: checkout session {session.id} is completed"
    assert len(w.s.payments.get(session.payment_id or "").attempts) == 1


def test_the_same_webhook_delivered_twice_at_once_is_applied_once(w: World) -> None:
    session = w.open()
    link_id = session.provider_result["provider_session_id"]
    w.fake.pay_link(link_id)
    hook = w.fake.webhook("payment_link.paid", link_id)
    start = threading.Barrier(2)
    answers: list[str] = []
    errors: list[BaseException] = []

    def deliver() -> None:
        start.wait()
        try:
            answers.append(
                w.s.checkout.razorpay_webhook(
                    hook.body,
                    signature=hook.headers["X-Razorpay-Signature"],
                    event_id=hook.headers["X-Razorpay-Event-Id"],
                )
            )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert sorted(answers) == ["applied", f"ignored: checkout session {session.id} is completed"]
    assert len(w.s.notifications.list(event_type="checkout.session.completed").items) == 1
    assert len(w.s.notifications.list(event_type="subscription.activated").items) == 1
    invoice = w.s.invoices.get(session.invoice_id or "")
    assert (invoice.amount_paid, invoice.payment_status) == (Decimal("30.00"), PaymentStatus.SUCCEEDED)
    assert len(w.s.payments.get(session.payment_id or "").attempts) == 1


@pytest.mark.parametrize(
    ("event", "end"), [("payment_link.expired", "expire"), ("payment_link.cancelled", "cancel")]
)
def test_a_link_that_ends_unpaid_fails_the_session(w: World, event: str, end: str) -> None:
    session = w.open()
    link_id = session.provider_result["provider_session_id"]
    getattr(w.fake, f"{end}_link")(link_id)
    assert w.deliver(event, link_id) == "applied"
    failed = w.s.checkout.get(session.id)
    word = event.split(".")[1]
    assert (failed.checkout_status, failed.failure_reason) == (CheckoutStatus.FAILED, f"payment link {word}")
    with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
        assert uow.subscriptions.get(session.subscription_id or "").status is Status.ARCHIVED
        assert uow.payments.get(session.payment_id or "").payment_status is PaymentStatus.FAILED


def test_an_event_about_no_session_changes_nothing(w: World) -> None:
    session = w.open()
    stray = w.fake.provider().create_payment(
        PaymentRequest(idempotency_key="stray", amount=Decimal("5"), currency="usd", customer_id="x")
    )
    w.fake.pay_link(stray.provider_payment_id)
    assert w.deliver("payment_link.paid", stray.provider_payment_id).startswith(
        "ignored: payment_link.paid is about"
    )
    assert w.s.checkout.get(session.id).checkout_status is CheckoutStatus.PENDING


class _ShortLinks:
    """Razorpay as seen through a link lifetime of 5 minutes: every link it opens expires then
    (what a provider that caps its links does), whatever was asked."""

    name = "razorpay"

    def __init__(self, inner: RazorpayPaymentProvider) -> None:
        self.inner = inner

    def create_payment(self, request: PaymentRequest) -> ProviderPayment:
        soon = NOW + timedelta(minutes=5)
        answer = self.inner.create_payment(request)
        return ProviderPayment(**{**{f: getattr(answer, f) for f in answer.__slots__}, "expires_at": soon})

    def get_payment(self, provider_payment_id: str) -> ProviderPayment:
        return self.inner.get_payment(provider_payment_id)

    def refund_payment(self, request: Any) -> Any:
        return self.inner.refund_payment(request)

    def verify_webhook(self, body: bytes, signature: str) -> bool:
        return self.inner.verify_webhook(body, signature)


def test_a_link_that_expires_before_the_session_moves_its_expiry(
    billing: Billing, setup: BootstrapResult, clock: TestClock, fake: RazorpayFake
) -> None:
    w = _world(billing, setup, clock, _ShortLinks(fake.provider()), fake)
    session = w.open(expires_at=NOW + timedelta(hours=1))
    assert session.expires_at == NOW + timedelta(minutes=5)
    w.clock.set(NOW + timedelta(minutes=5))
    w.billing.run_due()
    assert w.s.checkout.get(session.id).checkout_status is CheckoutStatus.EXPIRED


def test_a_mandate_for_automatic_charges_is_refused_before_anything_is_written(w: World) -> None:
    with pytest.raises(ValidationError) as caught:
        w.open(
            payment_provider_config={"collection_method": "charge_automatically", "payment_method": "CARD"}
        )
    assert caught.value.field == "payment_provider_config.collection_method"
    assert w.s.subscriptions.list().items == [] and w.fake.requests == []
