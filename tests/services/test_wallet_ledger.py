"""The ledger core (``services.wallet_ledger``), on every store: a credit is idempotent on its
key, a pending credit settles once, a debit draws from named lots (one row per lot), and the
cached balance equals the sum of the rows after every step. On PostgreSQL, two units of work
debiting one wallet at once: one commits, the other is a ``VersionConflict``, nothing is
consumed twice."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.access import Actor
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionStatus,
    TransactionType,
    Wallet,
    WalletPriceType,
    WalletStatus,
    consumption_order,
    draws_for_amount,
    draws_for_credits,
)
from billingkit.errors import AlreadyExists, InvalidOperation, ValidationError, VersionConflict
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.context import Context
from billingkit.storage.sql import SqlStorage
from billingkit.testing.wallets import assert_wallets_balanced, ledger_balance
from tests.conftest import make_storage

D = Decimal
R = TypeVar("R")
GRANT = TransactionReason.FREE_CREDIT_GRANT


@pytest.fixture
def customer_id(test_env: Scoped) -> str:
    return test_env.customers.create(external_id="c1", name="Ada").id


@pytest.fixture
def wallet(test_env: Scoped, customer_id: str) -> Wallet:
    return test_env.wallets.create(customer_id=customer_id, currency="usd", conversion_rate="0.5")


def run(env: Scoped, wallet_id: str, step: Callable[[UnitOfWork, Context, Wallet], R]) -> R:
    """``step`` in one unit of work of ``env``, with the wallet as stored now."""

    def go(uow: UnitOfWork, ctx: Context) -> R:
        return step(uow, ctx, uow.wallets.get(wallet_id))

    return env.run(go)


def credit(env: Scoped, wallet_id: str, credits: str, key: str, **fields: Any) -> wallet_ledger.Movement:
    return run(
        env,
        wallet_id,
        lambda uow, ctx, w: wallet_ledger.credit(
            uow, ctx, w, credits=D(credits), reason=GRANT, key=key, **fields
        ),
    )


def debit_amount(env: Scoped, wallet_id: str, amount: str, cause: str) -> wallet_ledger.Movement:
    """Pay ``amount`` (money) from the wallet's lots in consumption order."""

    def step(uow: UnitOfWork, ctx: Context, w: Wallet) -> wallet_ledger.Movement:
        lots = consumption_order(wallet_ledger.lots(uow, [w.id])[w.id], at=ctx.now)
        draws = draws_for_amount(lots, D(amount), w.conversion_rate, w.currency)
        return wallet_ledger.debit(
            uow,
            ctx,
            w,
            draws,
            reason=TransactionReason.CREDIT_ADJUSTMENT,
            cause="invoice_credits",
            parts=[cause],
        )

    return run(env, wallet_id, step)


def balanced(env: Scoped, wallet_id: str) -> Wallet:
    (stored,) = assert_wallets_balanced(env, wallet_id)
    return stored


def test_a_credit_is_idempotent_on_its_key(test_env: Scoped, wallet: Wallet, customer_id: str) -> None:
    first = credit(test_env, wallet.id, "40", "grant|g1", priority=1)
    assert first.created and first.wallet.credit_balance == D(40)
    # 40 credits at 0.5 usd each: the row is worth 20.00.
    (row,) = first.transactions
    assert (row.credit_amount, row.amount, row.priority) == (D(40), D("20.00"), 1)
    again = credit(test_env, wallet.id, "40", "grant|g1")
    assert (again.created, again.transactions, again.wallet.credit_balance) == (False, (row,), D(40))
    assert balanced(test_env, wallet.id).version == first.wallet.version
    assert test_env.notifications.list(event_type="wallet.transaction.created").total == 1
    other = test_env.wallets.create(customer_id=customer_id, currency="eur")
    with pytest.raises(AlreadyExists):
        credit(test_env, other.id, "40", "grant|g1")
    with pytest.raises(ValidationError) as raised:
        credit(test_env, wallet.id, "0", "grant|g2")
    assert raised.value.field == "credits"
    assert test_env.wallets.transactions(wallet.id).total == 1
    assert_wallets_balanced(test_env)


def test_a_credit_worth_less_than_a_cent_still_records_a_positive_amount(
    test_env: Scoped, wallet: Wallet
) -> None:
    # 0.01 credit at 0.5 usd is worth 0.005 usd: rounded down it would be 0.00, which no row holds.
    (row,) = credit(test_env, wallet.id, "0.01", "grant|dust").transactions
    assert (row.credit_amount, row.amount) == (D("0.01"), D("0.005"))
    balanced(test_env, wallet.id)


def test_a_pending_credit_settles_once(test_env: Scoped, wallet: Wallet) -> None:
    pending = credit(test_env, wallet.id, "10", "purchase|p1", status=TransactionStatus.PENDING)
    (row,) = pending.transactions
    assert (row.transaction_status, pending.wallet.credit_balance) == (TransactionStatus.PENDING, D(0))
    assert balanced(test_env, wallet.id).credit_balance == 0  # pending counts in no balance

    def settle(status: TransactionStatus) -> Callable[[UnitOfWork, Context, Wallet], wallet_ledger.Movement]:
        return lambda uow, ctx, w: wallet_ledger.settle(uow, ctx, row.id, status)

    landed = run(test_env, wallet.id, settle(TransactionStatus.COMPLETED))
    assert landed.created and landed.wallet.credit_balance == D(10)
    assert landed.transactions[0].transaction_status is TransactionStatus.COMPLETED
    repeat = run(test_env, wallet.id, settle(TransactionStatus.COMPLETED))
    assert not repeat.created and repeat.wallet.credit_balance == D(10)
    with pytest.raises(InvalidOperation):
        run(test_env, wallet.id, settle(TransactionStatus.FAILED))
    assert balanced(test_env, wallet.id).credit_balance == D(10)

    failing = credit(test_env, wallet.id, "7", "purchase|p2", status=TransactionStatus.PENDING).transactions[
        0
    ]
    failed = run(
        test_env,
        wallet.id,
        lambda uow, ctx, w: wallet_ledger.settle(uow, ctx, failing.id, TransactionStatus.FAILED),
    )
    assert failed.wallet.credit_balance == D(10)
    with pytest.raises(InvalidOperation):
        run(
            test_env,
            wallet.id,
            lambda uow, ctx, w: wallet_ledger.settle(uow, ctx, failing.id, TransactionStatus.COMPLETED),
        )
    updated = test_env.notifications.list(event_type="wallet.transaction.updated").items
    assert [e.payload["updated_transaction"]["transaction_status"] for e in updated] == [
        "completed",
        "failed",
    ]
    assert balanced(test_env, wallet.id).credit_balance == D(10)


def test_a_debit_draws_from_named_lots_in_consumption_order(
    test_env: Scoped, wallet: Wallet, clock: TestClock
) -> None:
    # Lots (0.5 usd a credit): A 20 credits priority 1 (10.00), B 100 credits expiring in June
    # (50.00), C 60 credits never expiring (30.00), D 50 credits already expired.
    a = credit(test_env, wallet.id, "20", "grant|a", priority=1).transactions[0]
    b = credit(
        test_env, wallet.id, "100", "grant|b", expiry_date=datetime(2026, 6, 1, tzinfo=UTC)
    ).transactions[0]
    c = credit(test_env, wallet.id, "60", "grant|c").transactions[0]
    d = credit(
        test_env, wallet.id, "50", "grant|d", expiry_date=datetime(2026, 5, 2, tzinfo=UTC)
    ).transactions[0]
    clock.advance(timedelta(days=2))
    # 45.00 usd: all of A (10.00), then 35.00 of B (70 credits); C and the expired lot untouched.
    moved = debit_amount(test_env, wallet.id, "45.00", "inv_1")
    assert [(r.type, r.source_transaction_id, r.credit_amount, r.amount) for r in moved.transactions] == [
        (TransactionType.DEBIT, a.id, D(20), D("10.00")),
        (TransactionType.DEBIT, b.id, D(70), D("35.00")),
    ]
    assert [r.idempotency_key for r in moved.transactions] == [
        f"invoice_credits|inv_1|{a.id}",
        f"invoice_credits|inv_1|{b.id}",
    ]
    assert moved.wallet.credit_balance == D(140)  # 230 - 90
    left = run(test_env, wallet.id, lambda uow, ctx, w: wallet_ledger.lots(uow, [w.id])[w.id])
    # The expired lot still holds its credits (expiring them is the expiry run's movement).
    assert {lot.id: lot.credits_left for lot in left} == {b.id: D(30), c.id: D(60), d.id: D(50)}
    views = {
        row.id: row.credits_available for row in test_env.wallets.transactions(wallet.id, type="credit").items
    }
    assert (views[a.id], views[b.id], views[c.id]) == (D(0), D(30), D(60))
    balanced(test_env, wallet.id)

    # The same cause again: every key is taken, nothing is written, the balance stays.
    with pytest.raises(AlreadyExists):
        debit_amount(test_env, wallet.id, "1.00", "inv_1")
    assert balanced(test_env, wallet.id).credit_balance == D(140)
    # More than the usable lots hold (B 15.00 + C 30.00; D is expired): refused whole.
    with pytest.raises(InvalidOperation):
        debit_amount(test_env, wallet.id, "45.01", "inv_2")
    assert test_env.wallets.transactions(wallet.id, type="debit").total == 2


def test_a_draw_beyond_its_lot_or_from_another_wallet_is_refused(
    test_env: Scoped, wallet: Wallet, customer_id: str
) -> None:
    lot_row = credit(test_env, wallet.id, "10", "grant|a").transactions[0]
    other = test_env.wallets.create(customer_id=customer_id, currency="usd", conversion_rate="0.25")
    credit(test_env, other.id, "10", "grant|b")

    def overdraw(uow: UnitOfWork, ctx: Context, w: Wallet) -> wallet_ledger.Movement:
        (lot,) = wallet_ledger.lots(uow, [w.id])[w.id]
        draws = draws_for_credits([lot], D(10), w.conversion_rate, w.currency)
        bigger = [type(draws[0])(lot, D(11), D("5.50"))]
        return wallet_ledger.debit(
            uow, ctx, w, bigger, reason=TransactionReason.MANUAL_BALANCE_DEBIT, cause="x", parts=["1"]
        )

    with pytest.raises(ValidationError) as raised:
        run(test_env, wallet.id, overdraw)
    assert raised.value.field == "draws"

    def elsewhere(uow: UnitOfWork, ctx: Context, w: Wallet) -> wallet_ledger.Movement:
        (lot,) = wallet_ledger.lots(uow, [other.id])[other.id]
        draws = draws_for_credits([lot], D(1), w.conversion_rate, w.currency)
        return wallet_ledger.debit(
            uow, ctx, w, draws, reason=TransactionReason.MANUAL_BALANCE_DEBIT, cause="x", parts=["2"]
        )

    with pytest.raises(ValidationError):
        run(test_env, wallet.id, elsewhere)
    assert test_env.wallets.transactions(wallet.id).total == 1 and lot_row.credit_amount == D(10)
    assert_wallets_balanced(test_env)


def test_a_closed_wallet_refuses_every_movement(test_env: Scoped, wallet: Wallet) -> None:
    pending = credit(test_env, wallet.id, "5", "purchase|p", status=TransactionStatus.PENDING).transactions[0]
    with test_env.billing.storage.unit_of_work(test_env.tenant_id, test_env.environment_id) as uow:
        stored = uow.wallets.get(wallet.id)
        uow.wallets.update(stored.model_copy(update={"wallet_status": WalletStatus.CLOSED}))
        uow.commit()
    with pytest.raises(InvalidOperation):
        credit(test_env, wallet.id, "1", "grant|late")
    with pytest.raises(InvalidOperation):
        run(
            test_env,
            wallet.id,
            lambda uow, ctx, w: wallet_ledger.settle(uow, ctx, pending.id, TransactionStatus.COMPLETED),
        )
    with pytest.raises(InvalidOperation):
        run(
            test_env,
            wallet.id,
            lambda uow, ctx, w: wallet_ledger.debit(uow, ctx, w, [], reason=GRANT, cause="x", parts=["1"]),
        )
    assert test_env.wallets.transactions(wallet.id).total == 1


def test_the_prepaid_wallet_is_found_or_made(test_env: Scoped, customer_id: str) -> None:
    mine = test_env.wallets.create(customer_id=customer_id, currency="usd")

    def prepaid(**fields: Any) -> Callable[[UnitOfWork, Context], Wallet]:
        return lambda uow, ctx: wallet_ledger.prepaid_wallet(
            uow, ctx, customer_id=customer_id, currency="usd", **fields
        )

    assert test_env.run(prepaid()).id == mine.id
    made = test_env.run(prepaid(conversion_rate=D(2), allowed_price_types=(WalletPriceType.USAGE,)))
    assert made.id != mine.id and (made.conversion_rate, made.config.price_types()) == (
        D(2),
        frozenset({"USAGE"}),
    )
    assert test_env.run(prepaid(conversion_rate=D(2))).id == made.id
    assert test_env.notifications.list(event_type="wallet.created").total == 2


# -- concurrency on PostgreSQL ---------------------------------------------------------------------


@pytest.fixture
def pg_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    store = make_storage("postgres", request, tmp_path)
    yield store
    store.close()


def test_two_debits_of_one_wallet_at_once_one_commits_the_other_conflicts(pg_store: SqlStorage) -> None:
    """Both units of work read the wallet (version v, 100 credits) before either writes, then each
    takes all 100 credits for its own invoice. The first commit wins; the second's save of the
    wallet at version v finds it moved and is a ``VersionConflict``: its rows roll back with it,
    so the 100 credits are consumed once."""
    clock = TestClock(datetime(2026, 5, 1, 9, 30, tzinfo=UTC))
    billing = Billing(pg_store, clock)
    setup = billing.bootstrap()
    env = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    customer = env.customers.create(external_id="c1", name="Ada")
    wallet = env.wallets.create(customer_id=customer.id, currency="usd", initial_credits_to_load="100")
    url = pg_store.engine.url.render_as_string(hide_password=False)
    both_read = threading.Barrier(2, timeout=20)

    def take_everything(invoice_id: str) -> str:
        store = SqlStorage.from_url(url, migrate=False)  # its own engine and connections
        try:
            ctx = billing.context(env.tenant_id, env.environment_id, Actor.system())
            with store.unit_of_work(env.tenant_id, env.environment_id) as uow:
                current = uow.wallets.get(wallet.id)
                lots = consumption_order(wallet_ledger.lots(uow, [wallet.id])[wallet.id])
                both_read.wait()
                draws = draws_for_credits(lots, D(100), current.conversion_rate, current.currency)
                wallet_ledger.debit(
                    uow,
                    ctx,
                    current,
                    draws,
                    reason=TransactionReason.CREDIT_ADJUSTMENT,
                    cause="invoice_credits",
                    parts=[invoice_id],
                )
                uow.commit()
            return "committed"
        except VersionConflict:
            return "conflict"
        finally:
            store.close()

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(take_everything, ["inv_a", "inv_b"]))
    assert outcomes == ["committed", "conflict"]
    (stored,) = assert_wallets_balanced(env, wallet.id)
    assert stored.credit_balance == 0
    debits = env.wallets.transactions(wallet.id, type="debit").items
    assert [d.credit_amount for d in debits] == [D(100)]
    with pg_store.unit_of_work(env.tenant_id, env.environment_id) as uow:
        assert ledger_balance(uow, wallet.id) == 0
