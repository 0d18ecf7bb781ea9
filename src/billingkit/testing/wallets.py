"""Checking wallets against their ledger, for tests of anything that moves credits.

A wallet caches the sum of its completed ledger rows as ``credit_balance`` (decision 200); the
cache is never trusted alone. After a scenario, a test calls::

    from billingkit.testing.wallets import assert_wallets_balanced

    assert_wallets_balanced(scoped)               # every wallet of the scope
    assert_wallets_balanced(scoped, wallet.id)    # or the ones named

which fails (``AssertionError`` naming the wallet) when a wallet's cached balance differs from the
sum of its rows, or when a credit row was drawn beyond its credits (over-consumption).
:func:`ledger_balance` is the sum itself, for a test that holds a unit of work.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import TYPE_CHECKING

from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.wallets import TransactionStatus, TransactionType, Wallet, WalletTransaction
from billingkit.ports import UnitOfWork

if TYPE_CHECKING:
    from billingkit.facade.scoped import Scoped

__all__ = ["assert_wallets_balanced", "ledger_balance"]


def ledger_balance(uow: UnitOfWork, wallet_id: str) -> Decimal:
    """Wallet ``wallet_id``'s credits by its ledger: its completed credit rows minus its debit
    rows (pending and failed credits count nothing), summed exactly by the store."""
    ledger = uow.wallet_transactions
    credits = ledger.sum(
        "credit_amount",
        wallet_id=wallet_id,
        type=TransactionType.CREDIT,
        transaction_status=TransactionStatus.COMPLETED,
    )
    debits = ledger.sum("credit_amount", wallet_id=wallet_id, type=TransactionType.DEBIT)
    return credits - debits


def _all_wallets(uow: UnitOfWork) -> list[Wallet]:
    found: list[Wallet] = []
    offset = 0
    while True:
        page = uow.wallets.list(
            ListQuery(sort=(Sort("id", descending=False),), limit=MAX_LIMIT, offset=offset, status=None)
        )
        found += page.items
        if not page.has_more:
            return found
        offset += len(page.items)


def _overdrawn(uow: UnitOfWork, wallet_id: str) -> list[str]:
    """The credit rows of the wallet that debits drew more from than they hold (or that a debit
    names without being a completed credit of the same wallet)."""
    rows: list[WalletTransaction] = []
    offset = 0
    while True:
        page = uow.wallet_transactions.list(
            ListQuery(
                filters=(Filter("wallet_id", Op.EQ, wallet_id),),
                sort=(Sort("id", descending=False),),
                limit=MAX_LIMIT,
                offset=offset,
                status=None,
            )
        )
        rows += page.items
        if not page.has_more:
            break
        offset += len(page.items)
    drawn: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        if row.type is TransactionType.DEBIT and row.source_transaction_id is not None:
            drawn[row.source_transaction_id] += row.credit_amount
    lots = {
        row.id: row.credit_amount
        for row in rows
        if row.type is TransactionType.CREDIT and row.transaction_status is TransactionStatus.COMPLETED
    }
    return sorted(
        f"{lot}: {taken} drawn from {lots.get(lot, Decimal(0))}"
        for lot, taken in drawn.items()
        if taken > lots.get(lot, Decimal(0))
    )


def assert_wallets_balanced(scoped: Scoped, *wallet_ids: str) -> list[Wallet]:
    """Check that each wallet named (every wallet of ``scoped``'s environment when none is) has
    a cached ``credit_balance`` equal to :func:`ledger_balance` and no lot drawn beyond its
    credits; answers the wallets as stored. Raises ``AssertionError`` naming the first wallet
    that disagrees."""
    storage = scoped.billing.storage
    with storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
        wallets = [uow.wallets.get(wallet_id) for wallet_id in wallet_ids] or _all_wallets(uow)
        for wallet in wallets:
            summed = ledger_balance(uow, wallet.id)
            assert wallet.credit_balance == summed, (
                f"wallet {wallet.id} caches {wallet.credit_balance} credits; its ledger sums to {summed}"
            )
            overdrawn = _overdrawn(uow, wallet.id)
            assert not overdrawn, f"wallet {wallet.id} has lots drawn beyond their credits: {overdrawn}"
    return wallets
