"""``/v1/checkout/sessions`` (create, read, delete), the sandbox checkout page
``/v1/checkout/sandbox/{session_id}`` with its Pay and Decline buttons, and Razorpay's webhook
``POST /v1/webhooks/razorpay/{tenant_id}/{environment_id}``.

The sandbox page and the webhook take no API key: a payer's browser and Razorpay have none. The
page's address names the session's scope in its query (``tenant_id``, ``environment_id``); it only
serves sandbox sessions, which exist only in development environments. The page and its buttons
are for browsers (HTML and redirects), so they are left out of the OpenAPI document. The webhook is trusted by
its signature (``X-Razorpay-Signature``, checked with the environment's webhook secret) and always
answers 200, whatever it carried, so Razorpay never retries what cannot succeed.
"""

from __future__ import annotations

import urllib.parse
from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse

from billingkit.domain.checkout_sessions import CheckoutSession, CheckoutStatus
from billingkit.errors import BillingError, NotFound
from billingkit.facade import Billing, Scoped
from billingkit.http.auth import EnvCaller
from billingkit.http.rendering import WireRoute
from billingkit.http.sandbox_page import render_sandbox_page
from billingkit.http.schemas.base import WireModel
from billingkit.http.schemas.checkout import CheckoutSessionResponse
from billingkit.services.checkout_providers import sandbox_path
from billingkit.services.checkout_sessions import CheckoutSessionCreate

router = APIRouter(tags=["checkout"], route_class=WireRoute)
#: The sandbox page and its buttons: HTML and redirects for a browser, not JSON answers.
pages = APIRouter(tags=["checkout"], include_in_schema=False)

ScopeId = Annotated[str, Query(min_length=1, max_length=64)]
ScopePath = Annotated[str, Path(min_length=1, max_length=64)]


class WebhookReceipt(WireModel):
    """What billingkit made of a provider's webhook delivery: ``applied`` or ``ignored: <why>``."""

    status: str


@router.post("/checkout/sessions", status_code=201)
def create_checkout_session(caller: EnvCaller, body: CheckoutSessionCreate) -> CheckoutSessionResponse:
    """Open a ``create_subscription`` session: a draft subscription, its first invoice and a
    payment of it, and a ``payment_action.url`` where the customer pays. 400 for a bad request or
    a zero first invoice; 409 for an ``idempotency_key`` an open session holds."""
    return CheckoutSessionResponse.model_validate(caller.checkout.create(body).to_dict())


@router.get("/checkout/sessions/{session_id}")
def get_checkout_session(caller: EnvCaller, session_id: str) -> CheckoutSessionResponse:
    return CheckoutSessionResponse.model_validate(caller.checkout.get(session_id).to_dict())


@router.delete("/checkout/sessions/{session_id}", status_code=204)
def delete_checkout_session(caller: EnvCaller, session_id: str) -> Response:
    """Archive the session; an open one fails first (its draft records archived)."""
    caller.checkout.delete(session_id)
    return Response(status_code=204)


# -- the sandbox page ---------------------------------------------------------------------------


def _sandbox_scope(request: Request, tenant_id: str, environment_id: str) -> Scoped:
    billing: Billing = request.app.state.billing
    return billing.scope(tenant_id, environment_id)


def _query(tenant_id: str, environment_id: str) -> str:
    return urllib.parse.urlencode({"tenant_id": tenant_id, "environment_id": environment_id})


def _page(scoped: Scoped, session: CheckoutSession, query: str) -> HTMLResponse:
    invoice = None
    if session.invoice_id:
        try:
            invoice = scoped.invoices.get(session.invoice_id)
        except NotFound:  # archived with a failed session: the page shows the session alone
            invoice = None
    return HTMLResponse(render_sandbox_page(session, invoice, query))


@pages.get("/checkout/sandbox/{session_id}", response_class=HTMLResponse)
def sandbox_page(
    request: Request, session_id: str, tenant_id: ScopeId, environment_id: ScopeId
) -> HTMLResponse:
    """The sandbox checkout page of a sandbox session: what is paid, with Pay and Decline."""
    scoped = _sandbox_scope(request, tenant_id, environment_id)
    session = scoped.checkout.get(session_id)
    if session.payment_provider != "sandbox":
        raise NotFound(f"checkout session {session_id} not found")
    return _page(scoped, session, _query(tenant_id, environment_id))


def _after(session: CheckoutSession) -> Response:
    """Where the payer's browser goes next: the session's success or failure address, else back
    to the page (which now shows how it ended)."""
    target = (
        session.success_url if session.checkout_status is CheckoutStatus.COMPLETED else session.failure_url
    )
    if target is None and session.checkout_status is CheckoutStatus.FAILED:
        target = session.cancel_url
    return RedirectResponse(target or sandbox_path(session), status_code=303)


@pages.post("/checkout/sandbox/{session_id}/pay", response_class=RedirectResponse, status_code=303)
def sandbox_pay(request: Request, session_id: str, tenant_id: ScopeId, environment_id: ScopeId) -> Response:
    """The Pay button: the session completes as a provider's confirmation would complete it."""
    scoped = _sandbox_scope(request, tenant_id, environment_id)
    return _after(scoped.checkout.pay_sandbox(session_id))


@pages.post("/checkout/sandbox/{session_id}/decline", response_class=RedirectResponse, status_code=303)
def sandbox_decline(
    request: Request, session_id: str, tenant_id: ScopeId, environment_id: ScopeId
) -> Response:
    """The Decline button: the session fails ("payment declined"), its drafts archived."""
    scoped = _sandbox_scope(request, tenant_id, environment_id)
    return _after(scoped.checkout.decline_sandbox(session_id))


# -- Razorpay's webhook -------------------------------------------------------------------------


@router.post("/webhooks/razorpay/{tenant_id}/{environment_id}")
async def razorpay_webhook(
    request: Request,
    tenant_id: ScopePath,
    environment_id: ScopePath,
    x_razorpay_signature: Annotated[str | None, Header()] = None,
    x_razorpay_event_id: Annotated[str | None, Header()] = None,
) -> WebhookReceipt:
    """Razorpay's webhook for this environment (``payment_link.paid``, ``payment.captured``,
    ``payment_link.cancelled``, ``payment_link.expired``). Always 200: ``status`` says whether it
    was applied or why it was ignored (a bad signature changes nothing)."""
    body = await request.body()
    billing: Billing = request.app.state.billing
    scoped = billing.scope(tenant_id, environment_id)
    try:
        status = await run_in_threadpool(
            scoped.checkout.razorpay_webhook,
            body,
            signature=x_razorpay_signature,
            event_id=x_razorpay_event_id,
        )
    except BillingError as exc:  # logged by the error's own code; Razorpay gets its 200
        status = f"ignored: {exc.code}"
    return WebhookReceipt(status=status)
