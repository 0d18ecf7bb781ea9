"""The customer portal: ``scoped.customer_portal.create_session(external_id)`` hands out a session
token for one customer; ``billing.open_portal(token)`` is that customer's read-only view
(:class:`CustomerPortal`), what ``/v1/customer/portal/*`` serves
(:mod:`billingkit.services.portal_sessions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from billingkit.documents import render_invoice_pdf
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice
from billingkit.domain.portal_tokens import PortalClaims
from billingkit.domain.queries import Page
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import Wallet
from billingkit.facade.operations import Area
from billingkit.services import portal_sessions
from billingkit.services.subscription_entitlements import CustomerEntitlements

if TYPE_CHECKING:
    from billingkit.facade.scoped import Scoped

__all__ = ["CustomerPortal", "CustomerPortalSessions"]


class CustomerPortalSessions(Area):
    """Portal sessions of this environment's customers (``scoped.customer_portal``)."""

    def create_session(self, external_id: str, /) -> portal_sessions.PortalSession:
        """A session token for the customer with ``external_id``, valid for
        ``settings.portal_session_lifetime`` (one hour by default), with the portal's ``url`` and
        ``expires_at``. Open it with ``billing.open_portal(token)`` or send it to
        ``/v1/customer/portal/*`` as ``X-Session-Token``. Nothing is stored (the token is the
        session, so it cannot be revoked before it expires; deleting the customer ends it).
        Raises ``NotFound`` for an unknown customer and ``PermissionDenied`` without
        ``customer: write``."""
        # Signing a token writes nothing: a read-only unit of work is enough.
        return self._s.read(
            portal_sessions.issue_portal_session,
            external_id=external_id,
            secret=self._s.billing._token_secret,
        )


class CustomerPortal:
    """One customer's own records, read-only, as its portal session shows them. Made by
    ``billing.open_portal(token)``; every call is one read-only unit of work. A record of another
    customer (an invoice id of someone else) is ``NotFound``, as a missing one is."""

    def __init__(self, scoped: Scoped, claims: PortalClaims) -> None:
        self._s = scoped  # reads as the customer (portal_sessions.portal_actor): all_reader
        self.claims = claims

    @property
    def customer_id(self) -> str:
        return self.claims.customer_id

    def customer(self) -> Customer:
        """The customer."""
        return self._s.read(portal_sessions.get_portal_customer, customer_id=self.customer_id)

    def subscriptions(self, *, limit: int = 50, offset: int = 0) -> Page[Subscription]:
        """The customer's subscriptions, newest first."""
        return self._s.read(
            portal_sessions.list_portal_subscriptions,
            customer_id=self.customer_id,
            limit=limit,
            offset=offset,
        )

    def invoices(self, *, limit: int = 50, offset: int = 0) -> Page[Invoice]:
        """The invoices billed to the customer, newest first."""
        return self._s.read(
            portal_sessions.list_portal_invoices, customer_id=self.customer_id, limit=limit, offset=offset
        )

    def invoice(self, invoice_id: str, /) -> Invoice:
        """One of the customer's invoices (``NotFound`` for anyone else's)."""
        return self._s.read(
            portal_sessions.get_portal_invoice, customer_id=self.customer_id, invoice_id=invoice_id
        )

    def invoice_pdf(self, invoice_id: str, /, *, locale: str | None = None) -> bytes:
        """One of the customer's invoices as PDF bytes, as ``scoped.invoices.pdf`` draws it
        (``ConfigurationError`` without the ``pdf`` extra)."""
        document = self._s.read(
            portal_sessions.load_portal_invoice_document, customer_id=self.customer_id, invoice_id=invoice_id
        )
        return render_invoice_pdf(
            document.invoice, customer=document.customer, seller=document.seller, locale=locale
        )

    def wallets(self) -> list[Wallet]:
        """The customer's wallets, oldest first."""
        return self._s.read(portal_sessions.list_portal_wallets, customer_id=self.customer_id)

    def entitlements(self) -> CustomerEntitlements:
        """What the customer's active subscriptions entitle it to."""
        return self._s.read(portal_sessions.get_portal_entitlements, customer_id=self.customer_id)

    def __repr__(self) -> str:
        return f"<CustomerPortal {self.customer_id} until {self.claims.expires_at.isoformat()}>"
