"""``/v1/invoices``: read, search, the preview of a subscription's next invoice, direct invoices,
and the lifecycle (update, finalize, void, payment status), and the communication trigger.

Fixed paths (``/invoices/search``, ``/invoices/preview``) are declared before
``/invoices/{invoice_id}``. The reference's separate apply-discount and recalculate-discount
routes do not exist (the update's ``apply_discount`` replaced them): they answer 404.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute, success
from billingkit.http.schemas.base import SuccessResponse
from billingkit.http.schemas.billing import InvoiceResponse, ListInvoicesResponse
from billingkit.http.schemas.billing_views import WorkflowResult
from billingkit.services.direct_invoices import InvoiceCreate
from billingkit.services.invoice_lifecycle import PaymentUpdate
from billingkit.services.invoice_recalculation import InvoiceRecalculation
from billingkit.services.invoice_updates import InvoiceUpdate
from billingkit.services.invoices import InvoicePreview, InvoiceSearch

router = APIRouter(prefix="/invoices", tags=["invoices"], route_class=WireRoute)


@router.post("", status_code=201)
def create_invoice(caller: EnvCaller, body: InvoiceCreate) -> InvoiceResponse:
    """A direct (one-off) invoice; the same ``idempotency_key`` and body answer the same invoice."""
    return InvoiceResponse.model_validate(caller.invoices.create(body).to_dict())


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


@router.put("/{invoice_id}")
def update_invoice(caller: EnvCaller, invoice_id: str, body: InvoiceUpdate) -> InvoiceResponse:
    """Edit ``due_date``, ``invoice_pdf_url``, ``metadata``; ``apply_discount`` recomputes a
    draft's coupons and taxes; ``version`` (optional) must be the stored one (else 409)."""
    return InvoiceResponse.model_validate(caller.invoices.update(invoice_id, body).to_dict())


@router.post("/{invoice_id}/finalize")
def finalize_invoice(caller: EnvCaller, invoice_id: str) -> SuccessResponse:
    caller.invoices.finalize(invoice_id)
    return success("invoice finalized successfully")


@router.post("/{invoice_id}/void")
def void_invoice(caller: EnvCaller, invoice_id: str) -> SuccessResponse:
    caller.invoices.void(invoice_id)
    return success("invoice voided successfully")


@router.put("/{invoice_id}/payment")
def update_payment_status(caller: EnvCaller, invoice_id: str, body: PaymentUpdate) -> InvoiceResponse:
    return InvoiceResponse.model_validate(caller.invoices.update_payment(invoice_id, body).to_dict())


@router.post("/{invoice_id}/payment/attempt")
def attempt_invoice_payment(caller: EnvCaller, invoice_id: str) -> SuccessResponse:
    """Collect what remains with the customer's methods: the subscription's card through the
    payment provider, then POST_PAID wallets (the reference answers a message)."""
    caller.invoices.attempt_payment(invoice_id)
    return success("payment attempt processed successfully")


@router.post("/{invoice_id}/comms/trigger")
def trigger_invoice_communication(caller: EnvCaller, invoice_id: str) -> SuccessResponse:
    """Record ``invoice.communication.triggered`` for a FINALIZED invoice (400 for another status):
    the webhook carries the invoice with its customer, subscription and lines for the host to send."""
    caller.invoices.trigger_communication(invoice_id)
    return success("invoice communication triggered successfully")


@router.post("/{invoice_id}/recalculate-v2")
def recalculate_invoice_v2(
    caller: EnvCaller, invoice_id: str, finalize: Annotated[bool, Query()] = True
) -> InvoiceResponse:
    """Price a DRAFT subscription invoice again from its inputs as stored now and store it in
    place; ``finalize`` (default true) then finalizes it. 400 for another status or a draft
    edited by hand."""
    request = InvoiceRecalculation(finalize=finalize)
    return InvoiceResponse.model_validate(caller.invoices.recalculate(invoice_id, request).to_dict())


@router.post("/{invoice_id}/recalculate", status_code=202)
def recalculate_invoice(caller: EnvCaller, invoice_id: str) -> WorkflowResult:
    """The reference starts a workflow; billingkit recalculates the DRAFT in place at once (as
    ``recalculate-v2?finalize=false``) and answers 202 with no workflow ids."""
    caller.invoices.recalculate(invoice_id, InvoiceRecalculation(finalize=False))
    return WorkflowResult.model_validate(
        {"message": "invoice recalculated successfully", "workflow_id": None, "run_id": None}
    )
