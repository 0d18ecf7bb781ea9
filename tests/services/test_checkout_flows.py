"""The pay-first quantity change (``modify_subscription`` checkout sessions) through the library,
on every store: nothing changes before the payment; paid, the change is applied once and the
invoice the customer paid is its settlement invoice; declined or expired, nothing is left but
archived records; a change that charges nothing is refused; Razorpay's webhook delivered twice
at once applies it once.

The clock starts at 2026-05-01 09:30 UTC. The subscription has 2 seats at 30.00 usd a month in
advance, and the customer pays 10% VAT. The change to 4 seats is made half-way through the
31-day period (15 days 12 hours in): charge 120.00 x 1/2 = 60.00, credit 60.00 x 1/2 = 30.00, net
30.00, VAT 3.00, so the checkout invoice is 33.00.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, Scoped, TestClock, ValidationError
from billingkit.domain.checkout_sessions import CheckoutAction, CheckoutStatus
from billingkit.domain.invoices import BillingReason, Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription
from billingkit.services.subscription_modify import SubscriptionModifyResult
from billingkit.testing.razorpay_fake import RazorpayFake
from tests.checkout_world import checkout_plan, stored_rows, vat_customer

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
HALF_WAY = NOW + timedelta(days=15, hours=12)
D = Decimal


@dataclass
class World:
    s: Scoped
    billing: Billing
    clock: TestClock
    sub: Subscription

    @property
    def seat_line(self) -> str:
        return self.sub.line_items[0].id

    def change(
        self, quantity: str, checkout: dict[str, Any] | None = None, **more: Any
    ) -> SubscriptionModifyResult:
        return self.s.subscriptions.modify(
            self.sub.id,
            type="quantity_change",
            quantity_change_params={"line_items": [{"id": self.seat_line, "quantity": quantity, **more}]},
            checkout=checkout if checkout is not None else {"payment_provider": "sandbox"},
        )

    def rows(self, kind: str) -> list[Any]:
        return stored_rows(self.billing, self.s, kind)

    def updates(self) -> list[Invoice]:
        return [i for i in self.rows("invoices") if i.billing_reason is BillingReason.SUBSCRIPTION_UPDATE]

    def quantities(self) -> list[tuple[Decimal, datetime | None]]:
        sub = self.s.subscriptions.get(self.sub.id)
        return [(line.quantity, line.end_date) for line in sub.line_items]


@pytest.fixture
def w(test_env: Scoped, billing: Billing, clock: TestClock) -> World:
    customer = vat_customer(test_env)
    plan_id = checkout_plan(test_env)
    price = test_env.prices.list(plan_ids=[plan_id]).items[0]
    sub = test_env.subscriptions.create(
        customer_id=customer.id,
        plan_id=plan_id,
        currency="usd",
        billing_period="MONTHLY",
        override_line_items=[{"price_id": price.id, "quantity": "2"}],
    )
    clock.set(HALF_WAY)
    return World(test_env, billing, clock, sub)


def test_a_quantity_change_with_checkout_changes_nothing_until_paid_then_applies_once(w: World) -> None:
    before = w.quantities()
    answered = w.change("4", {"payment_provider": "sandbox", "idempotency_key": "seats-1"})

    session = answered.checkout_session
    assert session is not None
    assert (session.action, session.checkout_status) == (
        CheckoutAction.MODIFY_SUBSCRIPTION,
        CheckoutStatus.PENDING,
    )
    assert session.configuration == {
        "modify_subscription_params": {
            "subscription_id": w.sub.id,
            "line_item_modifications": [
                {"line_item_id": w.seat_line, "quantity": "4", "effective_date": "2026-05-16T21:30:00Z"}
            ],
        }
    }
    assert answered.to_dict()["checkout_session"]["id"] == session.id
    # Nothing changed: the same lines, no recorded change; a DRAFT invoice and an INITIATED payment.
    assert w.quantities() == before == [(D("2"), None)]
    assert answered.subscription.version == w.sub.version
    assert w.rows("subscription_changes") == []
    (draft,) = w.updates()
    assert (
        draft.invoice_status,
        draft.invoice_number,
        draft.subtotal,
        draft.total_tax,
        draft.amount_due,
    ) == (
        InvoiceStatus.DRAFT,
        None,
        D("30.00"),
        D("3.00"),
        D("33.00"),
    )
    assert [line.amount for line in draft.line_items] == [D("60.00"), D("-30.00")]
    payment = w.s.payments.get(session.payment_id or "")
    assert (payment.payment_status, payment.amount, payment.destination_id) == (
        PaymentStatus.INITIATED,
        D("33.00"),
        draft.id,
    )

    done = w.s.checkout.pay_sandbox(session.id)

    assert (done.checkout_status, done.checkout_invoice_id, done.checkout_payment_id) == (
        CheckoutStatus.COMPLETED,
        draft.id,
        payment.id,
    )
    assert w.quantities() == [(D("2"), HALF_WAY), (D("4"), None)]
    (paid,) = w.updates()  # the invoice the customer paid is the settlement: no second one
    assert paid.id == draft.id
    assert (paid.invoice_status, paid.payment_status, paid.amount_paid, paid.amount_due) == (
        InvoiceStatus.FINALIZED,
        PaymentStatus.SUCCEEDED,
        D("33.00"),
        D("33.00"),
    )
    assert paid.invoice_number is not None
    assert paid.billing_sequence == w.sub.billing_sequence + 1
    assert w.s.subscriptions.get(w.sub.id).billing_sequence == paid.billing_sequence
    (change,) = w.rows("subscription_changes")
    assert change.invoice_id == draft.id
    assert w.s.payments.get(payment.id).payment_status is PaymentStatus.SUCCEEDED

    # A second Pay finds the session completed: nothing applied twice.
    again = w.s.checkout.pay_sandbox(session.id)
    assert again.checkout_status is CheckoutStatus.COMPLETED
    assert w.quantities() == [(D("2"), HALF_WAY), (D("4"), None)]
    assert len(w.updates()) == 1 and len(w.rows("subscription_changes")) == 1


def test_a_declined_quantity_change_leaves_only_archived_records(w: World) -> None:
    session = w.change("4", effective_date=HALF_WAY).checkout_session
    assert session is not None

    failed = w.s.checkout.decline_sandbox(session.id)

    assert (failed.checkout_status, failed.failure_reason) == (CheckoutStatus.FAILED, "payment declined")
    assert w.quantities() == [(D("2"), None)]
    assert w.rows("subscription_changes") == []
    (archived,) = w.updates()
    assert (archived.status, archived.invoice_status, archived.idempotency_key) == (
        Status.ARCHIVED,
        InvoiceStatus.DRAFT,
        None,
    )
    (payment,) = [p for p in w.rows("payments") if p.id == session.payment_id]
    assert (payment.status, payment.payment_status) == (Status.ARCHIVED, PaymentStatus.FAILED)

    # The same change made afterwards without checkout is settled afresh (its own invoice).
    plain = w.s.subscriptions.modify(
        w.sub.id,
        type="quantity_change",
        quantity_change_params={
            "line_items": [{"id": w.seat_line, "quantity": "4", "effective_date": HALF_WAY}]
        },
    )
    assert plain.changed is not None
    (issued,) = plain.changed.invoices
    assert issued.id != archived.id and issued.invoice_status is InvoiceStatus.FINALIZED
    assert issued.total == D("33.00")


def test_the_worker_expires_an_open_quantity_change_and_nothing_changes(w: World) -> None:
    session = w.change("4").checkout_session
    assert session is not None

    w.clock.advance(timedelta(minutes=30))
    w.billing.run_due()

    expired = w.s.checkout.get(session.id)
    assert expired.checkout_status is CheckoutStatus.EXPIRED
    assert w.quantities() == [(D("2"), None)]
    assert [i.status for i in w.updates()] == [Status.ARCHIVED]


def test_a_change_that_charges_nothing_is_refused_and_writes_nothing(w: World) -> None:
    counts = {kind: len(w.rows(kind)) for kind in ("invoices", "payments", "checkout_sessions")}

    with pytest.raises(InvalidOperation, match="checkout requires a non-zero invoice"):
        w.change("1")  # a decrease credits the customer: nothing to pay

    assert {kind: len(w.rows(kind)) for kind in counts} == counts
    assert w.quantities() == [(D("2"), None)]


def test_checkout_goes_with_quantity_changes_only_and_a_preview_leaves_it_aside(w: World) -> None:
    with pytest.raises(ValidationError) as refused:
        w.s.subscriptions.modify(
            w.sub.id,
            type="trial_end",
            trial_end_params={"action": "immediate"},
            checkout={"payment_provider": "sandbox"},
        )
    assert refused.value.field == "checkout"

    preview = w.s.subscriptions.preview_modify(
        w.sub.id,
        type="quantity_change",
        quantity_change_params={"line_items": [{"id": w.seat_line, "quantity": "4"}]},
        checkout={"payment_provider": "sandbox"},
    )
    assert preview.checkout_session is None and preview.changed is not None
    assert [i.total for i in preview.changed.invoices] == [D("33.00")]
    assert w.rows("checkout_sessions") == [] and w.updates() == []


def test_razorpays_webhook_delivered_twice_at_once_applies_a_quantity_change_once(w: World) -> None:
    with RazorpayFake() as fake:
        own = Billing(w.billing.storage, w.clock, environment_providers={w.s.environment_id: fake.provider()})
        s = own.scope(w.s.tenant_id, w.s.environment_id)
        answered = s.subscriptions.modify(
            w.sub.id,
            type="quantity_change",
            quantity_change_params={"line_items": [{"id": w.seat_line, "quantity": "4"}]},
            checkout={"payment_provider": "razorpay"},
        )
        session = answered.checkout_session
        assert session is not None
        (create,) = [r for r in fake.requests if (r.method, r.path) == ("POST", "/v1/payment_links")]
        assert (create.body["amount"], create.body["currency"]) == (3300, "USD")
        assert create.body["description"] == f"quantity change of subscription {w.sub.id}"
        link_id = session.provider_result["provider_session_id"]
        payment = fake.pay_link(link_id)
        hook = fake.webhook("payment_link.paid", link_id)

        def deliver() -> str:
            return s.checkout.razorpay_webhook(
                hook.body,
                signature=hook.headers["X-Razorpay-Signature"],
                event_id=hook.headers["X-Razorpay-Event-Id"],
            )

        assert w.quantities() == [(D("2"), None)]  # the link is paid, the webhook has not come
        start = threading.Barrier(2)
        answers: list[str] = []

        def at_once() -> None:
            start.wait()
            answers.append(deliver())

        threads = [threading.Thread(target=at_once) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        ignored = f"ignored: checkout session {session.id} is completed"
        assert sorted(answers) == ["applied", ignored]  # delivered twice at once: applied once
        assert deliver() == ignored

    assert w.quantities() == [(D("2"), HALF_WAY), (D("4"), None)]
    (paid,) = w.updates()
    assert (paid.id, paid.payment_status, paid.amount_paid) == (
        session.invoice_id,
        PaymentStatus.SUCCEEDED,
        D("33.00"),
    )
    attempts = w.s.payments.get(session.payment_id or "").attempts
    assert [a.gateway_attempt_id for a in attempts] == [payment["id"]]
    assert len(w.rows("subscription_changes")) == 1
