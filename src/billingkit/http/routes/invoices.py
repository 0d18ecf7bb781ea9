"""``/v1/invoices``: read, search, and the preview of a subscription's next invoice.

Fixed paths (``/invoices/search``, ``/invoices/preview``) are declared before
``/invoices/{invoice_id}``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.services.invoices import InvoicePreview, InvoiceSearch

router = APIRouter(prefix="/invoices", tags=["invoices"])


@router.post("/search")
def search_invoices(caller: EnvCaller, body: InvoiceSearch) -> dict[str, Any]:
    return caller.invoices.search(body).to_dict()


@router.post("/preview")
def preview_invoice(caller: EnvCaller, body: InvoicePreview) -> dict[str, Any]:
    """The invoice the subscription's current period will produce; nothing is stored."""
    fields = body.model_dump(exclude={"subscription_id"})
    return caller.invoices.preview(body.subscription_id, **fields).to_dict()


@router.get("/{invoice_id}")
def get_invoice(caller: EnvCaller, invoice_id: str) -> dict[str, Any]:
    return caller.invoices.get(invoice_id).to_dict()
