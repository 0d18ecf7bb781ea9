"""Paying a subscription invoice end to end, through the library, on every store.

A 100.00 monthly ADVANCE plan gives each subscription a finalized 100.00 opening invoice; a
``TestClock`` moves time between payments. Amounts are exact with the arithmetic next to them.
Wallets are written through the ledger's one writer (``tests.wallet_reads``): their own public area
is another part's.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit.domain.invoices import Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.wallets import Wallet
from billingkit.errors import InvalidOperation
from billingkit.providers.sandbox import SandboxPaymentProvider
from tests.scenario.test_subscription_billing import World, at, fee, make_world, subscribe
from tests.wallet_reads import add_wallet, ledger

__all__ = ["make_world"]

D = Decimal
T0 = at(2026, 3, 1, 9)


@pytest.fixture
def world(make_world: Any) -> World:
    return make_world(T0)  # type: ignore[no-any-return]


def opening(w: World) -> Invoice:
    sub = subscribe(w, [fee("100")])
    (invoice,) = w.invoices(sub)
    assert (invoice.invoice_status, invoice.amount_due, invoice.amount_remaining) == (
        InvoiceStatus.FINALIZED,
        D("100.00"),
        D("100.00"),
    )
    return invoice


def pay(w: World, invoice: Invoice, amount: str, method: str = "OFFLINE", **fields: Any) -> Any:
    return w.s.payments.create(
        amount=amount,
        currency="usd",
        destination_id=invoice.id,
        destination_type="INVOICE",
        payment_method_type=method,
        **fields,
    )


def figures(w: World, invoice: Invoice) -> tuple[Any, ...]:
    now = w.s.invoices.get(invoice.id)
    return (now.payment_status, now.amount_paid, now.amount_remaining, now.overpaid_amount, now.paid_at)


def test_partial_then_full_then_over_payment(world: World) -> None:
    w = world
    invoice = opening(w)
    pay(w, invoice, "60.00", idempotency_key="transfer-1")
    # 100.00 - 60.00 = 40.00 remaining; a partial payment leaves the invoice PENDING.
    assert figures(w, invoice) == (PaymentStatus.PENDING, D("60.00"), D("40.00"), D("0.00"), None)
    w.clock.advance(days=3)
    paid_at = w.clock.now()
    pay(w, invoice, "40.00", idempotency_key="transfer-2")
    # 60.00 + 40.00 = 100.00: paid in full, when the second payment came.
    assert figures(w, invoice) == (PaymentStatus.SUCCEEDED, D("100.00"), D("0.00"), D("0.00"), paid_at)
    w.clock.advance(days=1)
    pay(w, invoice, "15.50", idempotency_key="transfer-3")
    # 100.00 + 15.50 = 115.50 paid on 100.00 due: OVERPAID by 15.50, paid_at unchanged.
    assert figures(w, invoice) == (PaymentStatus.OVERPAID, D("115.50"), D("0.00"), D("15.50"), paid_at)
    assert w.s.payments.list(destination_id=invoice.id).total == 3
    assert len(w.s.notifications.list(event_type="invoice.update.payment").items) == 3


def test_the_same_payment_request_sent_twice_is_one_payment(world: World) -> None:
    w = world
    invoice = opening(w)
    first = pay(w, invoice, "60.00", "CARD", payment_method_id="pm_card_visa")
    w.clock.advance(minutes=5)  # a client retrying later with the same body
    again = pay(w, invoice, "60.00", "CARD", payment_method_id="pm_card_visa")
    assert again.id == first.id
    assert w.s.payments.list().total == 1
    provider = w.billing.providers.payment_provider
    assert isinstance(provider, SandboxPaymentProvider)
    assert len(provider.requests) == 1  # charged once
    assert figures(w, invoice)[:3] == (PaymentStatus.PENDING, D("60.00"), D("40.00"))


def test_a_declined_card_fails_the_payment_and_moves_no_money(world: World) -> None:
    w = world
    invoice = opening(w)
    payment = pay(w, invoice, "100.00", "CARD", payment_method_id=SandboxPaymentProvider.DECLINED_METHOD)
    assert (payment.payment_status, payment.error_message) == (PaymentStatus.FAILED, "card_declined")
    # Nothing paid: the invoice is FAILED (reference transitions), its money unchanged.
    assert figures(w, invoice) == (PaymentStatus.FAILED, D("0"), D("100.00"), D("0"), None)
    # A later payment that succeeds pays it as usual.
    pay(w, invoice, "100.00")
    assert figures(w, invoice)[:3] == (PaymentStatus.SUCCEEDED, D("100.00"), D("0.00"))


def _wallet(w: World, wallet_id: str, *credits: str) -> Wallet:
    made = Wallet(
        id=wallet_id,
        tenant_id=w.s.tenant_id,
        environment_id=str(w.s.environment_id),
        created_at=w.clock.now(),
        updated_at=w.clock.now(),
        created_by="test",
        updated_by="test",
        customer_id=w.customer.id,
        currency="usd",
    )
    return add_wallet(w.s, made, *(D(c) for c in credits))


def test_credits_pay_then_a_void_refunds_everything_once(world: World) -> None:
    w = world
    invoice = opening(w)
    purse = _wallet(w, "wallet_prepaid", "25", "50")
    payment = pay(w, invoice, "70.00", "CREDITS", payment_method_id=purse.id)
    pay(w, invoice, "30.00")
    assert figures(w, invoice)[:3] == (PaymentStatus.SUCCEEDED, D("100.00"), D("0.00"))
    (after,), rows = ledger(w.s)
    # 75 credits - 70 = 5 left: 50 from the larger lot, then 20 of the 25.
    assert after.credit_balance == D("5")
    assert sorted(r.credit_amount for r in rows if r.type.value == "debit") == [D("20"), D("50")]
    assert {r.reference_id for r in rows if r.type.value == "debit"} == {payment.id}

    voided = w.s.invoices.void(invoice.id)
    # 100.00 paid (70.00 in credits + 30.00 offline) comes back as 100 credits to the PRE_PAID
    # wallet in usd: the customer's existing one.
    assert (voided.invoice_status, voided.payment_status, voided.refunded_amount) == (
        InvoiceStatus.VOIDED,
        PaymentStatus.REFUNDED,
        D("100.00"),
    )
    (refunded,), rows = ledger(w.s)
    assert refunded.credit_balance == D("105")  # 5 + 100
    (refund,) = [r for r in rows if r.transaction_reason.value == "INVOICE_VOID_REFUND"]
    assert (refund.credit_amount, refund.amount, refund.reference_type.value, refund.reference_id) == (
        D("100.00"),
        D("100.00"),
        "INVOICE",
        invoice.id,
    )
    with pytest.raises(InvalidOperation, match="voided"):
        w.s.invoices.void(invoice.id)
    (still,), rows = ledger(w.s)
    assert still.credit_balance == D("105")
    assert len([r for r in rows if r.transaction_reason.value == "INVOICE_VOID_REFUND"]) == 1


def test_a_void_without_a_prepaid_wallet_makes_one(world: World) -> None:
    w = world
    invoice = opening(w)
    pay(w, invoice, "40.00")
    w.s.invoices.void(invoice.id)
    (made,), (row,) = ledger(w.s)
    assert (made.customer_id, made.wallet_type.value, made.currency, made.credit_balance) == (
        w.customer.id,
        "PRE_PAID",
        "usd",
        D("40.00"),
    )
    assert row.transaction_reason.value == "INVOICE_VOID_REFUND"
    assert [e.entity_id for e in w.s.notifications.list(event_type="wallet.created").items] == [made.id]
