"""Prepaid credits paying invoices, end to end through the library, on every store.

A ``TestClock`` moves time; ``Billing.run_due`` bills what fell due. Top-ups are made with the
ledger service (``wallet_ledger.prepaid_wallet`` + ``wallet_ledger.credit``) until the public
top-up call exists. Money is checked exactly, with the arithmetic next to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    TransactionType,
    Wallet,
    WalletPriceType,
    WalletTransaction,
    movement_key,
)
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.context import Context

D = Decimal


def at(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


@dataclass
class World:
    clock: TestClock
    billing: Billing
    s: Scoped
    meter_id: str

    def customer(self, external_id: str) -> Customer:
        return self.s.customers.create(external_id=external_id, name=external_id)

    def run(self, when: datetime) -> None:
        self.clock.set(when)
        report = self.billing.run_due()
        assert report.failures == []

    def usage(self, count: int, start: datetime, *, customer: str, prefix: str) -> None:
        """``count`` API calls, one a minute from ``start``."""
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": customer,
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{prefix}{i}",
                }
                for i in range(count)
            ]
        )

    def top_up(
        self,
        customer: Customer,
        credits: str,
        *,
        key: str,
        priority: int | None = None,
        expiry: datetime | None = None,
        allowed: tuple[WalletPriceType, ...] = (WalletPriceType.ALL,),
    ) -> WalletTransaction:
        def run(uow: UnitOfWork, ctx: Context) -> WalletTransaction:
            wallet = wallet_ledger.prepaid_wallet(
                uow, ctx, customer_id=customer.id, currency="usd", allowed_price_types=allowed
            )
            moved = wallet_ledger.credit(
                uow,
                ctx,
                wallet,
                credits=D(credits),
                reason=TransactionReason.FREE_CREDIT_GRANT,
                key=movement_key("scenario_top_up", key),
                priority=priority,
                expiry_date=expiry,
            )
            return moved.transactions[0]

        return self.s.run(run)

    def wallet(self, wallet_id: str) -> Wallet:
        return self.s.run(lambda uow, ctx: uow.wallets.get(wallet_id))

    def rows(self, wallet_id: str) -> list[WalletTransaction]:
        def run(uow: UnitOfWork, ctx: Context) -> list[WalletTransaction]:
            from billingkit.domain.queries import Filter, ListQuery, Op, Sort

            page = uow.wallet_transactions.list(
                ListQuery(
                    filters=(Filter("wallet_id", Op.EQ, wallet_id),),
                    sort=(Sort("created_at", descending=False), Sort("id", descending=False)),
                    limit=500,
                )
            )
            return list(page.items)

        return self.s.run(run)

    def check_cache(self, wallet_id: str) -> Decimal:
        """The wallet's cached balance equals the sum of its completed rows; returns it."""
        rows = self.rows(wallet_id)
        total = sum(
            (r.credit_amount if r.type is TransactionType.CREDIT else -r.credit_amount for r in rows),
            D(0),
        )
        assert self.wallet(wallet_id).credit_balance == total
        return total

    def invoices(self, sub: Subscription) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=sub.id, order="asc", limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def subscribe(self, customer: Customer, prices: list[dict[str, Any]]) -> Subscription:
        plan = self.s.plans.create(name=f"Plan {customer.external_id}", prices=prices)
        return self.s.subscriptions.create(
            customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
        )


def per_call(meter_id: str, amount: str = "0.1") -> dict[str, Any]:
    """``amount`` per API call, billed in arrears."""
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "display_name": "Calls",
    }


def fee(amount: str) -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "display_name": "Base",
    }


@pytest.fixture
def make_world(storage: Any) -> Callable[[datetime], World]:
    def make(start: datetime) -> World:
        clock = TestClock(start)
        billing = Billing(storage, clock)
        setup = billing.bootstrap()
        s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
        meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
        return World(clock, billing, s, meter.id)

    return make


def test_a_top_up_pays_usage_invoices_until_it_runs_out(make_world: Callable[[datetime], World]) -> None:
    w = make_world(at(2026, 1, 1))
    ada = w.customer("ada")
    sub = w.subscribe(ada, [per_call(w.meter_id)])
    lot = w.top_up(ada, "50", key="t1")

    w.usage(300, at(2026, 1, 5), customer="ada", prefix="jan")  # 300 x 0.10 = 30.00
    w.run(at(2026, 2, 1))
    (january,) = w.invoices(sub)
    assert (january.subtotal, january.total_prepaid_credits_applied, january.amount_due) == (
        D("30.00"),
        D("30.00"),
        D("0.00"),
    )
    (line,) = january.line_items
    assert (line.amount, line.prepaid_credits_applied) == (D("30.00"), D("30.00"))
    assert january.invoice_status is InvoiceStatus.FINALIZED
    assert january.payment_status is PaymentStatus.SUCCEEDED  # nothing left to pay
    assert w.wallet(lot.wallet_id).credit_balance == D(20)  # 50 - 30

    w.usage(450, at(2026, 2, 5), customer="ada", prefix="feb")  # 450 x 0.10 = 45.00
    w.run(at(2026, 3, 1))
    _, february = w.invoices(sub)
    assert (february.subtotal, february.total_prepaid_credits_applied, february.amount_due) == (
        D("45.00"),
        D("20.00"),  # what was left
        D("25.00"),  # 45.00 - 20.00
    )
    assert february.payment_status is PaymentStatus.PENDING
    assert february.line_items[0].prepaid_credits_applied == D("20.00")

    rows = w.rows(lot.wallet_id)
    debits = [r for r in rows if r.type is TransactionType.DEBIT]
    assert [(r.credit_amount, r.reference_id, r.source_transaction_id) for r in debits] == [
        (D(30), january.id, lot.id),
        (D(20), february.id, lot.id),
    ]
    assert all(r.transaction_reason is TransactionReason.CREDIT_ADJUSTMENT for r in debits)
    assert all(r.reference_type is TransactionReferenceType.INVOICE for r in debits)
    assert debits[0].idempotency_key == f"invoice_credits|{january.id}|{lot.id}"
    assert w.check_cache(lot.wallet_id) == D(0)

    # A run with nothing due debits nothing more.
    w.run(at(2026, 3, 1, 1))
    assert len(w.rows(lot.wallet_id)) == 3


def test_allowed_price_types_decide_which_lines_credits_pay(
    make_world: Callable[[datetime], World],
) -> None:
    w = make_world(at(2026, 1, 1))
    usage_only, everything = w.customer("u"), w.customer("a")
    subs = {}
    for customer, allowed in ((usage_only, WalletPriceType.USAGE), (everything, WalletPriceType.ALL)):
        subs[customer.id] = w.subscribe(customer, [fee("20"), per_call(w.meter_id)])
        w.top_up(customer, "100", key=customer.id, allowed=(allowed,))
        w.usage(300, at(2026, 1, 5), customer=customer.external_id, prefix=customer.id)
    w.run(at(2026, 2, 1))

    (usage_invoice,) = w.invoices(subs[usage_only.id])
    paid = {line.price_type: line.prepaid_credits_applied for line in usage_invoice.line_items}
    assert paid == {"FIXED": D("0"), "USAGE": D("30.00")}  # the 20.00 fee is left to pay
    assert (usage_invoice.total_prepaid_credits_applied, usage_invoice.amount_due) == (D("30.00"), D("20.00"))

    (all_invoice,) = w.invoices(subs[everything.id])
    paid = {line.price_type: line.prepaid_credits_applied for line in all_invoice.line_items}
    assert paid == {"FIXED": D("20.00"), "USAGE": D("30.00")}
    assert (all_invoice.total_prepaid_credits_applied, all_invoice.amount_due) == (D("50.00"), D("0.00"))


def test_credits_are_consumed_in_the_notes_order_and_expired_ones_only_expire(
    make_world: Callable[[datetime], World],
) -> None:
    w = make_world(at(2026, 1, 1))
    ada = w.customer("ada")
    sub = w.subscribe(ada, [per_call(w.meter_id)])
    lots = {
        "a": w.top_up(ada, "10", key="a", priority=2, expiry=at(2026, 3, 31)),
        "b": w.top_up(ada, "10", key="b", priority=1, expiry=at(2026, 4, 30)),
        "c": w.top_up(ada, "10", key="c", expiry=at(2026, 3, 15)),  # no priority: last
        "d": w.top_up(ada, "10", key="d", priority=1, expiry=at(2026, 3, 31)),  # before b: expires first
        "e": w.top_up(ada, "20", key="e", priority=0, expiry=at(2026, 1, 20)),  # first, but expired
    }
    wallet_id = lots["a"].wallet_id
    assert w.wallet(wallet_id).credit_balance == D(60)

    w.usage(250, at(2026, 1, 21), customer="ada", prefix="jan")  # 25.00
    w.run(at(2026, 2, 1))
    (january,) = w.invoices(sub)
    assert (january.total_prepaid_credits_applied, january.amount_due) == (D("25.00"), D("0.00"))

    rows = w.rows(wallet_id)
    drawn = {
        r.source_transaction_id: r.credit_amount
        for r in rows
        if r.transaction_reason is TransactionReason.CREDIT_ADJUSTMENT
    }
    by_name = {name: drawn.get(row.id) for name, row in lots.items()}
    # d (priority 1, Mar 31) 10, then b (priority 1, Apr 30) 10, then a (priority 2) 5 of 10.
    assert by_name == {"a": D(5), "b": D(10), "c": None, "d": D(10), "e": None}
    # The same run expired e after billing January (nothing held it any more): all its 20 credits.
    (expired,) = [r for r in rows if r.transaction_reason is TransactionReason.CREDIT_EXPIRED]
    assert (expired.source_transaction_id, expired.credit_amount, expired.type) == (
        lots["e"].id,
        D(20),
        TransactionType.DEBIT,
    )
    assert expired.idempotency_key == f"credit_expired|{lots['e'].id}"
    assert w.check_cache(wallet_id) == D(15)  # 60 - 25 - 20: a's 5 and c's 10
    assert w.wallet(wallet_id).next_expiry_at == at(2026, 3, 15)  # c, the next to expire

    w.run(at(2026, 3, 16))  # c expires; February had no usage
    expired = [r for r in w.rows(wallet_id) if r.transaction_reason is TransactionReason.CREDIT_EXPIRED]
    assert [(r.source_transaction_id, r.credit_amount) for r in expired] == [
        (lots["e"].id, D(20)),
        (lots["c"].id, D(10)),
    ]
    assert w.check_cache(wallet_id) == D(5)
    assert w.wallet(wallet_id).next_expiry_at == at(2026, 3, 31)  # a's last 5

    w.run(at(2026, 3, 31, 1))
    assert w.check_cache(wallet_id) == D(0)
    assert w.wallet(wallet_id).next_expiry_at is None
    before = len(w.rows(wallet_id))
    w.run(at(2026, 5, 1))  # nothing left to expire: no new rows (March/April had no usage)
    assert len(w.rows(wallet_id)) == before


def test_an_unpaid_invoice_covering_a_grant_holds_its_expiry_until_paid(
    make_world: Callable[[datetime], World],
) -> None:
    w = make_world(at(2026, 1, 1))
    ada = w.customer("ada")
    advance = {**fee("40"), "invoice_cadence": "ADVANCE"}
    sub = w.subscribe(ada, [advance])  # opening invoice of 40.00 for January, unpaid
    (opening,) = w.invoices(sub)
    assert opening.amount_remaining == D("40.00")
    grant = w.top_up(ada, "10", key="g", expiry=at(2026, 1, 10), allowed=(WalletPriceType.USAGE,))

    w.run(at(2026, 1, 11))  # the grant's creation lies in the unpaid January invoice's period
    wallet = w.wallet(grant.wallet_id)
    assert wallet.credit_balance == D(10)
    assert wallet.next_expiry_at == at(2026, 1, 11) + timedelta(minutes=15)

    w.s.invoices.update_payment(opening.id, payment_status="SUCCEEDED", amount="40.00")
    w.run(at(2026, 1, 11, 1))
    (expired,) = [
        r for r in w.rows(grant.wallet_id) if r.transaction_reason is TransactionReason.CREDIT_EXPIRED
    ]
    assert (expired.source_transaction_id, expired.credit_amount) == (grant.id, D(10))
    assert w.check_cache(grant.wallet_id) == D(0)
    assert w.wallet(grant.wallet_id).next_expiry_at is None


def test_a_pending_billing_holds_expiry_and_the_late_invoice_still_uses_the_credits(
    make_world: Callable[[datetime], World],
) -> None:
    from billingkit.services.context import DueRun
    from billingkit.services.credit_expiry import expire_due_credits
    from billingkit.services.due_work import run_due_work

    w = make_world(at(2026, 1, 1))
    ada = w.customer("ada")
    sub = w.subscribe(ada, [per_call(w.meter_id)])
    grant = w.top_up(ada, "50", key="g", expiry=at(2026, 2, 1, 12))
    w.usage(300, at(2026, 1, 5), customer="ada", prefix="jan")  # 30.00

    # A worker that only expires credits runs after the grant's expiry, before January is billed.
    w.clock.set(at(2026, 2, 2))
    run = DueRun(
        now=w.clock.now(), ids=w.billing.ids, settings=w.billing.settings, providers=w.billing.providers
    )
    run_due_work(w.billing.storage, run, batch_size=10, handlers={"wallets": expire_due_credits})
    assert w.wallet(grant.wallet_id).credit_balance == D(50)  # held: January is not billed yet

    assert w.wallet(grant.wallet_id).next_expiry_at == at(2026, 2, 2) + timedelta(minutes=15)

    # The late run bills January with the credits live through it, then expires the rest.
    w.run(at(2026, 2, 2) + timedelta(minutes=15))
    (january,) = w.invoices(sub)
    assert (january.total_prepaid_credits_applied, january.amount_due) == (D("30.00"), D("0.00"))
    reasons = [(r.transaction_reason, r.credit_amount) for r in w.rows(grant.wallet_id)]
    assert reasons == [
        (TransactionReason.FREE_CREDIT_GRANT, D(50)),
        (TransactionReason.CREDIT_ADJUSTMENT, D(30)),
        (TransactionReason.CREDIT_EXPIRED, D(20)),
    ]
    assert w.check_cache(grant.wallet_id) == D(0)
