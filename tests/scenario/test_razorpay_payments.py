"""Paying an invoice through Razorpay end to end: the payments service, the Razorpay adapter and
Razorpay's wire format (the local fake), in memory. A 100.00 monthly ADVANCE plan gives a
finalized 100.00 opening invoice."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest

from billingkit import Billing, TestClock
from billingkit.domain.invoices import PaymentStatus
from billingkit.testing.razorpay_fake import RazorpayFake
from tests.scenario.test_subscription_billing import World, at, fee, subscribe

D = Decimal


@pytest.fixture
def fake() -> Iterator[RazorpayFake]:
    with RazorpayFake() as server:
        yield server


@pytest.fixture
def world(fake: RazorpayFake) -> World:
    clock = TestClock(at(2026, 3, 1, 9))
    billing = Billing(clock=clock, payment_provider=fake.provider())
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    return World(clock, billing, s, s.customers.create(external_id="c1", name="Ada"), meter.id)


def test_a_card_payment_charges_the_saved_token_once_and_pays_the_invoice(
    world: World, fake: RazorpayFake
) -> None:
    w = world
    (invoice,) = w.invoices(subscribe(w, [fee("100")]))
    body = {
        "amount": "100.00",
        "currency": "usd",
        "destination_id": invoice.id,
        "destination_type": "INVOICE",
        "payment_method_type": "CARD",
        "payment_method_id": "token_F0000000000001",
    }
    payment = w.s.payments.create(**body)
    assert (payment.payment_status, payment.payment_gateway) == (PaymentStatus.SUCCEEDED, "razorpay")
    (charged,) = fake.payments.values()
    assert payment.gateway_payment_id == charged["id"]
    assert (charged["amount"], charged["currency"], charged["token_id"]) == (
        10000,
        "USD",
        "token_F0000000000001",
    )
    assert charged["notes"]["payment_id"] == payment.id and charged["notes"]["invoice_id"] == invoice.id
    paid = w.s.invoices.get(invoice.id)
    assert (paid.payment_status, paid.amount_paid, paid.amount_remaining) == (
        PaymentStatus.SUCCEEDED,
        D("100.00"),
        D("0.00"),
    )
    assert w.s.payments.create(**body).id == payment.id  # the same request again charges nothing
    assert (len(fake.orders), len(fake.payments)) == (1, 1)


def test_without_a_saved_method_the_customer_gets_a_razorpay_link(world: World, fake: RazorpayFake) -> None:
    w = world
    (invoice,) = w.invoices(subscribe(w, [fee("100")]))
    payment = w.s.payments.create(
        amount="40.00",
        currency="usd",
        destination_id=invoice.id,
        destination_type="INVOICE",
        payment_method_type="PAYMENT_LINK",
    )
    (link,) = fake.links.values()
    assert (payment.payment_status, payment.payment_url, payment.gateway_payment_id) == (
        PaymentStatus.PENDING,
        link["short_url"],
        link["id"],
    )
    assert (link["amount"], link["currency"], fake.payments) == (4000, "USD", {})
    assert w.s.invoices.get(invoice.id).amount_paid == D("0")
