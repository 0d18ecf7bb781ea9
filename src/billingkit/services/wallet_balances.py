"""A wallet's real-time balance: ``GET /wallets/{id}/balance/real-time`` (reference notes §6.2).

The arithmetic is :mod:`billingkit.domain.wallet_balances`; this module reads what it needs: the
wallet, the customer's unpaid FINALIZED invoices in the wallet's currency, and the invoice each of
the customer's active subscriptions in that currency would produce for its current period now
(computed with the billing run's own code, :mod:`billingkit.services.invoicing`, without prepaid
credits: they are what is being measured). Nothing is written. The figures are computed at each
call from the store, never from a cache (``is_cached_fallback`` is always ``False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.invoices import BillingReason, InvoiceStatus
from billingkit.domain.money import ZERO
from billingkit.domain.periods import Period
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.domain.wallet_balances import PayableLine, payable_usage, real_time_balance, unpaid_share
from billingkit.domain.wallets import Wallet, credits_for
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.invoicing import Charge, compute_invoices, load_snapshot
from billingkit.services.records import get_live

__all__ = ["RealTimeBalance", "get_real_time_balance"]

ENTITY = "wallet"


@dataclass(frozen=True, slots=True)
class RealTimeBalance:
    """``wallet`` with its real-time figures (money in the wallet's currency; credits at its
    ``conversion_rate``). The wire form is the wallet's plus these fields (WalletBalanceResponse)."""

    wallet: Wallet
    real_time_balance: Decimal
    real_time_credit_balance: Decimal
    current_period_usage: Decimal
    unpaid_invoices_amount: Decimal
    is_cached_fallback: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = self.wallet.to_dict()
        data.update(
            real_time_balance=str(self.real_time_balance),
            real_time_credit_balance=str(self.real_time_credit_balance),
            current_period_usage=str(self.current_period_usage),
            unpaid_invoices_amount=str(self.unpaid_invoices_amount),
            is_cached_fallback=self.is_cached_fallback,
        )
        return data


def _unpaid_invoices_amount(uow: UnitOfWork, wallet: Wallet, allowed: frozenset[str]) -> Decimal:
    query = ListQuery(
        filters=(
            Filter("customer_id", Op.EQ, wallet.customer_id),
            Filter("currency", Op.EQ, wallet.currency),
            Filter("invoice_status", Op.IN, (InvoiceStatus.FINALIZED,)),
            Filter("amount_remaining", Op.GT, ZERO),
        ),
        sort=(Sort("id", descending=False),),
        limit=MAX_LIMIT,
    )
    total = ZERO
    offset = 0
    while True:
        page = uow.invoices.list(ListQuery(query.filters, query.sort, query.limit, offset))
        for invoice in page.items:
            lines = [
                PayableLine.of(
                    line.price_type.value if line.price_type is not None else None,
                    line.amount,
                    line_item_discount=line.line_item_discount,
                    invoice_level_discount=line.invoice_level_discount,
                    prepaid_credits_applied=line.prepaid_credits_applied,
                )
                for line in invoice.line_items
            ]
            total += unpaid_share(invoice.amount_remaining, lines, allowed)
        if not page.has_more:
            return total
        offset += len(page.items)


def _current_period_usage(uow: UnitOfWork, ctx: Context, wallet: Wallet, allowed: frozenset[str]) -> Decimal:
    subs = [
        sub
        for sub in uow.subscriptions.list(
            ListQuery(
                filters=(
                    Filter("customer_id", Op.EQ, wallet.customer_id),
                    Filter("subscription_status", Op.IN, (SubscriptionStatus.ACTIVE,)),
                ),
                limit=MAX_LIMIT,
            )
        ).items
        if sub.currency.lower() == wallet.currency.lower()
    ]
    if not subs:
        return ZERO
    # The current period's ARREAR charges with the usage so far: no next period, no ADVANCE.
    charges = [
        Charge(
            sub,
            BillingReason.SUBSCRIPTION_CYCLE,
            "preview",
            Period(sub.current_period_start, sub.current_period_end),
        )
        for sub in subs
    ]
    snapshot = load_snapshot(uow, subs, at=ctx.now, credits=False)
    total = ZERO
    for computed in compute_invoices(uow, charges, snapshot, as_of=ctx.now):
        total += payable_usage(
            (
                PayableLine.of(
                    line.price_type,
                    line.amount,
                    line_item_discount=line.line_item_discount,
                    invoice_level_discount=line.invoice_level_discount,
                )
                for line in computed.draft.lines
            ),
            allowed,
        )
    return total


def get_real_time_balance(uow: UnitOfWork, ctx: Context, *, wallet_id: str) -> RealTimeBalance:
    """Wallet ``wallet_id``'s balance less its customer's unpaid invoices and current-period usage
    charges, within the wallet's allowed price types (:mod:`billingkit.domain.wallet_balances`).

    Raises ``NotFound`` for an unknown wallet.
    """
    ctx.require(ENTITY, Action.READ)
    wallet = get_live(uow.wallets, "wallet", wallet_id)
    allowed = wallet.config.price_types()
    unpaid = _unpaid_invoices_amount(uow, wallet, allowed)
    usage = _current_period_usage(uow, ctx, wallet, allowed)
    balance = real_time_balance(wallet.balance, unpaid, usage)
    return RealTimeBalance(
        wallet=wallet,
        real_time_balance=balance,
        real_time_credit_balance=credits_for(balance, wallet.conversion_rate),
        current_period_usage=usage,
        unpaid_invoices_amount=unpaid,
        is_cached_fallback=False,
    )
