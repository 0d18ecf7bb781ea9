"""What follows when an invoice's money settles, whoever settled it (a payment, a hand-recorded
payment status, a void): an invoice that sold wallet credits (``metadata.wallet_transaction_id``,
a ``PURCHASED_CREDIT_INVOICED`` top-up, and the bonus earned with it) lands them when it is paid
in full and drops them when it is voided; an ``incomplete`` subscription whose opening invoice is
paid in full becomes ``active``. Each step is idempotent, so calling it again for the
same invoice changes nothing."""

from __future__ import annotations

from billingkit.domain.invoices import Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.wallet_topups import bonus_key
from billingkit.domain.wallets import TransactionStatus
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.context import Context
from billingkit.services.subscription_activation import activate_when_paid

__all__ = ["PURCHASE_KEY", "check_not_sold_credits", "invoice_paid", "invoice_voided"]

#: The invoice metadata key naming the pending credit purchase the invoice sold.
PURCHASE_KEY = "wallet_transaction_id"

_PAID = frozenset({PaymentStatus.SUCCEEDED, PaymentStatus.OVERPAID})


def _sold(uow: UnitOfWork, purchase: str) -> list[str]:
    """The pending rows the purchase ``purchase`` sold: the purchase, then its bonus if any."""
    rows = [purchase]
    bonus = uow.wallet_transactions.find_one(include_archived=True, idempotency_key=bonus_key(purchase))
    if bonus is not None:
        rows.append(bonus.id)
    return rows


def invoice_paid(uow: UnitOfWork, ctx: Context, invoice: Invoice) -> None:
    """``invoice`` (as saved) may now be paid in full: land the credits it sold (and the bonus
    earned with them), once; an ``incomplete`` subscription waiting for it becomes ``active``
    (:mod:`billingkit.services.subscription_activation`)."""
    purchase = invoice.metadata.get(PURCHASE_KEY)
    if purchase and invoice.payment_status in _PAID and invoice.invoice_status is InvoiceStatus.FINALIZED:
        for row_id in _sold(uow, purchase):
            wallet_ledger.settle(uow, ctx, row_id, TransactionStatus.COMPLETED)
    activate_when_paid(uow, ctx, invoice)


def invoice_voided(uow: UnitOfWork, ctx: Context, invoice: Invoice) -> None:
    """``invoice`` (as saved) was voided: the credits it sold (and their bonus) never landed
    fail, once."""
    purchase = invoice.metadata.get(PURCHASE_KEY)
    if purchase:
        for row_id in _sold(uow, purchase):
            row = uow.wallet_transactions.get(row_id)
            if row.transaction_status is TransactionStatus.PENDING:
                wallet_ledger.settle(uow, ctx, row_id, TransactionStatus.FAILED)


def check_not_sold_credits(uow: UnitOfWork, invoice: Invoice, action: str) -> None:
    """Refuse ``action`` ("voided", "credited") on an invoice that sold wallet credits, once they
    may have landed: voiding or crediting it would hand the money back on top of the credits (a
    void refund and a refund note both pay the PRE_PAID wallet), so the customer would hold both.
    An unpaid purchase is voided (its pending credits then fail); a paid one is corrected on the
    wallet itself (``terminate``, or a debit), and its money returned outside billingkit.
    Voiding is refused only once the credits landed; crediting always (an ADJUSTMENT would sell
    the same credits for less). Raises ``InvalidOperation``."""
    purchase = invoice.metadata.get(PURCHASE_KEY)
    if not purchase:
        return
    row = uow.wallet_transactions.get(purchase)
    landed = row.transaction_status is TransactionStatus.COMPLETED
    if action == "voided" and not landed:
        return
    name = invoice.invoice_number or invoice.id
    state = "have landed in" if landed else "land when it is paid, in"
    raise InvalidOperation(
        f"invoice {name} sold wallet credits (transaction {purchase}) that {state} wallet "
        f"{row.wallet_id}: it cannot be {action}"
        + ("; void it while it is unpaid instead" if action == "credited" and not landed else ""),
        details={"wallet_transaction_id": purchase, "wallet_id": row.wallet_id},
    )
