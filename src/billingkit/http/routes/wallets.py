"""``/v1/wallets`` and the wallets of a customer (``/v1/customers/wallets``,
``/v1/customers/{id}/wallets``). The router has no prefix; the app includes it before the
customers router, so ``/customers/wallets`` is not taken for a customer id."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Query

from billingkit.domain.resources import Status
from billingkit.domain.validation import parse_input
from billingkit.domain.wallets import TransactionReason, TransactionStatus, TransactionType
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset, Order
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.wallets import (
    ListWalletsResponse,
    ListWalletTransactionsResponse,
    TopUpWalletResponse,
    WalletResponse,
)
from billingkit.services.wallet_topups import TopUpRequest
from billingkit.services.wallet_transactions import WalletTransactionSearch
from billingkit.services.wallets import CustomerWalletsQuery, WalletCreate, WalletSearch, WalletUpdate

router = APIRouter(tags=["wallets"], route_class=WireRoute)

Text = Annotated[str | None, Query(min_length=1, max_length=255)]


def _wallets(wallets: list[Any]) -> list[WalletResponse]:
    return [WalletResponse.model_validate(wallet.to_dict()) for wallet in wallets]


@router.get("/customers/wallets")
def get_customer_wallets(caller: EnvCaller, id: Text = None, lookup_key: Text = None) -> list[WalletResponse]:
    """The wallets of the customer named by ``id`` or ``lookup_key`` (its external id), oldest
    first (a plain array, as the reference answers)."""
    return _wallets(caller.wallets.for_customer(CustomerWalletsQuery(id=id, lookup_key=lookup_key)))


@router.get("/customers/{customer_id}/wallets")
def get_wallets_by_customer_id(caller: EnvCaller, customer_id: str) -> list[WalletResponse]:
    return _wallets(caller.wallets.list_for_customer(customer_id))


@router.post("/wallets")  # the reference answers 200
def create_wallet(caller: EnvCaller, body: WalletCreate) -> WalletResponse:
    return WalletResponse.model_validate(caller.wallets.create(body).to_dict())


@router.post("/wallets/search")
def search_wallets(caller: EnvCaller, body: WalletSearch) -> ListWalletsResponse:
    return ListWalletsResponse.model_validate(caller.wallets.search(body).to_dict())


@router.post("/wallets/transactions/search")
def search_wallet_transactions(
    caller: EnvCaller, body: WalletTransactionSearch
) -> ListWalletTransactionsResponse:
    return ListWalletTransactionsResponse.model_validate(caller.wallets.search_transactions(body).to_dict())


@router.get("/wallets/{wallet_id}")
def get_wallet(caller: EnvCaller, wallet_id: str) -> WalletResponse:
    return WalletResponse.model_validate(caller.wallets.get(wallet_id).to_dict())


@router.put("/wallets/{wallet_id}")
def update_wallet(caller: EnvCaller, wallet_id: str, body: WalletUpdate) -> WalletResponse:
    return WalletResponse.model_validate(caller.wallets.update(wallet_id, body).to_dict())


@router.post("/wallets/{wallet_id}/terminate")
def terminate_wallet(caller: EnvCaller, wallet_id: str) -> WalletResponse:
    """Debit what is left and close the wallet; answers the closed wallet."""
    return WalletResponse.model_validate(caller.wallets.terminate(wallet_id).to_dict())


@router.post("/wallets/{wallet_id}/top-up")
def top_up_wallet(caller: EnvCaller, wallet_id: str, body: TopUpRequest) -> TopUpWalletResponse:
    return TopUpWalletResponse.model_validate(caller.wallets.top_up(wallet_id, body).to_dict())


@router.get("/wallets/{wallet_id}/transactions")
def list_wallet_transactions(
    caller: EnvCaller,
    wallet_id: str,
    limit: Limit = 50,
    offset: Offset = 0,
    order: Order = "desc",
    status: Status | None = Status.PUBLISHED,
    id: Text = None,
    type: TransactionType | None = None,
    transaction_status: TransactionStatus | None = None,
    transaction_reason: TransactionReason | None = None,
    reference_type: Text = None,
    reference_id: Text = None,
    priority: Annotated[int | None, Query(ge=0)] = None,
    expiry_date_before: Text = None,
    expiry_date_after: Text = None,
    credits_available_gt: Annotated[Decimal | None, Query()] = None,
    start_time: Text = None,
    end_time: Text = None,
    created_by: Text = None,
    expand: Text = None,
) -> ListWalletTransactionsResponse:
    """A page of the wallet's transactions, newest first by default (the filters of the
    reference's ``WalletTransactionFilter``)."""
    given = {name: value for name, value in locals().items() if name not in ("caller", "wallet_id")}
    fields = {
        name: (str(value) if isinstance(value, Decimal) else value)
        for name, value in given.items()
        if value is not None
    }
    search = parse_input(WalletTransactionSearch, fields)
    return ListWalletTransactionsResponse.model_validate(
        caller.wallets.transactions(wallet_id, search).to_dict()
    )
