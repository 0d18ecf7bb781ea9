"""Moving credits: the one place that writes wallet ledger rows and keeps each wallet's cached
balance equal to their sum.

Every movement is made here, in the caller's unit of work, as: the ledger rows (each keyed by its
cause, unique in storage), the wallet's ``credit_balance`` moved by their sum under the wallet's
``version`` (so two concurrent movements of one wallet cannot both commit: the second is a
``VersionConflict`` and rolls back whole), and one ``wallet.transaction.created`` notification per
row. Callers decide what to move (top-ups, invoice credits, refunds, expiries, terminations) and
build their keys with :func:`billingkit.domain.wallets.movement_key`.

- :func:`credit`: add credits (a completed row, or a pending one that counts nothing until
  :func:`settle`). The same key twice answers with the first row and moves nothing.
- :func:`lots`: the completed credit rows of wallets with the credits left on each.
- :func:`debit`: take credits from named lots (:class:`~billingkit.domain.wallets.Draw`), one debit
  row per lot drawn from, each naming its lot in ``source_transaction_id``; :func:`debit_many` the
  same for many wallets and causes in a few statements (a billing run's invoice credits).
- :func:`prepaid_wallet`: the customer's active PRE_PAID wallet in a currency, made if missing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import cast

from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import Filter, Op
from billingkit.domain.wallets import (
    Draw,
    Lot,
    TransactionReason,
    TransactionReferenceType,
    TransactionStatus,
    TransactionType,
    Wallet,
    WalletConfig,
    WalletPriceType,
    WalletStatus,
    WalletTransaction,
    WalletType,
    credits_value,
    movement_key,
)
from billingkit.errors import AlreadyExists, InvalidOperation, ValidationError
from billingkit.ports import Repository, UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.records import list_where_in

__all__ = [
    "Debit",
    "Movement",
    "credit",
    "debit",
    "debit_many",
    "lots",
    "move_balance",
    "prepaid_wallet",
    "settle",
]


@dataclass(frozen=True, slots=True)
class Movement:
    """What a movement left: the wallet as saved, the rows written (or found, for a repeated
    key), and whether this call wrote them (``False`` when the key was already stored)."""

    wallet: Wallet
    transactions: tuple[WalletTransaction, ...]
    created: bool


def _check_open(wallet: Wallet) -> None:
    if wallet.wallet_status is WalletStatus.CLOSED:
        raise InvalidOperation(f"wallet {wallet.id} is closed: its credits cannot move")


def move_balance(
    uow: UnitOfWork, ctx: Context, wallet: Wallet, delta: Decimal, expiry: datetime | None = None
) -> Wallet:
    """Save ``wallet`` with ``credit_balance`` moved by ``delta`` credits (and ``next_expiry_at``
    brought forward to ``expiry``, the expiry of credits just landed, when that is earlier), at the
    version it was read at (``VersionConflict`` when another movement saved it since)."""
    changes: dict[str, object] = {}
    if delta != 0:
        changes["credit_balance"] = wallet.credit_balance + delta
    if expiry is not None and (wallet.next_expiry_at is None or expiry < wallet.next_expiry_at):
        changes["next_expiry_at"] = expiry
    if not changes:
        return wallet
    moved = wallet.model_copy(update={**changes, **ctx.touch()})
    return uow.wallets.update(moved, expected_version=wallet.version)


def _events(
    ctx: Context,
    event_type: str,
    rows: Sequence[WalletTransaction],
    wallet: Wallet,
    before: Decimal,
) -> list[NotificationEvent]:
    """One ``event_type`` notification per row, each with the wallet's balance before and after it."""
    events = []
    balance = before
    for row in rows:
        after = balance
        if row.transaction_status is TransactionStatus.COMPLETED:
            after = (
                balance + row.credit_amount
                if row.type is TransactionType.CREDIT
                else balance - row.credit_amount
            )
        events.append(notifications.notification(ctx, event_type, row, wallet.currency, balance, after))
        balance = after
    return events


def _notify(
    uow: UnitOfWork,
    ctx: Context,
    event_type: str,
    rows: Sequence[WalletTransaction],
    wallet: Wallet,
    before: Decimal,
) -> None:
    notifications.record_many(uow, ctx, _events(ctx, event_type, rows, wallet, before))


def credit(
    uow: UnitOfWork,
    ctx: Context,
    wallet: Wallet,
    *,
    credits: Decimal,
    reason: TransactionReason,
    key: str,
    amount: Decimal | None = None,
    status: TransactionStatus = TransactionStatus.COMPLETED,
    expiry_date: datetime | None = None,
    priority: int | None = None,
    reference_type: TransactionReferenceType | None = None,
    reference_id: str | None = None,
    parent_transaction_id: str | None = None,
    description: str | None = None,
    metadata: dict[str, str] | None = None,
    transaction_id: str | None = None,
) -> Movement:
    """Add ``credits`` (> 0) to ``wallet`` for ``reason``, under movement key ``key``.

    ``amount`` is their worth in the wallet's currency (default: at the wallet's
    ``conversion_rate``). ``transaction_id`` is the new row's id when the caller had to name it
    first (an invoice selling the credits names the row in its metadata); default a new id.
    A ``pending`` credit moves no balance until :func:`settle`. The key
    already stored -> that row, nothing moved (``created=False``); a key stored for another wallet
    is ``AlreadyExists``. Raises ``InvalidOperation`` for a closed wallet, ``ValidationError`` for
    credits not above zero.
    """
    found = uow.wallet_transactions.find_one(include_archived=True, idempotency_key=key)
    if found is not None:
        if found.wallet_id != wallet.id:
            raise AlreadyExists(
                f"movement key {key!r} was used on wallet {found.wallet_id}",
                details={"field": "idempotency_key"},
            )
        return Movement(wallet, (found,), False)
    _check_open(wallet)
    if credits <= 0:
        raise ValidationError(f"credits to add must be greater than 0, not {credits}", field="credits")
    worth = amount if amount is not None else credits_value(credits, wallet.conversion_rate, wallet.currency)
    row = WalletTransaction(
        id=transaction_id or ctx.ids.new("wtx"),
        **ctx.stamp(),
        wallet_id=wallet.id,
        customer_id=wallet.customer_id,
        type=TransactionType.CREDIT,
        credit_amount=credits,
        # A credit worth less than the currency's minor unit still records a positive amount.
        amount=worth if worth > 0 else credits * wallet.conversion_rate,
        transaction_reason=reason,
        transaction_status=status,
        idempotency_key=key,
        reference_type=reference_type,
        reference_id=reference_id,
        parent_transaction_id=parent_transaction_id,
        expiry_date=expiry_date,
        priority=priority,
        description=description,
        metadata=metadata or {},
    )
    uow.wallet_transactions.add(row)
    before = wallet.credit_balance
    if status is TransactionStatus.COMPLETED:
        wallet = move_balance(uow, ctx, wallet, credits, expiry_date)
    _notify(uow, ctx, "wallet.transaction.created", (row,), wallet, before)
    return Movement(wallet, (row,), True)


def settle(uow: UnitOfWork, ctx: Context, transaction_id: str, status: TransactionStatus) -> Movement:
    """Settle pending credit ``transaction_id`` as ``completed`` (its credits land in the wallet)
    or ``failed`` (they never do), once; ``wallet.transaction.updated``. A row already settled the
    same way answers unchanged (``created=False``); settled the other way, ``InvalidOperation``."""
    row = uow.wallet_transactions.get(transaction_id)
    wallet = uow.wallets.get(row.wallet_id)
    if row.transaction_status is status:
        return Movement(wallet, (row,), False)
    settled = uow.wallet_transactions.settle(
        transaction_id, status.value, updated_at=ctx.now, updated_by=ctx.actor.id
    )
    before = wallet.credit_balance
    if status is TransactionStatus.COMPLETED:
        _check_open(wallet)
        wallet = move_balance(uow, ctx, wallet, settled.credit_amount, settled.expiry_date)
    _notify(uow, ctx, "wallet.transaction.updated", (settled,), wallet, before)
    return Movement(wallet, (settled,), True)


def lots(uow: UnitOfWork, wallet_ids: Iterable[str]) -> dict[str, list[Lot]]:
    """The completed credit rows of each wallet with credits left, by wallet id (unordered: see
    :func:`~billingkit.domain.wallets.consumption_order`). Reads every row of the wallets, in a
    constant number of statements per 500 wallets."""
    ids = sorted(set(wallet_ids))
    if not ids:
        return {}
    repo = cast("Repository[WalletTransaction]", uow.wallet_transactions)
    rows = list_where_in(repo, "wallet_id", ids, status=None)
    drawn: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        if row.type is TransactionType.DEBIT and row.source_transaction_id is not None:
            drawn[row.source_transaction_id] += row.credit_amount
    found: dict[str, list[Lot]] = {wallet_id: [] for wallet_id in ids}
    for row in rows:
        if row.type is TransactionType.CREDIT and row.transaction_status is TransactionStatus.COMPLETED:
            left = row.credit_amount - drawn.get(row.id, Decimal(0))
            if left > 0:
                found[row.wallet_id].append(Lot(row, left))
    return found


def _debit_rows(
    ctx: Context,
    wallet: Wallet,
    draws: Sequence[Draw],
    *,
    reason: TransactionReason,
    cause: str,
    parts: Sequence[str],
    reference_type: TransactionReferenceType | None,
    reference_id: str | None,
    description: str | None,
    metadata: dict[str, str] | None,
) -> list[WalletTransaction]:
    """The debit rows of ``draws`` from ``wallet``'s lots (draws of nothing left out); a draw
    from another wallet's lot or beyond its lot's credits left is ``ValidationError``."""
    rows = []
    for draw in draws:
        if draw.credits <= 0:
            continue
        if draw.lot.transaction.wallet_id != wallet.id:
            raise ValidationError(f"lot {draw.lot.id} belongs to another wallet", field="draws")
        if draw.credits > draw.lot.credits_left:
            raise ValidationError(
                f"{draw.credits} credits is more than the {draw.lot.credits_left} left on lot {draw.lot.id}",
                field="draws",
            )
        rows.append(
            WalletTransaction(
                id=ctx.ids.new("wtx"),
                **ctx.stamp(),
                wallet_id=wallet.id,
                customer_id=wallet.customer_id,
                type=TransactionType.DEBIT,
                credit_amount=draw.credits,
                amount=draw.amount if draw.amount > 0 else draw.credits * wallet.conversion_rate,
                transaction_reason=reason,
                idempotency_key=movement_key(cause, *parts, draw.lot.id),
                reference_type=reference_type,
                reference_id=reference_id,
                source_transaction_id=draw.lot.id,
                description=description,
                metadata=metadata or {},
            )
        )
    return rows


def debit(
    uow: UnitOfWork,
    ctx: Context,
    wallet: Wallet,
    draws: Sequence[Draw],
    *,
    reason: TransactionReason,
    cause: str,
    parts: Sequence[str],
    reference_type: TransactionReferenceType | None = None,
    reference_id: str | None = None,
    description: str | None = None,
    metadata: dict[str, str] | None = None,
) -> Movement:
    """Take each draw's credits from its lot of ``wallet``: one debit row per draw, keyed
    ``movement_key(cause, *parts, <lot id>)``, and the balance moved by their sum.

    A draw larger than its lot's credits left is ``ValidationError``; a key already stored is
    ``AlreadyExists`` (the cause was applied already; nothing written). Draws of nothing are
    skipped. Raises ``InvalidOperation`` for a closed wallet.
    """
    _check_open(wallet)
    rows = _debit_rows(
        ctx,
        wallet,
        draws,
        reason=reason,
        cause=cause,
        parts=parts,
        reference_type=reference_type,
        reference_id=reference_id,
        description=description,
        metadata=metadata,
    )
    if not rows:
        return Movement(wallet, (), True)
    uow.wallet_transactions.add_many(rows)
    before = wallet.credit_balance
    wallet = move_balance(uow, ctx, wallet, -sum((row.credit_amount for row in rows), Decimal(0)))
    _notify(uow, ctx, "wallet.transaction.created", rows, wallet, before)
    return Movement(wallet, tuple(rows), True)


@dataclass(frozen=True, slots=True)
class Debit:
    """One cause's debit of wallet ``wallet_id`` for :func:`debit_many`: ``draws`` from its lots,
    keyed ``movement_key(cause, *parts, <lot id>)``, naming ``reference_id``."""

    wallet_id: str
    draws: Sequence[Draw]
    parts: Sequence[str]
    reference_id: str | None = None


def debit_many(
    uow: UnitOfWork,
    ctx: Context,
    wallets: Mapping[str, Wallet],
    debits: Sequence[Debit],
    *,
    reason: TransactionReason,
    cause: str,
    reference_type: TransactionReferenceType | None = None,
) -> dict[str, Wallet]:
    """:func:`debit` for many wallets and causes at once (a billing run's invoices): every row in
    one insert, each wallet moved by the sum of its rows and saved once, at the version it was
    read at (one update for all; ``VersionConflict`` when another movement saved one since), and
    one insert of notifications. ``wallets`` holds each debited wallet by id, as read; several
    debits of one wallet draw from its lots as the caller left them after each (so their lots'
    ``credits_left`` already count the earlier draws). Returns the saved wallets by id.

    Raises as :func:`debit` (``AlreadyExists`` for a key already stored: nothing written).
    """
    rows: list[WalletTransaction] = []
    by_wallet: dict[str, list[WalletTransaction]] = {}
    for one in debits:
        wallet = wallets[one.wallet_id]
        _check_open(wallet)
        made = _debit_rows(
            ctx,
            wallet,
            one.draws,
            reason=reason,
            cause=cause,
            parts=one.parts,
            reference_type=reference_type,
            reference_id=one.reference_id,
            description=None,
            metadata=None,
        )
        rows += made
        by_wallet.setdefault(wallet.id, []).extend(made)
    if not rows:
        return {}
    uow.wallet_transactions.add_many(rows)
    changes = []
    touch = ctx.touch()
    for wallet_id, moved in by_wallet.items():
        wallet = wallets[wallet_id]
        taken = sum((row.credit_amount for row in moved), Decimal(0))
        changes.append(
            (wallet, wallet.model_copy(update={"credit_balance": wallet.credit_balance - taken, **touch}))
        )
    saved = {wallet.id: wallet for wallet in uow.wallets.update_many(changes)}
    events: list[NotificationEvent] = []
    for wallet_id, moved in by_wallet.items():
        before = wallets[wallet_id].credit_balance
        events += _events(ctx, "wallet.transaction.created", moved, saved[wallet_id], before)
    notifications.record_many(uow, ctx, events)
    return saved


def prepaid_wallet(
    uow: UnitOfWork,
    ctx: Context,
    *,
    customer_id: str,
    currency: str,
    allowed_price_types: tuple[WalletPriceType, ...] = (WalletPriceType.ALL,),
    conversion_rate: Decimal = Decimal(1),
    name: str = "Prepaid credits",
) -> Wallet:
    """The customer's active PRE_PAID wallet in ``currency`` with ``conversion_rate`` (the oldest
    when there are several), or a new one (``wallet.created``) named ``name`` with
    ``allowed_price_types``. What refunds, credit grants and cancellation credits are paid into."""
    candidates = list_where_in(
        uow.wallets,
        "customer_id",
        [customer_id],
        Filter("currency", Op.EQ, currency),
        Filter("wallet_type", Op.EQ, WalletType.PRE_PAID),
    )
    usable = [
        wallet
        for wallet in candidates
        if wallet.wallet_status is WalletStatus.ACTIVE and wallet.conversion_rate == conversion_rate
    ]
    if usable:
        return min(usable, key=lambda wallet: (wallet.created_at, wallet.id))
    wallet = Wallet(
        id=ctx.ids.new("wallet"),
        **ctx.stamp(),
        customer_id=customer_id,
        currency=currency,
        name=name,
        wallet_type=WalletType.PRE_PAID,
        conversion_rate=conversion_rate,
        topup_conversion_rate=conversion_rate,
        config=WalletConfig(allowed_price_types=allowed_price_types),
    )
    uow.wallets.add(wallet)
    notifications.notify(uow, ctx, "wallet.created", wallet)
    return wallet
