"""The pay-first add-on (``add_addon`` checkout sessions) through the library, on every store:
the association is ``pending`` and counts for nothing before the payment; paid, it is activated
once, its lines join the subscription and the invoice the customer paid is its charge; declined
or expired, the association, invoice and payment are archived; an add-on that charges nothing now
is refused.

The clock starts at 2026-05-01 09:30 UTC; the subscription (30.00 usd a month in advance) is
half-way through its 31-day period when the add-on (20.00 a month) is added with
``create_prorations``: 20.00 x 1/2 = 10.00, with 10% VAT 11.00.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, Scoped, TestClock
from billingkit.domain.addon_associations import AddonStatus
from billingkit.domain.checkout_sessions import CheckoutAction, CheckoutStatus
from billingkit.domain.invoices import BillingReason, Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription
from billingkit.services.subscription_addons import AddedAddon
from tests.checkout_world import PRICE, checkout_plan, stored_rows, vat_customer

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
HALF_WAY = NOW + timedelta(days=15, hours=12)
D = Decimal


@dataclass
class World:
    s: Scoped
    billing: Billing
    clock: TestClock
    sub: Subscription
    addon_id: str

    def add(self, checkout: dict[str, Any] | None = None, **more: Any) -> AddedAddon:
        fields: dict[str, Any] = {"proration_behavior": "create_prorations", **more}
        return self.s.subscriptions.add_addon(
            subscription_id=self.sub.id,
            addon_id=self.addon_id,
            checkout=checkout if checkout is not None else {"payment_provider": "sandbox"},
            **fields,
        )

    def rows(self, kind: str) -> list[Any]:
        return stored_rows(self.billing, self.s, kind)

    def updates(self) -> list[Invoice]:
        return [i for i in self.rows("invoices") if i.billing_reason is BillingReason.SUBSCRIPTION_UPDATE]

    def line_owners(self) -> list[str]:
        return [line.entity_type for line in self.s.subscriptions.get(self.sub.id).line_items]


@pytest.fixture
def w(test_env: Scoped, billing: Billing, clock: TestClock) -> World:
    customer = vat_customer(test_env)
    plan_id = checkout_plan(test_env)
    sub = test_env.subscriptions.create(
        customer_id=customer.id, plan_id=plan_id, currency="usd", billing_period="MONTHLY"
    )
    addon = test_env.addons.create(
        name="Boost", lookup_key="boost", prices=[{**PRICE, "amount": "20", "display_name": "Boost"}]
    )
    clock.set(HALF_WAY)
    return World(test_env, billing, clock, sub, addon.id)


def test_a_pay_first_addon_is_pending_until_paid_then_active_once(w: World) -> None:
    added = w.add({"payment_provider": "sandbox", "idempotency_key": "boost-1"})

    session = added.checkout_session
    assert session is not None
    assert (session.action, session.checkout_status) == (CheckoutAction.ADD_ADDON, CheckoutStatus.PENDING)
    association = added.association
    assert (association.addon_status, association.start_date) == (AddonStatus.PENDING, HALF_WAY)
    assert session.configuration == {
        "add_addon_params": {
            "subscription_id": w.sub.id,
            "addons": [
                {
                    "addon_id": w.addon_id,
                    "association_id": association.id,
                    "cadence": "recurring",
                    "proration_behavior": "create_prorations",
                    "start_date": "2026-05-16T21:30:00Z",
                }
            ],
        }
    }
    assert added.to_dict()["checkout_session"]["id"] == session.id
    # Nothing changed: the plan's line only; the charge is a DRAFT invoice.
    assert w.line_owners() == ["plan"]
    (draft,) = w.updates()
    assert (draft.invoice_status, draft.subtotal, draft.total_tax, draft.amount_due) == (
        InvoiceStatus.DRAFT,
        D("10.00"),
        D("1.00"),
        D("11.00"),
    )

    done = w.s.checkout.pay_sandbox(session.id)

    assert (done.checkout_status, done.checkout_invoice_id) == (CheckoutStatus.COMPLETED, draft.id)
    (active,) = w.s.subscriptions.addon_associations(w.sub.id)
    assert (active.id, active.addon_status, active.start_date) == (
        association.id,
        AddonStatus.ACTIVE,
        HALF_WAY,
    )
    assert w.line_owners() == ["plan", "addon"]
    (paid,) = w.updates()  # the charge the customer paid, issued once
    assert (paid.id, paid.invoice_status, paid.payment_status, paid.amount_paid) == (
        draft.id,
        InvoiceStatus.FINALIZED,
        PaymentStatus.SUCCEEDED,
        D("11.00"),
    )
    assert paid.invoice_number is not None
    assert w.s.checkout.pay_sandbox(session.id).checkout_status is CheckoutStatus.COMPLETED
    assert w.line_owners() == ["plan", "addon"] and len(w.updates()) == 1


def test_a_declined_addon_leaves_only_archived_records(w: World) -> None:
    added = w.add()
    assert added.checkout_session is not None

    failed = w.s.checkout.decline_sandbox(added.checkout_session.id)

    assert failed.checkout_status is CheckoutStatus.FAILED
    assert w.line_owners() == ["plan"]
    assert w.s.subscriptions.addon_associations(w.sub.id) == []
    (association,) = w.rows("addon_associations")
    assert association.status is Status.ARCHIVED
    (invoice,) = w.updates()
    assert (invoice.status, invoice.idempotency_key) == (Status.ARCHIVED, None)
    (payment,) = [p for p in w.rows("payments") if p.id == added.checkout_session.payment_id]
    assert (payment.status, payment.payment_status) == (Status.ARCHIVED, PaymentStatus.FAILED)


def test_the_worker_expires_an_open_addon_session(w: World) -> None:
    added = w.add()
    assert added.checkout_session is not None

    w.clock.advance(timedelta(minutes=30))
    w.billing.run_due()

    assert w.s.checkout.get(added.checkout_session.id).checkout_status is CheckoutStatus.EXPIRED
    assert w.line_owners() == ["plan"]
    assert [a.status for a in w.rows("addon_associations")] == [Status.ARCHIVED]


def test_an_addon_that_charges_nothing_now_is_refused_and_writes_nothing(w: World) -> None:
    with pytest.raises(InvalidOperation, match="checkout requires a non-zero invoice"):
        w.add(proration_behavior="none")  # billed from the next period: nothing to pay now

    assert w.rows("addon_associations") == [] and w.updates() == [] and w.rows("checkout_sessions") == []


def test_a_payment_for_an_addon_that_can_no_longer_be_attached_applies_nothing(w: World) -> None:
    added = w.add()
    assert added.checkout_session is not None
    w.s.subscriptions.cancel(w.sub.id, cancellation_type="immediate")

    with pytest.raises(InvalidOperation):
        w.s.checkout.pay_sandbox(added.checkout_session.id)

    # Rolled back whole: the session still open (it will expire with its cleanup), nothing attached.
    assert w.s.checkout.get(added.checkout_session.id).checkout_status is CheckoutStatus.PENDING
    assert all(line.entity_type == "plan" for line in w.s.subscriptions.get(w.sub.id).line_items)
    (draft,) = [i for i in w.updates() if i.id == added.checkout_session.invoice_id]
    assert draft.invoice_status is InvoiceStatus.DRAFT
