"""``payment_behavior`` on every store: which subscriptions start ``incomplete``, which are refused,
and how an ``incomplete`` one becomes ``active`` when its opening invoice is paid, by any route.

The ``clock`` fixture starts at 2026-05-01 09:30 UTC; the plan bills a 30.00 monthly fee in advance.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, Scoped, TestClock
from billingkit.domain.invoices import BillingReason, Invoice, PaymentStatus
from billingkit.domain.queries import ListQuery
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.providers.sandbox import SandboxPaymentProvider

DECLINED = SandboxPaymentProvider.DECLINED_METHOD


def at(month: int, day: int) -> datetime:
    return datetime(2026, month, day, 9, 30, tzinfo=UTC)


@dataclass
class World:
    s: Scoped
    clock: TestClock
    billing: Billing
    plan_id: str
    customer_id: str

    def subscribe(self, **fields: Any) -> Subscription:
        return self.s.subscriptions.create(
            customer_id=self.customer_id,
            plan_id=self.plan_id,
            currency="usd",
            billing_period="MONTHLY",
            **fields,
        )

    def opening(self, sub: Subscription) -> Invoice:
        (invoice,) = self.s.invoices.list(
            subscription_id=sub.id, billing_reason=BillingReason.SUBSCRIPTION_CREATE.value
        ).items
        return invoice

    def events(self, sub: Subscription) -> list[str]:
        return [e.event_type for e in self.s.notifications.list(entity_id=sub.id, limit=100).items]

    def count(self, kind: str) -> int:
        with self.billing.storage.unit_of_work(self.s.tenant_id, self.s.environment_id) as uow:
            return int(getattr(uow, kind).list(ListQuery(limit=1, status=None)).total)


@pytest.fixture
def w(test_env: Scoped, clock: TestClock, billing: Billing) -> World:
    fee = {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": "30",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
    }
    plan = test_env.plans.create(name="Pro", prices=[fee])
    customer = test_env.customers.create(external_id="c1", name="Ada")
    return World(test_env, clock, billing, plan.id, customer.id)


def _pay_offline(w: World, invoice: Invoice, amount: str) -> None:
    w.s.payments.create(
        amount=amount,
        currency="usd",
        destination_id=invoice.id,
        destination_type="INVOICE",
        payment_method_type="OFFLINE",
    )


def test_default_incomplete_waits_for_the_opening_invoice_then_activates(w: World) -> None:
    sub = w.subscribe(collection_method="send_invoice", payment_behavior="default_incomplete")
    assert sub.subscription_status is SubscriptionStatus.INCOMPLETE and sub.next_run_at is None
    opening = w.opening(sub)
    assert (str(opening.amount_due), opening.payment_status) == ("30.00", PaymentStatus.PENDING)
    assert w.count("payments") == 0  # send_invoice: nobody is charged
    assert w.events(sub) == ["subscription.created"]

    # Not billed while incomplete: the period end passes without an invoice.
    w.clock.set(at(6, 2))
    assert w.billing.run_due().invoices == []

    _pay_offline(w, opening, "10.00")  # a part payment is not enough
    assert w.s.subscriptions.get(sub.id).subscription_status is SubscriptionStatus.INCOMPLETE
    _pay_offline(w, opening, "20.00")
    active = w.s.subscriptions.get(sub.id)
    assert active.subscription_status is SubscriptionStatus.ACTIVE
    assert active.version == sub.version + 1
    assert active.next_run_at is not None and active.next_run_at <= at(6, 1)
    assert w.events(sub)[-1] == "subscription.activated"
    # Its billing catches up with the period that ended while it waited.
    report = w.billing.run_due()
    assert [(i.period_start, i.period_end, str(i.amount_due)) for i in report.invoices] == [
        (at(5, 1), at(6, 1), "30.00")
    ]


def test_a_hand_recorded_payment_activates_too(w: World) -> None:
    sub = w.subscribe(collection_method="send_invoice", payment_behavior="default_incomplete")
    w.s.invoices.update_payment(w.opening(sub).id, payment_status="SUCCEEDED", amount="30.00")
    assert w.s.subscriptions.get(sub.id).subscription_status is SubscriptionStatus.ACTIVE
    assert w.events(sub).count("subscription.activated") == 1
    # Paid again (an overpayment recorded later) changes nothing more.
    w.s.invoices.update_payment(w.opening(sub).id, payment_status="OVERPAID", amount="35.00")
    assert w.events(sub).count("subscription.activated") == 1


def test_an_opening_invoice_paid_by_prepaid_credits_starts_active(w: World) -> None:
    wallet = w.s.wallets.create(customer_id=w.customer_id, currency="usd", wallet_type="PRE_PAID")
    w.s.wallets.top_up(
        wallet.id, credits_to_add="50", transaction_reason="PURCHASED_CREDIT_DIRECT", idempotency_key="t1"
    )
    sub = w.subscribe(collection_method="send_invoice", payment_behavior="default_incomplete")
    assert sub.subscription_status is SubscriptionStatus.ACTIVE
    opening = w.opening(sub)
    assert (str(opening.amount_remaining), opening.payment_status) == ("0.00", PaymentStatus.SUCCEEDED)


def test_allow_incomplete_charges_the_card_and_starts_active_when_paid(w: World) -> None:
    sub = w.subscribe(payment_behavior="allow_incomplete", gateway_payment_method_id="pm_card_ok")
    assert sub.subscription_status is SubscriptionStatus.ACTIVE and sub.next_run_at is not None
    opening = w.opening(sub)
    assert (opening.payment_status, str(opening.amount_paid)) == (PaymentStatus.SUCCEEDED, "30.00")
    (payment,) = w.s.payments.list(destination_id=opening.id).items
    assert (payment.payment_method_type.value, payment.payment_method_id, payment.payment_status) == (
        "CARD",
        "pm_card_ok",
        PaymentStatus.SUCCEEDED,
    )
    assert "subscription.activated" not in w.events(sub)


def test_allow_incomplete_with_a_declined_card_or_no_method_is_incomplete(w: World) -> None:
    declined = w.subscribe(payment_behavior="allow_incomplete", gateway_payment_method_id=DECLINED)
    assert declined.subscription_status is SubscriptionStatus.INCOMPLETE
    opening = w.opening(declined)
    assert opening.payment_status is PaymentStatus.FAILED
    (payment,) = w.s.payments.list(destination_id=opening.id).items
    assert payment.payment_status is PaymentStatus.FAILED
    nothing = w.subscribe(payment_behavior="allow_incomplete")
    assert nothing.subscription_status is SubscriptionStatus.INCOMPLETE
    # Paid later with another method: active.
    _pay_offline(w, w.opening(nothing), "30.00")
    assert w.s.subscriptions.get(nothing.id).subscription_status is SubscriptionStatus.ACTIVE


def test_error_if_incomplete_refuses_a_subscription_whose_charge_fails(w: World) -> None:
    before = {kind: w.count(kind) for kind in ("subscriptions", "invoices", "payments", "notifications")}
    with pytest.raises(InvalidOperation) as caught:
        w.subscribe(payment_behavior="error_if_incomplete", gateway_payment_method_id=DECLINED)
    assert caught.value.details == {
        "field": "payment_behavior",
        "payment_status": "FAILED",
        "amount_remaining": "30.00",
    }
    assert "opening invoice (30.00 usd) was not paid" in caught.value.message
    assert {kind: w.count(kind) for kind in before} == before
    with pytest.raises(InvalidOperation):
        w.subscribe(payment_behavior="error_if_incomplete")  # no method to charge at all
    paid = w.subscribe(payment_behavior="error_if_incomplete", gateway_payment_method_id="pm_card_ok")
    assert paid.subscription_status is SubscriptionStatus.ACTIVE


def test_default_active_never_waits(w: World) -> None:
    sub = w.subscribe(payment_behavior="default_active", gateway_payment_method_id=DECLINED)
    assert sub.subscription_status is SubscriptionStatus.ACTIVE
    assert w.count("payments") == 0  # and nothing is charged at creation


def test_trials_and_drafts(w: World) -> None:
    trial = w.subscribe(payment_behavior="allow_incomplete", trial_period_days=7)
    assert trial.subscription_status is SubscriptionStatus.TRIALING
    draft = w.subscribe(
        subscription_status="draft",
        payment_behavior="error_if_incomplete",
        gateway_payment_method_id=DECLINED,
    )
    assert draft.subscription_status is SubscriptionStatus.DRAFT
    # A draft activated with an unpaid opening invoice exists already: incomplete, not refused.
    activated = w.s.subscriptions.activate(draft.id)
    assert activated.subscription_status is SubscriptionStatus.INCOMPLETE
    assert w.events(draft)[-1] == "subscription.activated"
    _pay_offline(w, w.opening(draft), "30.00")
    assert w.s.subscriptions.get(draft.id).subscription_status is SubscriptionStatus.ACTIVE


def test_an_incomplete_subscription_is_not_paused(w: World) -> None:
    sub = w.subscribe(collection_method="send_invoice", payment_behavior="default_incomplete")
    with pytest.raises(InvalidOperation) as caught:
        w.s.subscriptions.pause(sub.id)
    assert "incomplete" in caught.value.message
