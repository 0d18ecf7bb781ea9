"""Checkout sessions paid through Razorpay, on every store, against the local Razorpay fake (its
documented request and answer bodies, its signed webhooks): the payment link asked for, a webhook
with a bad signature ignored, a good one applied once even when delivered twice at the same
time, links that end unpaid, and a link that expires before the session; then
``collection_method: charge_automatically``: the registration link (mandate) asked for, nothing
active before its ``payment.captured``, applied once, limits refused before anything is written.

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
from billingkit.testing.razorpay_fake import RazorpayFake, RazorpayWebhook
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

    def deliver_twice_at_once(self, hook: RazorpayWebhook) -> list[str]:
        """Deliver ``hook`` from two threads at the same time; what each delivery answered."""
        start = threading.Barrier(2)
        answers: list[str] = []
        errors: list[BaseException] = []

        def deliver() -> None:
            start.wait()
            try:
                answers.append(
                    self.s.checkout.razorpay_webhook(
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
        return answers

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
    answers = w.deliver_twice_at_once(hook)

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


# -- charge_automatically: a mandate ---------------------------------------------------------------
AUTH_LINKS = ("POST", "/v1/subscription_registration/auth_links")


def _mandate(w: World, **config: Any) -> CheckoutSession:
    return w.open(
        payment_provider_config={"collection_method": "charge_automatically", **config},
        success_url="https://shop.test/ok",
    )


def _registrations(fake: RazorpayFake) -> list[Any]:
    return [r.body for r in fake.requests if (r.method, r.path) == AUTH_LINKS]


def test_the_session_opens_a_registration_link_with_razorpays_documented_body(w: World) -> None:
    session = _mandate(w, payment_method="CARD", max_mandate_limit="100")

    (body,) = _registrations(w.fake)
    assert {k: v for k, v in body.items() if k != "notes"} == {
        "type": "link",
        "amount": 3000,
        "currency": "USD",
        "description": f"subscription to plan {w.plan_id}",
        "subscription_registration": {"method": "card", "max_amount": 10000},
        "receipt": f"checkout_{session.id}",
        "expire_by": int(session.expires_at.timestamp()),
        "sms_notify": False,
        "email_notify": False,
        "customer": {"name": "Ada"},
    }
    assert body["notes"]["checkout_session_id"] == session.id
    assert "name" not in body["notes"]
    (invoice,) = w.fake.invoices.values()
    assert session.checkout_status is CheckoutStatus.PENDING
    assert session.payment_action == {"type": "checkout_url", "url": invoice["short_url"]}
    assert session.provider_result["provider_session_id"] == invoice["id"]
    assert session.provider_result["provider_metadata"] == {
        "mandate_method": "card",
        "max_mandate_limit": "100",
    }
    # No one-off payment link: the mandate is the only place to pay.
    assert not [r for r in w.fake.requests if r.path.startswith("/v1/payment_links")]


def test_nothing_is_active_before_the_webhook(w: World) -> None:
    session = _mandate(w)
    w.fake.authorise_mandate(session.provider_result["provider_session_id"])
    # The customer paid at Razorpay, but billingkit has heard nothing yet.
    assert w.s.checkout.get(session.id).checkout_status is CheckoutStatus.PENDING
    assert (
        w.s.subscriptions.get(session.subscription_id or "").subscription_status is SubscriptionStatus.DRAFT
    )
    assert w.s.payments.get(session.payment_id or "").payment_status is PaymentStatus.INITIATED
    # The limit defaults to the first payment.
    (body,) = _registrations(w.fake)
    assert body["subscription_registration"] == {"method": "card", "max_amount": 3000}


@pytest.mark.parametrize(("asked", "registered"), [("20000", 1_500_000), (None, 3000)])
def test_a_upi_mandate_is_capped(w: World, asked: str | None, registered: int) -> None:
    config = {"payment_method": "UPI"} | ({"max_mandate_limit": asked} if asked else {})
    _mandate(w, **config)
    (body,) = _registrations(w.fake)
    assert body["subscription_registration"] == {"method": "upi", "max_amount": registered}


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"max_mandate_limit": "29.99"}, "payment_provider_config.max_mandate_limit"),
        ({"payment_method": "PAYMENT_LINK"}, "payment_provider_config.payment_method"),
    ],
)
def test_a_mandate_that_cannot_hold_the_first_payment_is_refused_before_anything_is_written(
    w: World, config: dict[str, str], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        _mandate(w, **config)
    assert caught.value.field == field
    assert w.s.subscriptions.list().items == []
    assert _registrations(w.fake) == []


def test_the_mandates_payment_captured_applies_once_and_a_bad_signature_is_ignored(w: World) -> None:
    session = _mandate(w)
    payment = w.fake.authorise_mandate(session.provider_result["provider_session_id"])
    assert payment["token_id"].startswith("token_") and payment["invoice_id"] == session.provider_session_id

    assert w.deliver("payment.captured", payment["id"], signature="f" * 64) == (
        "ignored: the signature does not match"
    )
    assert w.s.checkout.get(session.id).checkout_status is CheckoutStatus.PENDING

    assert w.deliver("payment.captured", payment["id"]) == "applied"
    done = w.s.checkout.get(session.id)
    assert (done.checkout_status, done.checkout_payment_id) == (CheckoutStatus.COMPLETED, session.payment_id)
    assert done.provider_result["provider_payment_intent_id"] == payment["id"]
    assert done.provider_result["provider_metadata"] == {
        "mandate_method": "card",
        "max_mandate_limit": "30.00",
        "event_id": done.provider_result["provider_metadata"]["event_id"],
        "token_id": payment["token_id"],
        "razorpay_customer_id": payment["customer_id"],
    }
    assert (
        w.s.subscriptions.get(session.subscription_id or "").subscription_status is SubscriptionStatus.ACTIVE
    )
    paid = w.s.payments.get(session.payment_id or "")
    assert (paid.payment_status, [a.gateway_attempt_id for a in paid.attempts]) == (
        PaymentStatus.SUCCEEDED,
        [payment["id"]],
    )
    assert (
        w.deliver("payment.captured", payment["id"]) == f"ignored: checkout session {session.id} is completed"
    )
    assert len(w.s.notifications.list(event_type="checkout.session.completed").items) == 1


def test_a_payment_without_notes_is_found_by_its_registration_link(w: World) -> None:
    session = _mandate(w)
    payment = w.fake.authorise_mandate(session.provider_result["provider_session_id"])
    w.fake.payments[payment["id"]]["notes"] = []  # Razorpay answers empty notes as []
    assert w.deliver("payment.captured", payment["id"]) == "applied"
    assert w.s.checkout.get(session.id).checkout_status is CheckoutStatus.COMPLETED


def test_the_mandates_webhook_delivered_twice_at_once_is_applied_once(w: World) -> None:
    session = _mandate(w)
    payment = w.fake.authorise_mandate(session.provider_result["provider_session_id"])
    hook = w.fake.webhook("payment.captured", payment["id"])
    answers = w.deliver_twice_at_once(hook)

    assert sorted(answers) == ["applied", f"ignored: checkout session {session.id} is completed"]
    assert len(w.s.notifications.list(event_type="subscription.activated").items) == 1
    invoice = w.s.invoices.get(session.invoice_id or "")
    assert (invoice.amount_paid, invoice.payment_status) == (Decimal("30.00"), PaymentStatus.SUCCEEDED)
    assert len(w.s.payments.get(session.payment_id or "").attempts) == 1


def test_a_retried_registration_link_is_found_not_made_twice(fake: RazorpayFake) -> None:
    provider = fake.provider()
    request = PaymentRequest(
        idempotency_key="checkout_cs_1",
        amount=Decimal("30"),
        currency="usd",
        customer_id="cus_1",
        description="plan",
        metadata={"name": "Ada", "checkout_session_id": "cs_1"},
        expires_at=NOW,
    )
    first = provider.create_mandate_link(request, max_amount=Decimal("50"), method="card")
    again = provider.create_mandate_link(request, max_amount=Decimal("50"), method="card")
    assert (again.provider_payment_id, again.checkout_url) == (first.provider_payment_id, first.checkout_url)
    assert len(_registrations(fake)) == 1
    assert provider.get_payment(first.provider_payment_id).status.value == "pending"
