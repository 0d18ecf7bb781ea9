"""Prepaid credits on invoices: which credits an invoice may draw from, and the debits recorded
when it is stored.

At invoice computation the ACTIVE PRE_PAID wallets of the invoice's customer in the invoice
currency pay the lines their ``config.allowed_price_types`` cover (issue 16; the billing core does
the arithmetic: :func:`billingkit.domain.credits.apply_credits`). Each lot (a completed credit row
with credits left) is one :class:`~billingkit.domain.credits.CreditSource`, so the core consumes
them in the notes' order (priority, expiry, size) across the customer's wallets.

:class:`InvoiceCredits` holds, for one unit of work, the wallets and lots of a set of customers
(read in a few statements for all of them by :func:`load_invoice_credits`). After each draft is
computed, :meth:`InvoiceCredits.take` shrinks the lots it used, so a later invoice of the same
customer in the same batch (a catch-up, a second subscription) sees only what is left: the same
credits never pay twice. :func:`record_debits` writes the debits (reason ``CREDIT_ADJUSTMENT``,
reference ``INVOICE``, key ``invoice_credits|<invoice id>|<lot id>``) in the unit of work that
stores the invoices, through :func:`billingkit.services.wallet_ledger.debit_many`: each wallet is
saved at the version it was read at, so two runners spending one wallet at once cannot both
commit (the loser's batch rolls back and is retried, reading the wallet again). Previews compute
with the same sources and record nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from billingkit.domain.credits import CreditResult, CreditSource, apply_credits
from billingkit.domain.invoices import Invoice
from billingkit.domain.queries import Filter, Op
from billingkit.domain.wallets import (
    Draw,
    Lot,
    TransactionReason,
    TransactionReferenceType,
    Wallet,
    WalletStatus,
    WalletType,
    credits_value,
    draw_money,
)
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.context import Context
from billingkit.services.records import list_where_in

__all__ = [
    "CAUSE",
    "InvoiceCredits",
    "TakenCredits",
    "credits_instant",
    "invoice_line_credits",
    "load_invoice_credits",
    "record_debits",
]

#: The movement cause of an invoice's credit debits: keys ``invoice_credits|<invoice>|<lot>``.
CAUSE = "invoice_credits"


@dataclass(frozen=True, slots=True)
class TakenCredits:
    """What one invoice took: its id and, per wallet id, the draws from that wallet's lots."""

    invoice_id: str
    draws: dict[str, list[Draw]]

    @property
    def empty(self) -> bool:
        return not self.draws


@dataclass(slots=True)
class InvoiceCredits:
    """The ACTIVE PRE_PAID wallets of a set of customers and their lots, as this unit of work
    has left them: ``wallets`` by id, each customer's wallet ids, and each wallet's lots."""

    wallets: dict[str, Wallet] = field(default_factory=dict)
    by_customer: dict[str, list[str]] = field(default_factory=dict)
    lots: dict[str, dict[str, Lot]] = field(default_factory=dict)  # wallet id -> lot id -> lot
    _lot_wallet: dict[str, str] = field(default_factory=dict)

    def sources(self, customer_id: str, currency: str) -> tuple[CreditSource, ...]:
        """One credit source per lot with credits left of the customer's wallets in ``currency``:
        its worth (rounded down), priority, expiry and the wallet's allowed price types."""
        found: list[CreditSource] = []
        for wallet_id in self.by_customer.get(customer_id, ()):
            wallet = self.wallets[wallet_id]
            if wallet.currency.lower() != currency.lower():
                continue
            allowed = wallet.config.price_types()
            for lot in self.lots.get(wallet_id, {}).values():
                worth = credits_value(lot.credits_left, wallet.conversion_rate, currency)
                if worth <= 0:
                    continue
                row = lot.transaction
                found.append(
                    CreditSource(
                        id=lot.id,
                        balance=worth,
                        priority=row.priority,
                        expires_at=row.expiry_date,
                        allowed_price_types=allowed,
                    )
                )
        return tuple(found)

    def take(self, debits: Sequence[tuple[str, Decimal]], invoice_id: str) -> TakenCredits:
        """Shrink the lots an invoice drew from (``debits``: lot id and money paid, a draft's
        ``credit_debits``) and say what invoice ``invoice_id`` took: a lot paying its whole worth
        gives all its credits."""
        draws: dict[str, list[Draw]] = {}
        for lot_id, paid in debits:
            wallet_id = self._lot_wallet[lot_id]
            wallet = self.wallets[wallet_id]
            lots = self.lots[wallet_id]
            draw = draw_money(lots[lot_id], paid, wallet.conversion_rate, wallet.currency)
            draws.setdefault(wallet_id, []).append(draw)
            self._set(wallet_id, Lot(draw.lot.transaction, draw.lot.credits_left - draw.credits))
        return TakenCredits(invoice_id, draws)

    def give_back(self, taken: Iterable[TakenCredits]) -> None:
        """Undo :meth:`take` for invoices that will not be stored (latest first)."""
        for one in reversed(list(taken)):
            for wallet_id, draws in one.draws.items():
                for draw in draws:
                    self._set(wallet_id, draw.lot)

    def _set(self, wallet_id: str, lot: Lot) -> None:
        lots = self.lots[wallet_id]
        if lot.credits_left > 0:
            lots[lot.id] = lot
        else:
            lots.pop(lot.id, None)


def load_invoice_credits(uow: UnitOfWork, customer_ids: Iterable[str]) -> InvoiceCredits:
    """The ACTIVE PRE_PAID wallets of ``customer_ids`` with their lots, in a constant number of
    statements per 500 customers (wallets) and per 500 wallets (ledger rows)."""
    ids = sorted(set(customer_ids))
    credits = InvoiceCredits()
    if not ids:
        return credits
    wallets = list_where_in(
        uow.wallets,
        "customer_id",
        ids,
        Filter("wallet_type", Op.EQ, WalletType.PRE_PAID),
        Filter("wallet_status", Op.IN, (WalletStatus.ACTIVE,)),
    )
    # A wallet holding nothing pays nothing: its ledger is not read.
    funded = [wallet for wallet in wallets if wallet.credit_balance > 0]
    for wallet in funded:
        credits.wallets[wallet.id] = wallet
        credits.by_customer.setdefault(wallet.customer_id, []).append(wallet.id)
    for wallet_id, lots in wallet_ledger.lots(uow, credits.wallets).items():
        credits.lots[wallet_id] = {lot.id: lot for lot in lots}
        for lot in lots:
            credits._lot_wallet[lot.id] = wallet_id
    return credits


def record_debits(
    uow: UnitOfWork, ctx: Context, credits: InvoiceCredits, taken: Sequence[TakenCredits]
) -> int:
    """Write what ``taken`` invoices drew (after their invoices are added, in the same unit of
    work): one ``CREDIT_ADJUSTMENT`` debit row per lot and invoice, each wallet saved once at the
    version it was read at (``VersionConflict`` when another movement saved it since; the unit of
    work then rolls back whole), one ``wallet.transaction.created`` per row. ``credits`` keeps the
    saved wallets. Returns the number of rows (and notifications) written."""
    debits = [
        wallet_ledger.Debit(wallet_id, draws, (one.invoice_id,), one.invoice_id)
        for one in taken
        for wallet_id, draws in one.draws.items()
    ]
    if not debits:
        return 0
    saved = wallet_ledger.debit_many(
        uow,
        ctx,
        credits.wallets,
        debits,
        reason=TransactionReason.CREDIT_ADJUSTMENT,
        cause=CAUSE,
        reference_type=TransactionReferenceType.INVOICE,
    )
    credits.wallets.update(saved)
    return sum(len(debit.draws) for debit in debits)


def invoice_line_credits(
    credits: InvoiceCredits, invoice: Invoice, *, as_of: datetime
) -> CreditResult | None:
    """What the customer's credits pay on a stored invoice's lines (a direct ONE_OFF invoice),
    each line on what its discounts left; lines without a price type count as FIXED (a one-off
    charge). ``None`` when they pay nothing. Nothing is taken: see :meth:`InvoiceCredits.take`."""
    sources = credits.sources(invoice.customer_id, invoice.currency)
    if not sources:
        return None
    lines = invoice.line_items
    owed = [line.amount - line.line_item_discount - line.invoice_level_discount for line in lines]
    result = apply_credits(
        sources,
        [line.id for line in lines],
        [line.price_type.value if line.price_type is not None else "FIXED" for line in lines],
        [amount if amount > 0 else Decimal(0) for amount in owed],
        currency=invoice.currency,
        as_of=as_of,
    )
    return result if result.total > 0 else None


def credits_instant(reference_point: str, period_end: datetime, now: datetime) -> datetime:
    """The instant an invoice's credits must still be live at: for a closing period (``period_end``
    reference point) billed at or after its end, the period's last instant, so the period is paid
    by the credits that were live through it, those expiring exactly at its end included (a
    ``BILLING_CYCLE`` grant of [15 Jan, 15 Feb) expires at 15 Feb and pays the usage invoice
    issued at 15 Feb; the expiry worker waits for such a billing, see
    :mod:`billingkit.domain.credit_expiry`); otherwise ``now``."""
    if reference_point == "period_end" and period_end <= now:
        return period_end - _LAST_INSTANT
    return now


#: A period ``[start, end)`` ends just before ``end``: its last instant is ``end`` less this.
_LAST_INSTANT = timedelta(microseconds=1)
