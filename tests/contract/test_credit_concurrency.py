"""Prepaid credits are never spent twice: not by a rerun of a billing that already happened, not by
two runners billing two subscriptions of one customer at the same moment.

The wallet's ``version`` serialises its movements: the runner that saves the wallet second gets a
``VersionConflict``, its batch rolls back whole (invoices included) and the due-work runner
retries each subscription alone, reading the wallet as the first runner left it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import billingkit.services.billing_runs as billing_runs
from billingkit import Billing, Scoped, TestClock
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import TransactionReason, TransactionType, WalletTransaction, movement_key
from billingkit.errors import AlreadyExists
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.billing_runs import bill_due_subscriptions
from billingkit.services.context import Context, DueRun
from billingkit.storage.sql import SqlStorage
from tests.conftest import make_storage

D = Decimal
START = datetime(2026, 1, 1, tzinfo=UTC)
RUN_AT = datetime(2026, 2, 1, 1, tzinfo=UTC)


@dataclass
class Fixture:
    clock: TestClock
    billing: Billing
    s: Scoped
    subs: list[Subscription]
    wallet_id: str


def populate(storage: Any, *, subscriptions: int, credits: str) -> Fixture:
    """One customer with ``subscriptions`` usage subscriptions (30.00 of January usage each) and a
    PRE_PAID wallet holding ``credits``."""
    clock = TestClock(START)
    billing = Billing(storage, clock, renewal_notice=None)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    plan = s.plans.create(
        name="Metered",
        prices=[
            {
                "type": "USAGE",
                "billing_model": "FLAT_FEE",
                "amount": "0.1",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ARREAR",
                "meter_id": meter.id,
            }
        ],
    )
    customer = s.customers.create(external_id="ada", name="Ada")
    subs = [
        s.subscriptions.create(
            customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
        )
        for _ in range(subscriptions)
    ]
    # 300 calls: 30.00 on each subscription (both meter the customer's events).
    s.events.ingest_bulk(
        [
            {
                "event_name": "api",
                "external_customer_id": "ada",
                "timestamp": (START + timedelta(days=1, minutes=i)).isoformat(),
                "event_id": f"e{i}",
            }
            for i in range(300)
        ]
    )

    def top_up(uow: UnitOfWork, ctx: Context) -> WalletTransaction:
        wallet = wallet_ledger.prepaid_wallet(uow, ctx, customer_id=customer.id, currency="usd")
        moved = wallet_ledger.credit(
            uow,
            ctx,
            wallet,
            credits=D(credits),
            reason=TransactionReason.FREE_CREDIT_GRANT,
            key=movement_key("test_top_up", customer.id),
        )
        return moved.transactions[0]

    wallet_id = s.run(top_up).wallet_id
    clock.set(RUN_AT)
    return Fixture(clock, billing, s, subs, wallet_id)


def _query(wallet_id: str) -> Any:
    from billingkit.domain.queries import Filter, ListQuery, Op

    return ListQuery(filters=(Filter("wallet_id", Op.EQ, wallet_id),), limit=1000)


def debits(fx: Fixture) -> list[WalletTransaction]:
    rows = fx.s.run(lambda uow, ctx: list(uow.wallet_transactions.list(_query(fx.wallet_id)).items))
    return [row for row in rows if row.type is TransactionType.DEBIT]


def check_spent_once(fx: Fixture, *, credits: Decimal) -> None:
    """The invoices applied exactly the credits the debits took, the wallet's cache equals its
    rows, and no lot gave more than it held."""
    invoices = fx.s.invoices.list(limit=100).items
    applied = sum((inv.total_prepaid_credits_applied for inv in invoices), D(0))
    taken = debits(fx)
    assert sum((row.credit_amount for row in taken), D(0)) == applied
    assert {row.reference_id for row in taken} == {
        inv.id for inv in invoices if inv.total_prepaid_credits_applied
    }
    wallet = fx.s.run(lambda uow, ctx: uow.wallets.get(fx.wallet_id))
    assert wallet.credit_balance == credits - applied >= 0


def test_a_rerun_of_a_billed_period_finds_its_invoice_and_debits_nothing(storage: Any) -> None:
    fx = populate(storage, subscriptions=1, credits="50")
    stale = fx.s.subscriptions.get(fx.subs[0].id)  # as a second runner read it, still due
    report = fx.billing.run_due()
    (invoice,) = report.invoices
    assert (invoice.total_prepaid_credits_applied, invoice.amount_due) == (D("30.00"), D("0.00"))
    before = debits(fx)
    assert [row.credit_amount for row in before] == [D(30)]

    run = DueRun(
        now=fx.clock.now(), ids=fx.billing.ids, settings=fx.billing.settings, providers=fx.billing.providers
    )
    with fx.billing.storage.unit_of_work() as uow, pytest.raises(AlreadyExists):
        bill_due_subscriptions(uow, [stale], run)  # the unit of work is never committed
    assert debits(fx) == before
    check_spent_once(fx, credits=D(50))
    # The whole runner again: nothing is due, nothing moves.
    assert fx.billing.run_due().invoice_count == 0
    assert debits(fx) == before


@pytest.fixture
def postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    store = make_storage("postgres", request, tmp_path)
    yield store
    store.close()


def test_two_runners_spending_one_wallet_at_once_never_spend_a_credit_twice(
    postgres: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    fx = populate(postgres, subscriptions=2, credits="50")
    url = postgres.engine.url.render_as_string(hide_password=False)
    second_storage = SqlStorage.from_url(url, migrate=False)
    second = Billing(second_storage, fx.clock, renewal_notice=None)

    # Both runners read the wallet (with the same 50 credits) before either writes anything.
    both_read = threading.Barrier(2)
    calls = {"n": 0}
    lock = threading.Lock()
    real = billing_runs.load_snapshot

    def load_then_wait(*args: Any, **kwargs: Any) -> Any:
        snapshot = real(*args, **kwargs)
        with lock:
            calls["n"] += 1
            first_two = calls["n"] <= 2
        if first_two:
            both_read.wait(timeout=30)
        return snapshot

    monkeypatch.setattr(billing_runs, "load_snapshot", load_then_wait)
    barrier = threading.Barrier(2)

    def runner(billing: Billing) -> Any:
        barrier.wait(timeout=30)
        return billing.run_due(batch_size=1)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            reports = [f.result(timeout=120) for f in [pool.submit(runner, b) for b in (fx.billing, second)]]
    finally:
        second_storage.close()

    assert all(report.failures == [] for report in reports)
    assert sum(report.invoice_count for report in reports) == 2
    assert calls["n"] == 3  # the loser's batch was retried once, reading the wallet again
    invoices = sorted(fx.s.invoices.list(limit=100).items, key=lambda inv: inv.total_prepaid_credits_applied)
    # One invoice took 30.00; the other, retried, the 20.00 left (and owes 10.00).
    assert [(inv.total_prepaid_credits_applied, inv.amount_due) for inv in invoices] == [
        (D("20.00"), D("10.00")),
        (D("30.00"), D("0.00")),
    ]
    check_spent_once(fx, credits=D(50))
    assert fx.s.run(lambda uow, ctx: uow.wallets.get(fx.wallet_id)).credit_balance == D(0)
