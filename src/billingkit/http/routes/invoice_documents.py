"""``GET /v1/invoices/{invoice_id}/pdf``: the invoice's PDF, or with ``url=true`` where it is.

The PDF is drawn on every request from the stored invoice (nothing is cached or uploaded), so
``force_generate`` is accepted and changes nothing: every answer is freshly generated.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Request, Response

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.documents import InvoicePdfUrlResponse

router = APIRouter(prefix="/invoices", tags=["invoices"], route_class=WireRoute)

_PDF = {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}
_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


@router.get(
    "/{invoice_id}/pdf",
    response_model=InvoicePdfUrlResponse,
    responses={200: {"description": "The PDF; with url=true, where it is (JSON)", "content": _PDF}},
)
def get_invoice_pdf(
    caller: EnvCaller,
    request: Request,
    invoice_id: str,
    url: bool = False,
    force_generate: bool = False,
) -> Response | InvoicePdfUrlResponse:
    """The invoice as ``application/pdf`` (``inline``, named ``<invoice id>.pdf``). ``url=true``
    answers ``{"presigned_url": ...}`` instead: the invoice's own ``invoice_pdf_url`` when set,
    else this route's absolute URL. ``force_generate`` has no effect: every PDF is drawn anew."""
    if url:
        invoice = caller.invoices.get(invoice_id)
        where = invoice.invoice_pdf_url or str(request.url_for("get_invoice_pdf", invoice_id=invoice.id))
        return InvoicePdfUrlResponse.model_validate({"presigned_url": where})
    name = _UNSAFE_IN_FILENAME.sub("_", invoice_id)
    return Response(
        content=caller.invoices.pdf(invoice_id),
        media_type="application/pdf",
        headers={"content-disposition": f'inline; filename="{name}.pdf"'},
    )
