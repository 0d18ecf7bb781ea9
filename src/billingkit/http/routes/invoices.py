"""``/v1/invoices``: read, search, and the preview of a subscription's next invoice.

Fixed paths (``/invoices/search``, ``/invoices/preview``) are declared before
``/invoices/{invoice_id}``.
"""

from __future__ import annotations

from fastapi import APIRouter

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.billing import InvoiceResponse, ListInvoicesResponse
from billingkit.services.invoices import InvoicePreview, InvoiceSearch

router = APIRouter(prefix="/invoices", tags=["invoices"], route_class=WireRoute)


@router.post("/search")
def search_invoices(caller: EnvCaller, body: InvoiceSearch) -> ListInvoicesResponse:
    return ListInvoicesResponse.model_validate(caller.invoices.search(body).to_dict())


@router.post("/preview")
def preview_invoice(caller: EnvCaller, body: InvoicePreview) -> InvoiceResponse:
    """The invoice the subscription's current period will produce; nothing is stored."""
    fields = body.model_dump(exclude={"subscription_id"})
    return InvoiceResponse.model_validate(caller.invoices.preview(body.subscription_id, **fields).to_dict())


@router.get("/{invoice_id}")
def get_invoice(caller: EnvCaller, invoice_id: str) -> InvoiceResponse:
    return InvoiceResponse.model_validate(caller.invoices.get(invoice_id).to_dict())
