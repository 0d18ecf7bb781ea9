"""The customer portal: session tokens for one customer, and what the portal shows them.

- :func:`issue_portal_session` (``GET /v1/customers/portal/{external_id}``) signs a token for the
  customer with that external id (:mod:`billingkit.domain.portal_tokens`), valid for
  ``Settings.portal_session_lifetime``. Nothing is stored: the token is the session.
- :func:`open_portal` checks a token (signature, audience, expiry) and that its customer is still
  live in its scope: the authentication of ``/v1/customer/portal/*`` (``X-Session-Token``).
- The ``portal_*`` reads answer one customer's own records through the existing read services;
  a record of another customer is ``NotFound``, exactly like a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from billingkit.domain.access import Action, Actor, Role
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.portal_tokens import PortalClaims, issue_portal_token, verify_portal_token
from billingkit.domain.queries import Page
from billingkit.domain.resources import Status, iso
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import Wallet
from billingkit.errors import NotFound, Unauthorized
from billingkit.ports import UnitOfWork
from billingkit.services import invoices, subscriptions, wallets
from billingkit.services.context import Context
from billingkit.services.customers import get_customer
from billingkit.services.invoice_documents import InvoiceDocument, load_invoice_document
from billingkit.services.subscription_entitlements import CustomerEntitlements, get_customer_entitlements

__all__ = [
    "PORTAL_PATH",
    "PortalSession",
    "get_portal_customer",
    "get_portal_entitlements",
    "get_portal_invoice",
    "issue_portal_session",
    "list_portal_invoices",
    "list_portal_subscriptions",
    "list_portal_wallets",
    "load_portal_invoice_document",
    "open_portal",
    "portal_actor",
]

#: Where the portal's routes live on the HTTP adapter (the ``url`` of a session starts here).
PORTAL_PATH = "/v1/customer/portal"


@dataclass(frozen=True, slots=True)
class PortalSession:
    """A new portal session: ``token`` (send it as ``X-Session-Token``), ``url`` (the portal's
    routes: ``Settings.public_url`` + ``/v1/customer/portal``, or that path alone) and when the
    token expires. The customer it opens is named too (not on the wire)."""

    token: str
    url: str
    expires_at: datetime
    customer_id: str
    external_customer_id: str

    def to_dict(self) -> dict[str, object]:
        return {"token": self.token, "url": self.url, "expires_at": iso(self.expires_at)}


def issue_portal_session(uow: UnitOfWork, ctx: Context, *, external_id: str, secret: bytes) -> PortalSession:
    """A portal session for the live customer with ``external_id``, signed with ``secret``.
    Handing out a customer's view is a write in the reference (``customer: write`` here too):
    ``PermissionDenied`` without it, ``NotFound`` for an unknown customer. Writes nothing."""
    ctx.require("customer", Action.WRITE)
    customer = uow.customers.find_one(external_id=external_id)
    if customer is None:
        raise NotFound(f"customer with external id {external_id!r} not found")
    token, claims = issue_portal_token(
        secret,
        tenant_id=ctx.tenant_id,
        environment_id=ctx.env,
        customer_id=customer.id,
        external_customer_id=customer.external_id,
        now=ctx.now,
        lifetime=ctx.settings.portal_session_lifetime,
    )
    base = (ctx.settings.public_url or "").rstrip("/")
    return PortalSession(
        token=token,
        url=base + PORTAL_PATH,
        expires_at=claims.expires_at,
        customer_id=customer.id,
        external_customer_id=customer.external_id,
    )


def open_portal(uow: UnitOfWork, *, token: str, secret: bytes, now: datetime) -> PortalClaims:
    """The claims of a portal ``token`` whose customer is still live in its scope (read with
    ``uow.for_scope``, like the other authentications). Every failure is :class:`Unauthorized`:
    a bad or expired token, or a customer deleted since it was issued."""
    claims = verify_portal_token(secret, token, now=now)
    scoped = uow.for_scope(claims.tenant_id, claims.environment_id)
    customer = scoped.customers.find(claims.customer_id)
    if customer is None or customer.status is not Status.PUBLISHED:
        raise Unauthorized("the customer of this session no longer exists")
    return claims


def portal_actor(customer_id: str) -> Actor:
    """Who the portal's reads run as: the customer, reading only (``all_reader``). The portal
    offers reads of the customer's own records only; the role cannot write whatever is called."""
    return Actor(id=customer_id, roles=(Role.ALL_READER,), account_type="customer")


def get_portal_customer(uow: UnitOfWork, ctx: Context, *, customer_id: str) -> Customer:
    """The portal's customer."""
    return get_customer(uow, ctx, customer_id=customer_id)


def list_portal_subscriptions(
    uow: UnitOfWork, ctx: Context, *, customer_id: str, limit: int = 50, offset: int = 0
) -> Page[Subscription]:
    """The customer's subscriptions, newest first (archived ones left out)."""
    search = subscriptions.SubscriptionSearch(customer_id=customer_id, limit=limit, offset=offset)
    return subscriptions.search_subscriptions(uow, ctx, search=search)


def list_portal_invoices(
    uow: UnitOfWork, ctx: Context, *, customer_id: str, limit: int = 50, offset: int = 0
) -> Page[Invoice]:
    """The invoices billed to the customer (its ``customer_id``), newest first."""
    search = invoices.InvoiceSearch(customer_id=customer_id, limit=limit, offset=offset)
    return invoices.search_invoices(uow, ctx, search=search)


def get_portal_invoice(uow: UnitOfWork, ctx: Context, *, customer_id: str, invoice_id: str) -> Invoice:
    """One invoice billed to the customer; another customer's is ``NotFound``."""
    invoice = invoices.get_invoice(uow, ctx, invoice_id=invoice_id)
    if invoice.customer_id != customer_id:
        raise NotFound(f"invoice {invoice_id} not found")
    return invoice


def load_portal_invoice_document(
    uow: UnitOfWork, ctx: Context, *, customer_id: str, invoice_id: str
) -> InvoiceDocument:
    """What the PDF of one of the customer's invoices is drawn from; another customer's invoice
    is ``NotFound``."""
    get_portal_invoice(uow, ctx, customer_id=customer_id, invoice_id=invoice_id)
    return load_invoice_document(uow, ctx, invoice_id=invoice_id)


def list_portal_wallets(uow: UnitOfWork, ctx: Context, *, customer_id: str) -> list[Wallet]:
    """The customer's wallets, oldest first."""
    return wallets.wallets_of_customer(uow, ctx, customer_id=customer_id)


def get_portal_entitlements(uow: UnitOfWork, ctx: Context, *, customer_id: str) -> CustomerEntitlements:
    """What the customer's granting subscriptions entitle it to."""
    return get_customer_entitlements(uow, ctx, customer_id=customer_id)
