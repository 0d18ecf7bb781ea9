"""A wallet's real-time balance: ``GET /wallets/{id}/balance/real-time`` (reference notes §6.2).

The arithmetic is :mod:`billingkit.domain.wallet_balances`; this module reads what it needs: the
wallet, the customer's unpaid FINALIZED invoices in the wallet's currency, and the invoice each of
the customer's active subscriptions in that currency would produce for its current period now
(computed with the billing run's own code, :mod:`billingkit.services.invoicing`, without prepaid
credits: they are what is being measured). :func:`real_time_balances` reads many wallets together
(the wallet alerts evaluate them so). Nothing is written. The figures are computed at each
call from the store, never from a cache (``is_cached_fallback`` is always ``False``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.invoices import Invoice, InvoiceStatus
from billingkit.domain.money import ZERO
from billingkit.domain.queries import Filter, Op
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.domain.wallet_balances import PayableLine, payable_usage, real_time_balance, unpaid_share
from billingkit.domain.wallets import Wallet, credits_for
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.invoicing import CurrentPeriods
from billingkit.services.records import get_live, list_where_in

__all__ = ["RealTimeBalance", "get_real_time_balance", "real_time_balances"]

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


def _lines(invoice: Invoice) -> list[PayableLine]:
    return [
        PayableLine.of(
            line.price_type.value if line.price_type is not None else None,
            line.amount,
            line_item_discount=line.line_item_discount,
            invoice_level_discount=line.invoice_level_discount,
            prepaid_credits_applied=line.prepaid_credits_applied,
        )
        for line in invoice.line_items
    ]


def _unpaid_invoices_amounts(uow: UnitOfWork, wallets: Sequence[Wallet]) -> dict[str, Decimal]:
    """Each wallet's share of its customer's unpaid FINALIZED invoices in its currency."""
    invoices = list_where_in(
        uow.invoices,
        "customer_id",
        {w.customer_id for w in wallets},
        Filter("invoice_status", Op.IN, (InvoiceStatus.FINALIZED,)),
        Filter("amount_remaining", Op.GT, ZERO),
    )
    totals: dict[str, Decimal] = {}
    for wallet in wallets:
        allowed = wallet.config.price_types()
        totals[wallet.id] = sum(
            (
                unpaid_share(inv.amount_remaining, _lines(inv), allowed)
                for inv in invoices
                if inv.customer_id == wallet.customer_id and inv.currency == wallet.currency
            ),
            ZERO,
        )
    return totals


def _current_period_usages(
    uow: UnitOfWork, ctx: Context, wallets: Sequence[Wallet], previews: CurrentPeriods
) -> dict[str, Decimal]:
    """Each wallet's payable part of the current periods of its customer's active subscriptions in
    its currency: one invoice preview per subscription, computed together."""
    subs = list_where_in(
        uow.subscriptions,
        "customer_id",
        {w.customer_id for w in wallets},
        Filter("subscription_status", Op.IN, (SubscriptionStatus.ACTIVE,)),
    )
    currencies = {(w.customer_id, w.currency.lower()) for w in wallets}
    subs = [sub for sub in subs if (sub.customer_id, sub.currency.lower()) in currencies]
    lines = {
        sub_id: [
            PayableLine.of(
                line.price_type,
                line.amount,
                line_item_discount=line.line_item_discount,
                invoice_level_discount=line.invoice_level_discount,
            )
            for line in computed.draft.lines
        ]
        for sub_id, (_, computed) in previews.of(subs).items()
    }
    totals: dict[str, Decimal] = {}
    for wallet in wallets:
        allowed = wallet.config.price_types()
        totals[wallet.id] = sum(
            (
                payable_usage(lines[sub.id], allowed)
                for sub in subs
                if sub.customer_id == wallet.customer_id and sub.currency.lower() == wallet.currency.lower()
            ),
            ZERO,
        )
    return totals


def real_time_balances(
    uow: UnitOfWork, ctx: Context, wallets: Sequence[Wallet], previews: CurrentPeriods | None = None
) -> dict[str, RealTimeBalance]:
    """:func:`get_real_time_balance` of each of ``wallets`` (by id), read together: a few
    statements and one invoice preview per subscription for any number of wallets (``previews``:
    those already computed at this instant, shared with other readers)."""
    if not wallets:
        return {}
    unpaid = _unpaid_invoices_amounts(uow, wallets)
    usage = _current_period_usages(uow, ctx, wallets, previews or CurrentPeriods(uow, ctx.now))
    balances: dict[str, RealTimeBalance] = {}
    for wallet in wallets:
        balance = real_time_balance(wallet.balance, unpaid[wallet.id], usage[wallet.id])
        balances[wallet.id] = RealTimeBalance(
            wallet=wallet,
            real_time_balance=balance,
            real_time_credit_balance=credits_for(balance, wallet.conversion_rate),
            current_period_usage=usage[wallet.id],
            unpaid_invoices_amount=unpaid[wallet.id],
            is_cached_fallback=False,
        )
    return balances


def get_real_time_balance(uow: UnitOfWork, ctx: Context, *, wallet_id: str) -> RealTimeBalance:
    """Wallet ``wallet_id``'s balance less its customer's unpaid invoices and current-period usage
    charges, within the wallet's allowed price types (:mod:`billingkit.domain.wallet_balances`).

    Raises ``NotFound`` for an unknown wallet.
    """
    ctx.require(ENTITY, Action.READ)
    wallet = get_live(uow.wallets, "wallet", wallet_id)
    return real_time_balances(uow, ctx, [wallet])[wallet.id]
