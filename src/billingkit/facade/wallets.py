"""The wallets area of ``Scoped``: prepaid (and post-paid) credit accounts, their top-ups and
their ledger. Declared operations only (see :mod:`billingkit.facade.operations`); the request
models live in ``billingkit.services.wallets``, ``wallet_topups`` and ``wallet_transactions``."""

from __future__ import annotations

from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp
from billingkit.services import wallet_topups, wallet_transactions, wallets

__all__ = ["Wallets"]


class Wallets(Area):
    """Wallets of customers: ``create(customer_id=..., currency="usd", initial_credits_to_load="50")``,
    ``top_up(id, credits_to_add="100", transaction_reason="PURCHASED_CREDIT_DIRECT")``,
    ``transactions(id)`` (newest first), ``terminate(id)`` (debits what is left and closes it)."""

    create = RequestOp(wallets.create_wallet, wallets.WalletCreate)
    get = IdOp(wallets.get_wallet)
    #: Every wallet of one customer (by customer id), oldest first.
    list_for_customer = IdOp(wallets.wallets_of_customer)
    #: Every wallet of one customer named by ``id`` or ``lookup_key`` (its external id).
    for_customer = RequestOp(wallets.customer_wallets, wallets.CustomerWalletsQuery)
    search = RequestOp(wallets.search_wallets, wallets.WalletSearch)
    update = IdRequestOp(wallets.update_wallet, wallets.WalletUpdate)
    terminate = IdOp(wallets.terminate_wallet)
    top_up = IdRequestOp(wallet_topups.top_up_wallet, wallet_topups.TopUpRequest)
    transactions = IdRequestOp(
        wallet_transactions.list_wallet_transactions, wallet_transactions.WalletTransactionSearch
    )
    search_transactions = RequestOp(
        wallet_transactions.search_wallet_transactions, wallet_transactions.WalletTransactionSearch
    )
