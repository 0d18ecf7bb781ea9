"""Checkout sessions through the library, on every store: a create_subscription session paid
through the sandbox, declined, deleted, expired by the worker, its idempotency key, the zero
invoice refusal, and the pay-first ``POST /subscriptions`` with ``checkout``.

The clock starts at 2026-05-01 09:30 UTC; the plan charges 30.00 usd a month in advance and the
customer pays 10% VAT, so the first invoice is 33.00.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import AlreadyExists, Billing, InvalidOperation, NotFound, Scoped, TestClock, ValidationError
from billingkit.domain.checkout_sessions import CheckoutSession, CheckoutStatus
from billingkit.domain.invoices import InvoiceStatus, PaymentStatus
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import SubscriptionStatus
from tests.checkout_world import checkout_plan, stored_rows, subscription_params, vat_customer

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
KINDS = ("subscriptions", "invoices", "payments", "checkout_sessions")


@dataclass
class World:
    s: Scoped
    billing: Billing
    clock: TestClock
    plan_id: str
    customer_id: str

    def open(self, plan_id: str | None = None, **fields: Any) -> CheckoutSession:
        return self.s.checkout.create(
            customer_external_id="c1",
            action="create_subscription",
            configuration=subscription_params(plan_id or self.plan_id),
            **fields,
        )

    def rows(self, kind: str) -> list[Any]:
        return stored_rows(self.billing, self.s, kind)

    def counts(self) -> dict[str, int]:
        return {kind: len(self.rows(kind)) for kind in KINDS}

    def events(self, event_type: str) -> list[Any]:
        return self.s.notifications.list(event_type=event_type, limit=100).items


@pytest.fixture
def w(test_env: Scoped, billing: Billing, clock: TestClock) -> World:
    customer = vat_customer(test_env)
    plan_id = checkout_plan(test_env)
    return World(test_env, billing, clock, plan_id, customer.id)


def test_a_sandbox_session_activates_nothing_until_paid_then_completes(w: World) -> None:
    session = w.open(idempotency_key="order-1", success_url="https://shop.test/ok", metadata={"cart": "7"})

    assert (session.checkout_status, session.payment_provider) == (CheckoutStatus.PENDING, "sandbox")
    assert session.expires_at == NOW + timedelta(minutes=30)  # the sandbox's default lifetime
    scope = f"tenant_id={w.s.tenant_id}&environment_id={w.s.environment_id}"
    assert session.payment_action == {
        "type": "checkout_url",
        "url": f"/v1/checkout/sandbox/{session.id}?{scope}",
    }
    assert (session.checkout_invoice_id, session.checkout_payment_id, session.result) == (None, None, {})
    params = session.configuration["create_subscription_params"]
    assert params["plan_id"] == w.plan_id and params["subscription_id"] == session.subscription_id
    # Nothing is active before the payment: a draft, a DRAFT invoice (taxed), an INITIATED payment.
    (sub,) = w.rows("subscriptions")
    (invoice,) = w.rows("invoices")
    (payment,) = w.rows("payments")
    assert sub.subscription_status is SubscriptionStatus.DRAFT
    assert (invoice.invoice_status, invoice.subtotal, invoice.total_tax, invoice.amount_due) == (
        InvoiceStatus.DRAFT,
        Decimal("30.00"),
        Decimal("3.00"),
        Decimal("33.00"),
    )
    assert (payment.payment_status, payment.amount, payment.destination_id) == (
        PaymentStatus.INITIATED,
        Decimal("33.00"),
        invoice.id,
    )
    assert [e.entity_id for e in w.events("checkout.session.initiated")] == [session.id]

    w.clock.set(NOW + timedelta(minutes=5))
    done = w.s.checkout.pay_sandbox(session.id)

    assert (done.checkout_status, done.completed_at) == (CheckoutStatus.COMPLETED, NOW + timedelta(minutes=5))
    assert (done.checkout_invoice_id, done.checkout_payment_id) == (invoice.id, payment.id)
    assert done.result == {
        "create_subscription_result": {
            "invoice_id": invoice.id,
            "payment_id": payment.id,
            "subscription_id": sub.id,
        }
    }
    active = w.s.subscriptions.get(sub.id)
    assert (active.subscription_status, active.current_period_start) == (SubscriptionStatus.ACTIVE, NOW)
    paid = w.s.invoices.get(invoice.id)
    assert (paid.invoice_status, paid.payment_status, paid.amount_paid, paid.amount_remaining) == (
        InvoiceStatus.FINALIZED,
        PaymentStatus.SUCCEEDED,
        Decimal("33.00"),
        Decimal("0.00"),
    )
    assert paid.invoice_number is not None
    succeeded = w.s.payments.get(payment.id)
    assert succeeded.payment_status is PaymentStatus.SUCCEEDED
    assert [a.gateway_attempt_id for a in succeeded.attempts] == [f"sbx_pay_{session.id}"]
    assert [e.entity_id for e in w.events("checkout.session.completed")] == [session.id]
    assert (
        w.events("checkout.session.completed")[0].payload["checkout_session"]["checkout_status"]
        == "completed"
    )
    # Terminal: paying again applies nothing and answers the session as it stands.
    assert w.s.checkout.pay_sandbox(session.id) == done
    assert len(w.s.payments.get(payment.id).attempts) == 1
    assert len(w.events("checkout.session.completed")) == 1
    assert w.s.checkout.get(session.id) == done


def test_a_declined_payment_fails_the_session_and_leaves_only_archived_records(w: World) -> None:
    session = w.open(idempotency_key="order-2")
    failed = w.s.checkout.decline_sandbox(session.id)

    assert (failed.checkout_status, failed.failure_reason, failed.cancelled_at) == (
        CheckoutStatus.FAILED,
        "payment declined",
        NOW,
    )
    assert (failed.checkout_invoice_id, failed.checkout_payment_id) == (None, None)
    for kind in ("subscriptions", "invoices", "payments"):
        assert [row.status for row in w.rows(kind)] == [Status.ARCHIVED], kind
    (payment,) = w.rows("payments")
    assert (payment.payment_status, payment.error_message) == (PaymentStatus.FAILED, "payment declined")
    assert w.s.subscriptions.list().items == []
    assert [e.entity_id for e in w.events("checkout.session.failed")] == [session.id]
    # Ended: the key is free again, and a late Pay changes nothing.
    assert w.s.checkout.pay_sandbox(session.id).checkout_status is CheckoutStatus.FAILED
    again = w.open(idempotency_key="order-2")
    assert again.checkout_status is CheckoutStatus.PENDING


def test_an_open_idempotency_key_is_a_conflict_that_writes_nothing(w: World) -> None:
    w.open(idempotency_key="order-3")
    before = w.counts()
    with pytest.raises(AlreadyExists) as caught:
        w.open(idempotency_key="order-3")
    assert caught.value.http_status == 409 and caught.value.details["field"] == "idempotency_key"
    assert w.counts() == before
    assert w.open(idempotency_key="order-4").idempotency_key == "order-4"
    assert w.open().idempotency_key is None  # no key: no limit
    assert w.open().idempotency_key is None


def test_the_worker_expires_an_open_session_and_its_key_can_then_be_used_again(w: World) -> None:
    later = NOW + timedelta(minutes=10)
    session = w.open(idempotency_key="order-5", expires_at=later)
    assert session.expires_at == later

    w.clock.set(later - timedelta(seconds=1))
    w.billing.run_due()
    assert w.s.checkout.get(session.id).checkout_status is CheckoutStatus.PENDING

    w.clock.set(later)
    w.billing.run_due()
    expired = w.s.checkout.get(session.id)
    assert (expired.checkout_status, expired.cancelled_at, expired.failure_reason) == (
        CheckoutStatus.EXPIRED,
        later,
        None,
    )
    for kind in ("subscriptions", "invoices", "payments"):
        assert [row.status for row in w.rows(kind)] == [Status.ARCHIVED], kind
    assert [e.entity_id for e in w.events("checkout.session.expired")] == [session.id]
    w.billing.run_due()  # nothing is due any more
    assert len(w.events("checkout.session.expired")) == 1
    # A late Pay finds it ended; the key opens a new session.
    assert w.s.checkout.pay_sandbox(session.id).checkout_status is CheckoutStatus.EXPIRED
    assert w.open(idempotency_key="order-5").checkout_status is CheckoutStatus.PENDING


def test_pay_after_expires_at_expires_the_session_even_before_the_worker_runs(w: World) -> None:
    session = w.open()
    w.clock.set(session.expires_at)
    assert w.s.checkout.pay_sandbox(session.id).checkout_status is CheckoutStatus.EXPIRED
    assert w.s.subscriptions.list().items == []


def test_bad_requests_are_refused_before_anything_is_written(w: World) -> None:
    before = w.counts()
    with pytest.raises(ValidationError) as caught:
        w.open(expires_at=NOW)
    assert caught.value.field == "expires_at"
    with pytest.raises(ValidationError) as caught:
        w.open(payment_provider="stripe")
    assert caught.value.field == "payment_provider"
    with pytest.raises(ValidationError) as caught:
        w.s.checkout.create(customer_external_id="c1", action="create_subscription")
    assert caught.value.field == "configuration"
    with pytest.raises(ValidationError) as caught:
        w.s.checkout.create(customer_external_id="c1", action="wallet_topup")
    assert caught.value.field == "action"
    with pytest.raises(ValidationError) as caught:
        w.s.checkout.create(
            customer_external_id="nobody",
            action="create_subscription",
            configuration={
                "create_subscription_params": {
                    "plan_id": w.plan_id,
                    "currency": "usd",
                    "billing_period": "MONTHLY",
                }
            },
        )
    assert caught.value.field == "external_customer_id"
    assert w.counts() == before


def test_a_zero_first_invoice_is_refused(w: World) -> None:
    free = checkout_plan(w.s, amount="0")
    before = w.counts()
    with pytest.raises(InvalidOperation, match="checkout requires a non-zero invoice"):
        w.open(free)
    assert w.counts() == before


def test_deleting_an_open_session_fails_it_and_archives_it(w: World) -> None:
    session = w.open(idempotency_key="order-6")
    w.s.checkout.delete(session.id)
    with pytest.raises(NotFound):
        w.s.checkout.get(session.id)
    (stored,) = w.rows("checkout_sessions")
    assert (stored.status, stored.checkout_status, stored.failure_reason) == (
        Status.ARCHIVED,
        CheckoutStatus.FAILED,
        "checkout session deleted",
    )
    assert [row.status for row in w.rows("subscriptions")] == [Status.ARCHIVED]
    assert w.open(idempotency_key="order-6").checkout_status is CheckoutStatus.PENDING


def test_a_production_environment_takes_no_sandbox_payments(prod_env: Scoped) -> None:
    plan_id = checkout_plan(prod_env)
    prod_env.customers.create(external_id="c1", name="Ada")
    for provider in ("sandbox", None):  # None: the default there is Razorpay, not configured here
        with pytest.raises(ValidationError) as caught:
            prod_env.checkout.create(
                customer_external_id="c1",
                action="create_subscription",
                configuration=subscription_params(plan_id),
                payment_provider=provider,
            )
        assert caught.value.field == "payment_provider"
    assert prod_env.subscriptions.list().items == []


def test_a_subscription_created_with_checkout_is_a_draft_until_its_session_is_paid(w: World) -> None:
    sub = w.s.subscriptions.create(
        customer_id=w.customer_id,
        plan_id=w.plan_id,
        currency="usd",
        billing_period="MONTHLY",
        subscription_status="active",  # checkout makes it a draft whatever was asked
        checkout={"payment_provider": "sandbox", "idempotency_key": "sub-1"},
    )
    assert sub.subscription_status is SubscriptionStatus.DRAFT
    session = w.s.checkout.for_subscription(sub.id)
    assert (session.checkout_status, session.subscription_id, session.idempotency_key) == (
        CheckoutStatus.PENDING,
        sub.id,
        "sub-1",
    )
    w.s.checkout.pay_sandbox(session.id)
    assert w.s.subscriptions.get(sub.id).subscription_status is SubscriptionStatus.ACTIVE
    assert w.s.invoices.get(session.invoice_id or "").payment_status is PaymentStatus.SUCCEEDED


def test_a_checkout_top_up_lands_its_credits_only_once_paid(w: World) -> None:
    wallet = w.s.wallets.create(customer_id=w.customer_id, currency="usd")
    topped = w.s.wallets.top_up(
        wallet.id,
        credits_to_add="50",
        transaction_reason="PURCHASED_CREDIT_INVOICED",
        idempotency_key="topup-1",
        checkout={"payment_provider": "sandbox"},
    )
    session = topped.checkout_session
    assert session is not None and session.action.value == "wallet_topup"
    assert session.configuration == {
        "wallet_topup_params": {"wallet_id": wallet.id, "wallet_transaction_id": topped.wallet_transaction.id}
    }
    assert session.invoice_id == topped.invoice_id
    assert w.s.wallets.get(wallet.id).credit_balance == Decimal("0")  # nothing before the payment
    with pytest.raises(AlreadyExists) as caught:  # one open top-up session per wallet
        w.s.wallets.top_up(
            wallet.id,
            credits_to_add="5",
            transaction_reason="PURCHASED_CREDIT_INVOICED",
            checkout={"payment_provider": "sandbox"},
        )
    assert caught.value.details["field"] == "wallet_id"

    done = w.s.checkout.pay_sandbox(session.id)
    assert (done.checkout_status, done.checkout_invoice_id) == (CheckoutStatus.COMPLETED, topped.invoice_id)
    assert w.s.wallets.get(wallet.id).credit_balance == Decimal("50")
    assert w.s.invoices.get(topped.invoice_id or "").payment_status is PaymentStatus.SUCCEEDED

    declined = w.s.wallets.top_up(
        wallet.id,
        credits_to_add="20",
        transaction_reason="PURCHASED_CREDIT_INVOICED",
        idempotency_key="topup-2",
        checkout={"payment_provider": "sandbox"},
    )
    assert declined.checkout_session is not None
    w.s.checkout.decline_sandbox(declined.checkout_session.id)
    assert w.s.wallets.get(wallet.id).credit_balance == Decimal("50")  # the 20 never landed
    with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
        voided = uow.invoices.get(declined.invoice_id or "")
        assert (voided.invoice_status, voided.status) == (InvoiceStatus.VOIDED, Status.ARCHIVED)
        row = uow.wallet_transactions.get(declined.wallet_transaction.id)
        assert row.transaction_status.value == "failed"

    with pytest.raises(ValidationError) as refused:
        w.s.wallets.top_up(
            wallet.id,
            credits_to_add="5",
            transaction_reason="FREE_CREDIT_GRANT",
            checkout={"payment_provider": "sandbox"},
        )
    assert refused.value.field == "checkout"
