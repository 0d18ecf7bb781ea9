"""Cancellation stories end to end, through the library, on every store (memory, SQLite,
PostgreSQL), with a test clock and exact amounts (the arithmetic beside each figure).

June 2026 has 30 days: [1 Jun, 1 Jul) is 2,592,000 seconds. The plan: Base 30.00 a month in
advance, Support 15.00 a month in arrears, API calls at 0.10 each in arrears.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from billingkit import InvalidOperation
from billingkit.domain.invoices import BillingReason, InvoiceStatus, PaymentStatus
from billingkit.domain.subscription_schedules import ScheduleStatus
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.domain.wallets import TransactionReason, WalletType
from billingkit.ports import Storage
from tests.cancellations import FEE, World, at, calls, june, make_world

D = Decimal
JULY = at(7, 1)
SUPPORT = {**FEE, "amount": "15.00", "invoice_cadence": "ARREAR", "display_name": "Support"}


@pytest.fixture
def world(storage: Storage) -> World:
    return make_world(storage)


def test_immediate_cancellation_credits_unused_time_and_bills_the_used_part(world: World) -> None:
    sub = world.subscribe([FEE, SUPPORT, calls(world.meter_id)])
    (opening,) = world.invoices(sub)
    assert opening.amount_due == D("30.00")  # Base in advance
    world.usage(40, june(3))
    world.clock.set(june(11))  # day 10 of 30 is over: 20 days unused
    result = world.s.subscriptions.cancel(
        sub.id,
        cancellation_type="immediate",
        proration_behavior="create_prorations",
        cancel_immediately_inovice_policy="generate_invoice",
        reason="switching provider",
    )

    # Credit: 30.00 x 1,728,000 s / 2,592,000 s = 20.00, for the Base line only (ADVANCE).
    (detail,) = result.proration_details
    base = next(li for li in sub.line_items if li.display_name == "Base")
    assert detail.to_dict() == {
        "line_item_id": base.id,
        "price_id": base.price_id,
        "plan_name": "Pro",
        "original_amount": "30.00",
        "credit_amount": "20.00",
        "charge_amount": "0.00",
        "proration_days": 20,
        "description": "credit for 20 unused of 30 days of Base (1728000 of 2592000 seconds)",
    }
    assert result.total_credit_amount == D("20.00")
    (wallet,) = world.wallets()
    assert (wallet.name, wallet.wallet_type, wallet.conversion_rate, wallet.credit_balance) == (
        "Proration Credit Wallet",
        WalletType.PRE_PAID,
        D(1),
        D("20.00"),
    )
    (credit,) = world.credits()
    assert credit.transaction_reason is TransactionReason.SUBSCRIPTION_CREDIT_GRANT
    assert credit.idempotency_key == (
        f"proration_credit_cancel|{sub.id}|immediate|2026-06-01T00:00:00Z|2026-07-01T00:00:00Z"
    )
    assert credit.id == result.wallet_transaction_id

    # The used part [1 Jun, 11 Jun): Support 15.00 x 864,000 / 2,592,000 = 5.00, calls 40 x 0.10
    # = 4.00, total 9.00. Base was billed in advance and is not billed again.
    invoice = result.invoice
    assert invoice is not None and invoice.invoice_status is InvoiceStatus.FINALIZED
    assert (invoice.period_start, invoice.period_end) == (june(1), june(11))
    assert sorted((line.display_name, line.amount) for line in invoice.line_items) == [
        ("Calls", D("4.00")),
        ("Support", D("5.00")),
    ]
    assert invoice.amount_due == D("9.00") and invoice.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
    assert result.to_dict()["proration_invoice"]["id"] == invoice.id

    saved = world.sub(sub)
    assert saved.subscription_status is SubscriptionStatus.CANCELLED
    assert saved.cancelled_at == saved.end_date == june(11)

    # Cancelling again is refused; nothing is credited or billed again, now or by the worker.
    with pytest.raises(InvalidOperation, match="already cancelled"):
        world.s.subscriptions.cancel(
            sub.id, cancellation_type="immediate", proration_behavior="create_prorations"
        )
    world.usage(10, june(20), prefix="late")
    assert world.run(JULY + timedelta(days=40)).invoice_count == 0
    assert [inv.amount_due for inv in world.invoices(sub)] == [D("30.00"), D("9.00")]
    assert world.wallets()[0].credit_balance == D("20.00")


def test_a_retried_cancellation_never_credits_twice(world: World) -> None:
    sub = world.subscribe()
    world.clock.set(june(11))
    first = world.s.subscriptions.cancel(
        sub.id, cancellation_type="immediate", proration_behavior="create_prorations"
    )
    assert first.total_credit_amount == D("20.00")
    # A retry that read the subscription before the first cancellation was stored (simulated by
    # putting it back as it was) cancels again: the credit's key finds the first credit.
    world.store(
        sub,
        subscription_status=SubscriptionStatus.ACTIVE,
        cancel_at=None,
        end_date=None,
        cancelled_at=None,
        line_items=sub.line_items,
        next_run_at=JULY,
    )
    world.clock.set(june(11, hour=1))
    retried = world.s.subscriptions.cancel(
        sub.id, cancellation_type="immediate", proration_behavior="create_prorations"
    )
    assert retried.wallet_transaction_id == first.wallet_transaction_id
    assert retried.total_credit_amount == D("20.00")  # the credit the wallet got, once
    (wallet,) = world.wallets()
    assert wallet.credit_balance == D("20.00")
    assert len(world.credits()) == 1


def test_end_of_period_bills_the_period_then_cancels(world: World) -> None:
    sub = world.subscribe([FEE, SUPPORT, calls(world.meter_id)])
    world.usage(40, june(3))
    world.clock.set(june(10))
    world.s.subscriptions.cancel(sub.id, cancellation_type="end_of_period")
    assert world.run(june(30)).invoice_count == 0  # nothing due before the period end

    report = world.run(JULY)
    # June closes as usual: Support 15.00 + 40 calls x 0.10 = 19.00; no Base for July.
    (closing,) = report.invoices
    assert (closing.period_start, closing.period_end, closing.amount_due) == (june(1), JULY, D("19.00"))
    assert sorted(line.display_name for line in closing.line_items) == ["Calls", "Support"]
    ended = world.sub(sub)
    assert ended.subscription_status is SubscriptionStatus.CANCELLED
    assert ended.cancelled_at == ended.end_date == ended.cancel_at == JULY
    (schedule,) = world.s.subscriptions.schedules(sub.id).schedules
    assert schedule.schedule.schedule_status is ScheduleStatus.EXECUTED
    assert len(world.events("subscription.cancelled", sub)) == 1
    assert world.run(JULY + timedelta(days=62)).invoice_count == 0


def test_a_withdrawn_end_of_period_cancellation_renews_normally(world: World) -> None:
    sub = world.subscribe([FEE, SUPPORT, calls(world.meter_id)])
    world.usage(40, june(3))
    world.clock.set(june(10))
    scheduled = world.s.subscriptions.cancel(sub.id, cancellation_type="end_of_period")
    assert scheduled.schedule is not None
    world.clock.set(june(20))
    world.s.subscriptions.cancel_schedule(scheduled.schedule.id)
    restored = world.sub(sub)
    assert (restored.cancel_at, restored.cancel_at_period_end, restored.end_date) == (None, False, None)

    (renewal,) = world.run(JULY).invoices
    # June's Support 15.00 + calls 4.00, and July's Base 30.00 in advance: 49.00.
    assert renewal.amount_due == D("49.00")
    assert world.sub(sub).subscription_status is SubscriptionStatus.ACTIVE
    assert world.sub(sub).current_period_end == at(8, 1)


def test_scheduled_date_cuts_the_period_and_bills_a_short_final_invoice(world: World) -> None:
    sub = world.subscribe([FEE, SUPPORT, calls(world.meter_id)])
    world.usage(40, june(3))
    world.usage(10, june(25), prefix="after")  # after the cancellation: never billed
    world.clock.set(june(5))
    result = world.s.subscriptions.cancel(sub.id, cancellation_type="scheduled_date", cancel_at=june(20))
    assert result.subscription.current_period_end == june(20)
    assert world.run(june(19)).invoice_count == 0

    (final,) = world.run(june(20)).invoices
    # The short period [1 Jun, 20 Jun) is a last period cut by its end date: Support's full fee
    # 15.00 (decision 66) + 40 calls x 0.10 = 4.00 -> 19.00.
    assert (final.period_start, final.period_end, final.amount_due) == (june(1), june(20), D("19.00"))
    ended = world.sub(sub)
    assert ended.subscription_status is SubscriptionStatus.CANCELLED
    assert ended.cancelled_at == ended.end_date == june(20)
    assert {line.end_date for line in ended.line_items} == {june(20)}
    assert world.run(JULY + timedelta(days=31)).invoice_count == 0


def test_an_invoice_unpaid_past_due_and_grace_cancels_its_subscription(storage: Storage) -> None:
    world = make_world(storage, auto_cancellation_grace_days=3)
    late = world.subscribe()
    payer_customer = world.s.customers.create(external_id="c2", name="Bo")
    plan_id = late.plan_id
    payer = world.s.subscriptions.create(
        customer_id=payer_customer.id, plan_id=plan_id, currency="usd", billing_period="MONTHLY"
    )
    for invoice in world.s.invoices.list(subscription_id=payer.id).items:
        world.s.invoices.update_payment(
            invoice.id, payment_status="SUCCEEDED", amount=str(invoice.amount_due)
        )

    # Both opening invoices (30.00) are due on 2 Jul (period end + 1 day); the run of 1 Jul bills
    # July (due 2 Aug). 2 Jul + 3 grace days = 5 Jul 00:00: the late payer's subscription survives
    # that instant and is cancelled by the first run after it.
    world.run(JULY)
    for invoice in world.s.invoices.list(subscription_id=payer.id).items:
        if invoice.payment_status is PaymentStatus.PENDING:
            world.s.invoices.update_payment(
                invoice.id, payment_status="SUCCEEDED", amount=str(invoice.amount_due)
            )
    world.run(at(7, 5))
    assert world.sub(late).subscription_status is SubscriptionStatus.ACTIVE

    world.run(at(7, 5, 1))
    cancelled = world.sub(late)
    assert cancelled.subscription_status is SubscriptionStatus.CANCELLED
    assert cancelled.cancelled_at == at(7, 5, 1)
    assert cancelled.metadata["cancellation_type"] == "immediate"
    assert cancelled.metadata["cancellation_reason"].startswith("auto-cancelled: invoice inv_")
    assert world.sub(payer).subscription_status is SubscriptionStatus.ACTIVE
    assert len(world.events("subscription.cancelled", late)) == 1
    # Nothing more: the next run finds the same unpaid invoice, its subscription already cancelled.
    world.run(at(7, 6))
    assert len(world.events("subscription.cancelled", late)) == 1
    assert world.wallets() == []  # no credit: auto-cancellation does not prorate
