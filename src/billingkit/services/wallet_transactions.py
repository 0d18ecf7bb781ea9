"""Reading a wallet's ledger: ``GET /wallets/{id}/transactions`` and
``POST /wallets/transactions/search`` (the reference's ``WalletTransactionFilter``).

Each transaction answers with what the reference shows beside the stored row: its wallet's
``currency``, ``conversion_rate`` and ``topup_conversion_rate``, and ``credits_available`` (for a
completed credit row, its credits not yet drawn by debits; 0 for debits, pending and failed rows).
Newest first by default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator

from billingkit.domain.access import Action
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.validation import DecimalText, UtcDatetime
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    TransactionStatus,
    TransactionType,
    Wallet,
    WalletTransaction,
)
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.context import Context
from billingkit.services.records import get_live
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "WalletTransactionDetail",
    "WalletTransactionSearch",
    "details",
    "list_wallet_transactions",
    "search_wallet_transactions",
]

ENTITY = "wallet"


class WalletTransactionDetail(WalletTransaction):
    """A ledger row as reads answer it (the reference's ``WalletTransactionResponse``)."""

    credits_available: DecimalText
    currency: str
    conversion_rate: DecimalText
    topup_conversion_rate: DecimalText

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _number_as_written(value: Any) -> Any:
    # The reference's filter sends credits_available_gt as a JSON number: read it as written.
    return str(value) if isinstance(value, float) else value


class WalletTransactionSearch(SearchRequest):
    """The reference's ``WalletTransactionFilter`` (plus ``wallet_id``, which the route of one
    wallet's transactions fills in). ``expiry_date_before``/``expiry_date_after`` include the
    instant given; ``credits_available_gt`` keeps completed credit rows with more credits left
    than that. ``created_by`` is not supported."""

    kind: ClassVar[str] = "wallet_transactions"
    not_supported: ClassVar[frozenset[str]] = frozenset({"created_by"})

    wallet_id: Annotated[str | None, Searches("wallet_id", Op.EQ)] = None
    id: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    type: Annotated[TransactionType | None, Searches("type", Op.EQ)] = None
    transaction_status: Annotated[list[TransactionStatus] | None, Searches("transaction_status", Op.IN)] = (
        None
    )
    transaction_reason: Annotated[list[TransactionReason] | None, Searches("transaction_reason", Op.IN)] = (
        None
    )
    reference_type: Annotated[TransactionReferenceType | None, Searches("reference_type", Op.EQ)] = None
    reference_id: Annotated[str | None, Searches("reference_id", Op.EQ)] = None
    priority: Annotated[int | None, Searches("priority", Op.EQ)] = None
    expiry_date_before: Annotated[UtcDatetime | None, Searches("expiry_date", Op.LTE)] = None
    expiry_date_after: Annotated[UtcDatetime | None, Searches("expiry_date", Op.GTE)] = None
    credits_available_gt: Annotated[DecimalText | None, BeforeValidator(_number_as_written)] = None


def details(
    uow: UnitOfWork, rows: Sequence[WalletTransaction], *, wallets: Mapping[str, Wallet] | None = None
) -> list[WalletTransactionDetail]:
    """``rows`` with their wallet's currency and rates and their credits available (reads each
    wallet's rows once; ``wallets`` may hand in wallets already read)."""
    wanted = {row.wallet_id for row in rows}
    known = dict(wallets or {})
    missing = wanted - set(known)
    known.update({wallet.id: wallet for wallet in uow.wallets.find_many(missing)} if missing else {})
    left = {lot.id: lot.credits_left for lots in wallet_ledger.lots(uow, wanted).values() for lot in lots}
    out = []
    for row in rows:
        wallet = known[row.wallet_id]
        out.append(
            WalletTransactionDetail.model_validate(
                {
                    **dict(row),
                    "credits_available": left.get(row.id, Decimal(0)),
                    "currency": wallet.currency,
                    "conversion_rate": wallet.conversion_rate,
                    "topup_conversion_rate": wallet.topup_conversion_rate,
                }
            )
        )
    return out


def _with_credits_left(uow: UnitOfWork, query: ListQuery, above: Decimal, wallet_id: str | None) -> ListQuery:
    """``query`` narrowed to the completed credit rows with more than ``above`` credits left.
    Reads the debit sums per lot (one statement) and the ids of the matching credit rows."""
    scope = {"wallet_id": wallet_id} if wallet_id is not None else {}
    drawn = uow.wallet_transactions.sum_by(
        "credit_amount", "source_transaction_id", type=TransactionType.DEBIT, **scope
    )
    credits = (
        *query.filters,
        Filter("type", Op.EQ, TransactionType.CREDIT.value),
        Filter("transaction_status", Op.IN, [TransactionStatus.COMPLETED.value]),
    )
    ids: list[str] = []
    offset = 0
    while True:
        page = uow.wallet_transactions.list(
            ListQuery(
                filters=credits,
                sort=(Sort("id", descending=False),),
                limit=MAX_LIMIT,
                offset=offset,
                status=query.status,
            )
        )
        ids += [row.id for row in page.items if row.credit_amount - drawn.get(row.id, Decimal(0)) > above]
        if not page.has_more:
            break
        offset += len(page.items)
    return replace(query, filters=(*credits, Filter("id", Op.IN, ids)))


def _page(uow: UnitOfWork, search: WalletTransactionSearch) -> Page[WalletTransactionDetail]:
    query = search.to_query()
    if search.credits_available_gt is not None:
        query = _with_credits_left(uow, query, search.credits_available_gt, search.wallet_id)
        if not query.filters[-1].value:
            return Page(items=[], total=0, limit=query.limit, offset=query.offset)
    page = uow.wallet_transactions.list(query)
    return Page(items=details(uow, page.items), total=page.total, limit=page.limit, offset=page.offset)


def list_wallet_transactions(
    uow: UnitOfWork, ctx: Context, *, wallet_id: str, search: WalletTransactionSearch
) -> Page[WalletTransactionDetail]:
    """A page of wallet ``wallet_id``'s transactions matching ``search``; ``NotFound`` for an
    unknown wallet."""
    ctx.require(ENTITY, Action.READ)
    wallet = get_live(uow.wallets, "wallet", wallet_id)
    return _page(uow, search.model_copy(update={"wallet_id": wallet.id}))


def search_wallet_transactions(
    uow: UnitOfWork, ctx: Context, *, search: WalletTransactionSearch
) -> Page[WalletTransactionDetail]:
    """A page of the environment's wallet transactions matching ``search``."""
    ctx.require(ENTITY, Action.READ)
    return _page(uow, search)
