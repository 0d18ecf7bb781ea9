"""Credit expiry, the due-work handler of wallets (reference notes §6.2, §13; decision 205).

A wallet is due at its ``next_expiry_at``. For each claimed wallet, every lot whose expiry has
passed gets a ``CREDIT_EXPIRED`` debit of the credits left on it (key ``credit_expired|<lot id>``,
so a lot expires once however often the worker runs), unless its expiry is postponed
(:func:`billingkit.domain.credit_expiry.plan_expiry`: billing pending, or an unpaid invoice
covering the lot's creation); then ``next_expiry_at`` moves to the earliest expiry still ahead
(or the retry of a postponed lot; ``None`` when nothing is left to expire).

Reads per batch and scope: the wallets' ledger rows, their customers' active subscriptions, and,
only for customers with a lot past its expiry, their unpaid invoices.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import cast

from billingkit.domain.credit_expiry import plan_expiry
from billingkit.domain.invoices import InvoiceStatus
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Record
from billingkit.domain.subscriptions import SubscriptionStatus, SubscriptionType
from billingkit.domain.wallets import (
    Draw,
    Lot,
    TransactionReason,
    Wallet,
    WalletStatus,
    credits_value,
)
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import Context, DueRun
from billingkit.services.records import list_where_in

__all__ = ["CAUSE", "expire_due_credits", "unpaid_periods"]

#: The movement cause of an expiry: keys ``credit_expired|<lot id>``.
CAUSE = "credit_expired"

# The subscriptions whose pending billing holds their customer's expiries (reference notes §6.2).
_BILLED_TYPES = frozenset({SubscriptionType.STANDALONE, SubscriptionType.PARENT})


def unpaid_periods(uow: UnitOfWork, customer_id: str) -> list[tuple[datetime, datetime | None]]:
    """The ``[period_start, period_end)`` of ``customer_id``'s unpaid invoices (DRAFT or
    FINALIZED with ``amount_remaining`` above 0) that have a period."""
    query = ListQuery(
        filters=(
            Filter("customer_id", Op.EQ, customer_id),
            Filter("invoice_status", Op.IN, (InvoiceStatus.DRAFT, InvoiceStatus.FINALIZED)),
            Filter("amount_remaining", Op.GT, Decimal(0)),
        ),
        sort=(Sort("id", descending=False),),
        limit=MAX_LIMIT,
    )
    periods: list[tuple[datetime, datetime | None]] = []
    offset = 0
    while True:
        page = uow.invoices.list(replace(query, offset=offset))
        periods += [(inv.period_start, inv.period_end) for inv in page.items if inv.period_start is not None]
        if not page.has_more:
            return periods
        offset += len(page.items)


def _billing_pending(uow: UnitOfWork, customer_ids: set[str], now: datetime) -> set[str]:
    """The customers with an active standalone or parent subscription whose current period has
    ended and is not billed yet."""
    subs = list_where_in(
        uow.subscriptions,
        "customer_id",
        customer_ids,
        Filter("subscription_status", Op.IN, (SubscriptionStatus.ACTIVE,)),
    )
    return {
        sub.customer_id
        for sub in subs
        if sub.subscription_type in _BILLED_TYPES and sub.current_period_end <= now
    }


def _expire_scope(uow: UnitOfWork, ctx: Context, wallets: Sequence[Wallet]) -> None:
    now = ctx.now
    lots = wallet_ledger.lots(uow, (wallet.id for wallet in wallets))
    pending = _billing_pending(uow, {wallet.customer_id for wallet in wallets}, now)
    unpaid: dict[str, list[tuple[datetime, datetime | None]]] = {}
    for wallet in wallets:
        wallet_lots: list[Lot] = lots.get(wallet.id, [])
        past = any(
            lot.transaction.expiry_date is not None and lot.transaction.expiry_date <= now
            for lot in wallet_lots
        )
        customer = wallet.customer_id
        periods: list[tuple[datetime, datetime | None]] = []
        if past and customer not in pending:
            if customer not in unpaid:
                unpaid[customer] = unpaid_periods(uow, customer)
            periods = unpaid[customer]
        plan = plan_expiry(wallet_lots, now, billing_pending=customer in pending, unpaid_periods=periods)
        if plan.expire and wallet.wallet_status is not WalletStatus.CLOSED:
            draws = [
                Draw(
                    lot,
                    lot.credits_left,
                    credits_value(lot.credits_left, wallet.conversion_rate, wallet.currency),
                )
                for lot in plan.expire
            ]
            wallet = wallet_ledger.debit(
                uow,
                ctx,
                wallet,
                draws,
                reason=TransactionReason.CREDIT_EXPIRED,
                cause=CAUSE,
                parts=(),
                description="credits expired",
            ).wallet
        due = plan.next_expiry_at if wallet.wallet_status is not WalletStatus.CLOSED else None
        if due != wallet.next_expiry_at:
            moved = wallet.model_copy(update={"next_expiry_at": due, **ctx.touch()})
            uow.wallets.update(moved, expected_version=wallet.version)


def expire_due_credits(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of wallets: expire the claimed wallets' lots whose expiry has passed
    (see the module docstring), writing in ``uow`` (the runner commits). A wallet no longer due
    (another runner handled it before a retry re-read it) is left alone. The run's report counts
    the notifications (one ``wallet.transaction.created`` per expired lot)."""
    result = BatchResult()
    by_scope: dict[tuple[str, str], list[Wallet]] = defaultdict(list)
    for wallet in cast("Sequence[Wallet]", items):
        if wallet.next_expiry_at is not None and wallet.next_expiry_at <= run.now:
            by_scope[(wallet.tenant_id, wallet.environment_id)].append(wallet)
    for (tenant_id, environment_id), group in by_scope.items():
        ctx = run.context(tenant_id, environment_id)
        _expire_scope(uow.for_scope(tenant_id, environment_id), ctx, group)
        result.report.notification_count += len(ctx.recorded)
        result.recorded += ctx.recorded
    return result
