"""Reading wallets and their ledger straight from storage, for tests of parts that move credits
without a public wallet area of their own (payments, voids). Each read checks decision 200's
invariant: a wallet's cached ``credit_balance`` equals the sum of its completed rows."""

from __future__ import annotations

from decimal import Decimal

from billingkit import Scoped
from billingkit.domain.queries import ListQuery, Sort
from billingkit.domain.wallets import TransactionStatus, TransactionType, Wallet, WalletTransaction


def _all(repo, scoped: Scoped) -> list:  # type: ignore[no-untyped-def]
    query = ListQuery(sort=(Sort("id", descending=False),), limit=1000, status=None)
    return list(repo.list(query).items)


def ledger(scoped: Scoped) -> tuple[list[Wallet], list[WalletTransaction]]:
    """Every wallet and ledger row of the scope (in id order), after checking each wallet's cache."""
    with scoped.billing.storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
        wallets: list[Wallet] = _all(uow.wallets, scoped)
        rows: list[WalletTransaction] = _all(uow.wallet_transactions, scoped)
    for wallet in wallets:
        total = sum(
            (
                row.credit_amount if row.type is TransactionType.CREDIT else -row.credit_amount
                for row in rows
                if row.wallet_id == wallet.id and row.transaction_status is TransactionStatus.COMPLETED
            ),
            Decimal(0),
        )
        assert wallet.credit_balance == total, (wallet.id, wallet.credit_balance, total)
    return wallets, rows


def add_wallet(scoped: Scoped, wallet: Wallet, *credits: Decimal) -> Wallet:
    """Store ``wallet`` with completed credit rows of ``credits`` (through the one ledger writer)."""
    from billingkit.domain.wallets import TransactionReason, movement_key
    from billingkit.services import wallet_ledger

    def run(uow, ctx):  # type: ignore[no-untyped-def]
        uow.wallets.add(wallet)
        current = wallet
        for index, amount in enumerate(credits):
            current = wallet_ledger.credit(
                uow,
                ctx,
                current,
                credits=amount,
                reason=TransactionReason.FREE_CREDIT_GRANT,
                key=movement_key("test_grant", wallet.id, str(index)),
            ).wallet
        return current

    return scoped.run(run)
