"""What follows when an invoice's money settles, whoever settled it (a payment, a hand-recorded
payment status, a void): an invoice that sold wallet credits (``metadata.wallet_transaction_id``,
a ``PURCHASED_CREDIT_INVOICED`` top-up) lands them when it is paid in full and drops them when it
is voided. Each step is idempotent, so calling it again for the same invoice changes nothing."""

from __future__ import annotations

from billingkit.domain.invoices import Invoice, InvoiceStatus, PaymentStatus
from billingkit.domain.wallets import TransactionStatus
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.context import Context

__all__ = ["PURCHASE_KEY", "invoice_paid", "invoice_voided"]

#: The invoice metadata key naming the pending credit purchase the invoice sold.
PURCHASE_KEY = "wallet_transaction_id"

_PAID = frozenset({PaymentStatus.SUCCEEDED, PaymentStatus.OVERPAID})


def invoice_paid(uow: UnitOfWork, ctx: Context, invoice: Invoice) -> None:
    """``invoice`` (as saved) may now be paid in full: land the credits it sold, once."""
    purchase = invoice.metadata.get(PURCHASE_KEY)
    if purchase and invoice.payment_status in _PAID and invoice.invoice_status is InvoiceStatus.FINALIZED:
        wallet_ledger.settle(uow, ctx, purchase, TransactionStatus.COMPLETED)


def invoice_voided(uow: UnitOfWork, ctx: Context, invoice: Invoice) -> None:
    """``invoice`` (as saved) was voided: the credits it sold and never landed fail, once."""
    purchase = invoice.metadata.get(PURCHASE_KEY)
    if purchase:
        row = uow.wallet_transactions.get(purchase)
        if row.transaction_status is TransactionStatus.PENDING:
            wallet_ledger.settle(uow, ctx, purchase, TransactionStatus.FAILED)
