"""The customer portal: ``GET /v1/customers/portal/{external_id}`` (a session for one customer,
with the caller's API key or dashboard token) and the portal's read-only routes
``GET /v1/customer/portal/*``, which take only the ``X-Session-Token`` header.

A portal route never accepts an API key or a dashboard token, and a portal token is never
accepted by any other route (it is signed under its own key: see
:mod:`billingkit.domain.portal_tokens`). No header: 401 "Session token required"; a bad, tampered
or expired token, or one whose customer was deleted: 401 "Invalid or expired session token" (the
standard error body, ``unauthorized``). Every route reads the token's customer only; an id of
another customer's record is 404, like a missing one. The portal has no writes.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, Security
from fastapi.security import APIKeyHeader

from billingkit.errors import Unauthorized
from billingkit.facade import Billing
from billingkit.facade.portal import CustomerPortal
from billingkit.http.auth import EnvCaller
from billingkit.http.params import Limit, Offset
from billingkit.http.rendering import WireRoute
from billingkit.http.schemas.billing import InvoiceResponse, ListInvoicesResponse, ListSubscriptionsResponse
from billingkit.http.schemas.customers import CustomerResponse
from billingkit.http.schemas.documents import InvoicePdfUrlResponse
from billingkit.http.schemas.portal import PortalSessionResponse
from billingkit.http.schemas.subscription_entitlements import CustomerEntitlementsResponse
from billingkit.http.schemas.wallets import WalletResponse

router = APIRouter(tags=["customer portal"], route_class=WireRoute)

_SESSION_TOKEN = APIKeyHeader(
    name="X-Session-Token",
    scheme_name="SessionTokenAuth",
    auto_error=False,
    description="a customer portal session token from GET /v1/customers/portal/{external_id}",
)
_PDF = {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}
_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


@router.get("/customers/portal/{external_id}")
def create_customer_portal_session(caller: EnvCaller, external_id: str) -> PortalSessionResponse:
    """A portal session for the customer with ``external_id``: its ``token`` opens
    ``/v1/customer/portal/*`` (as ``X-Session-Token``) until ``expires_at``."""
    return PortalSessionResponse.model_validate(caller.customer_portal.create_session(external_id).to_dict())


def open_portal(request: Request, token: Annotated[str | None, Security(_SESSION_TOKEN)]) -> CustomerPortal:
    """The portal the ``X-Session-Token`` header opens (run on a worker thread: it reads)."""
    if token is None or not token.strip():
        raise Unauthorized("Session token required")
    billing: Billing = request.app.state.billing
    try:
        return billing.open_portal(token.strip())
    except Unauthorized:
        raise Unauthorized("Invalid or expired session token") from None


Portal = Annotated[CustomerPortal, Depends(open_portal)]


@router.get("/customer/portal/customer")
def portal_customer(portal: Portal) -> CustomerResponse:
    return CustomerResponse.model_validate(portal.customer().to_dict())


@router.get("/customer/portal/subscriptions")
def portal_subscriptions(portal: Portal, limit: Limit = 50, offset: Offset = 0) -> ListSubscriptionsResponse:
    return ListSubscriptionsResponse.model_validate(
        portal.subscriptions(limit=limit, offset=offset).to_dict()
    )


@router.get("/customer/portal/invoices")
def portal_invoices(portal: Portal, limit: Limit = 50, offset: Offset = 0) -> ListInvoicesResponse:
    return ListInvoicesResponse.model_validate(portal.invoices(limit=limit, offset=offset).to_dict())


@router.get("/customer/portal/invoices/{invoice_id}")
def portal_invoice(portal: Portal, invoice_id: str) -> InvoiceResponse:
    return InvoiceResponse.model_validate(portal.invoice(invoice_id).to_dict())


@router.get(
    "/customer/portal/invoices/{invoice_id}/pdf",
    response_model=InvoicePdfUrlResponse,
    responses={200: {"description": "The PDF; with url=true, where it is (JSON)", "content": _PDF}},
)
def portal_invoice_pdf(
    portal: Portal, request: Request, invoice_id: str, url: bool = False
) -> Response | InvoicePdfUrlResponse:
    """One of the customer's invoices as ``application/pdf``; ``url=true`` answers
    ``{"presigned_url": ...}``: the invoice's own ``invoice_pdf_url`` when set, else this route's
    absolute URL (which needs the session token)."""
    if url:
        invoice = portal.invoice(invoice_id)
        where = invoice.invoice_pdf_url or str(request.url_for("portal_invoice_pdf", invoice_id=invoice.id))
        return InvoicePdfUrlResponse.model_validate({"presigned_url": where})
    name = _UNSAFE_IN_FILENAME.sub("_", invoice_id)
    return Response(
        content=portal.invoice_pdf(invoice_id),
        media_type="application/pdf",
        headers={"content-disposition": f'inline; filename="{name}.pdf"'},
    )


@router.get("/customer/portal/wallets")
def portal_wallets(portal: Portal) -> list[WalletResponse]:
    """The customer's wallets, oldest first (a plain array, as the customer wallet routes answer)."""
    return [WalletResponse.model_validate(wallet.to_dict()) for wallet in portal.wallets()]


@router.get("/customer/portal/entitlements")
def portal_entitlements(portal: Portal) -> CustomerEntitlementsResponse:
    return CustomerEntitlementsResponse.model_validate(portal.entitlements().to_dict())
