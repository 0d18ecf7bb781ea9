"""What an invoice document is made of: the invoice, its customer and its seller, read together.

The PDF itself is drawn outside the unit of work (:func:`billingkit.documents.render_invoice_pdf`,
behind the optional ``pdf`` extra); this service only reads, so a document never holds a
transaction open while it is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.invoices import get_invoice

__all__ = ["InvoiceDocument", "load_invoice_document"]


@dataclass(frozen=True, slots=True)
class InvoiceDocument:
    """An invoice with the parties its document names: the customer as stored now (``None`` only if
    it is gone from the store) and the seller's lines (the tenant's name)."""

    invoice: Invoice
    customer: Customer | None
    seller: tuple[str, ...]


def load_invoice_document(uow: UnitOfWork, ctx: Context, *, invoice_id: str) -> InvoiceDocument:
    """The invoice ``invoice_id`` and its parties. Raises ``NotFound`` for an unknown invoice and
    ``PermissionDenied`` for a caller who may not read invoices. An archived customer still names
    the invoice it was billed on."""
    invoice = get_invoice(uow, ctx, invoice_id=invoice_id)
    customer = uow.customers.find(invoice.customer_id)
    tenant = uow.tenants.find(ctx.tenant_id)
    return InvoiceDocument(invoice=invoice, customer=customer, seller=(tenant.name,) if tenant else ())
