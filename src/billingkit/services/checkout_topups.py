"""The ``wallet_topup`` checkout action: its apply step and cleanup (the purchase itself is made
by :func:`billingkit.services.checkout_flows.top_up_wallet_checked`).

Apply: the payment of the purchase's invoice succeeds and pays it, which lands the pending
credits (and their bonus) through :func:`billingkit.services.invoice_settlement.invoice_paid`; the
money was taken, so the credits land whatever the wallet's status is by then.
Cleanup: the payment ``FAILED`` and archived, and the invoice voided (its pending credits fail:
:func:`billingkit.services.invoice_settlement.invoice_voided`), then archived.
"""

from __future__ import annotations

from typing import Any

from billingkit.domain.checkout_sessions import CheckoutSession
from billingkit.domain.invoices import InvoiceStatus
from billingkit.domain.resources import Status
from billingkit.ports import UnitOfWork
from billingkit.services.checkout_subscriptions import cleanup_payment, pay_checkout_invoice
from billingkit.services.context import Context
from billingkit.services.invoice_lifecycle import void_invoice

__all__ = ["apply_topup", "cleanup_topup"]


def apply_topup(
    uow: UnitOfWork, ctx: Context, session: CheckoutSession, provider_payment_id: str | None
) -> dict[str, Any]:
    """Pay the purchase's invoice (the credits land); the session's ``result`` is empty (the
    reference's result names a created subscription only)."""
    pay_checkout_invoice(uow, ctx, session, provider_payment_id)
    return {}


def cleanup_topup(uow: UnitOfWork, ctx: Context, session: CheckoutSession, reason: str) -> None:
    """Void the unpaid purchase (its credits fail), then archive its payment and invoice."""
    invoice = uow.invoices.find(session.invoice_id or "")
    if (
        invoice is not None
        and invoice.status is Status.PUBLISHED
        and invoice.invoice_status is InvoiceStatus.FINALIZED
    ):
        void_invoice(uow, ctx, invoice_id=invoice.id)
    cleanup_payment(uow, ctx, session, reason)
