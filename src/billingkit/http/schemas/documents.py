"""Answer models of the document routes (``GET /invoices/{id}/pdf?url=true``)."""

from __future__ import annotations

from billingkit.http.schemas.base import WireModel

__all__ = ["InvoicePdfUrlResponse"]


class InvoicePdfUrlResponse(WireModel):
    """Where the invoice's PDF is: its ``invoice_pdf_url`` when one was set, else the absolute URL
    of ``GET /v1/invoices/{id}/pdf`` on this server (which needs the caller's credentials)."""

    presigned_url: str
