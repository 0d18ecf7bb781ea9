"""Telling the host to send an invoice to its customer: ``invoice.communication.triggered``.

Nothing is sent by billingkit itself: the notification carries the invoice with its customer, its
subscription and its lines (the spec's payload table), and the host's e-mail or chat integration
does the rest. Asked for explicitly (``scoped.invoices.trigger_communication(id)``,
``POST /v1/invoices/{id}/comms/trigger``), once per call: each call records one notification.
Only a FINALIZED invoice (paid or not) can be communicated: a draft's number and figures may
still change, and a voided or skipped invoice asks nothing of the customer.
"""

from __future__ import annotations

from billingkit.domain.access import Action
from billingkit.domain.invoices import InvoiceStatus
from billingkit.domain.notifications import NotificationEvent
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.records import get_live

__all__ = ["trigger_communication"]


def trigger_communication(uow: UnitOfWork, ctx: Context, *, invoice_id: str) -> NotificationEvent:
    """Record ``invoice.communication.triggered`` for FINALIZED invoice ``invoice_id``; answers the
    notification recorded. Raises ``NotFound``; ``InvalidOperation`` for a DRAFT, VOIDED or
    SKIPPED invoice."""
    ctx.require("invoice", Action.WRITE)
    invoice = get_live(uow.invoices, "invoice", invoice_id)
    if invoice.invoice_status is not InvoiceStatus.FINALIZED:
        raise InvalidOperation(
            f"invoice {invoice_id} is {invoice.invoice_status.value}: only a FINALIZED invoice can be "
            "communicated"
        )
    customer = uow.customers.find(invoice.customer_id)
    subscription = (
        None if invoice.subscription_id is None else uow.subscriptions.find(invoice.subscription_id)
    )
    owner = invoice.subscription_customer_id
    subscription_customer = (
        uow.customers.find(owner) if owner is not None and owner != invoice.customer_id else None
    )
    return notifications.notify(
        uow, ctx, "invoice.communication.triggered", invoice, customer, subscription, subscription_customer
    )
