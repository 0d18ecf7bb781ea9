"""``scoped.subscriptions``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.invoices import Invoice
from billingkit.domain.queries import Page
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import invoices as invoice_svc
from billingkit.services import subscriptions as svc

__all__ = ["Subscriptions"]


class Subscriptions:
    """Subscriptions of one environment. Pass a request model or its fields as keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.SubscriptionCreate | None = None, /, **fields: Any) -> Subscription:
        """Put a customer on a plan. Required: ``plan_id``, ``currency``, ``billing_period`` and
        ``customer_id`` or ``external_customer_id``. Optional: ``billing_period_count``,
        ``billing_cycle`` (``anniversary``/``calendar``), ``billing_anchor``, ``start_date``
        (default now), ``end_date``, ``subscription_status="draft"``, ``trial_period_days``,
        ``payment_terms`` (``"30 NET"``), ``lookup_key``, ``metadata``, ``timezone``, ... An active
        subscription gets its opening invoice (the first period's ADVANCE charges) at once.

        Example::

            sub = scoped.subscriptions.create(customer_id=customer.id, plan_id=plan.id,
                                              currency="usd", billing_period="MONTHLY")
        """
        data = request or parse_input(svc.SubscriptionCreate, fields)
        notice = self._s.billing.renewal_notice
        return self._s.run(svc.create_subscription, data=data, renewal_notice=notice)

    def activate(self, subscription_id: str, *, start_date: Any = None) -> Subscription:
        """Activate a draft (optionally from a new ``start_date``) and issue its opening invoice;
        ``InvalidOperation`` for anything but a draft."""
        data = parse_input(svc.SubscriptionActivate, {"start_date": start_date})
        notice = self._s.billing.renewal_notice
        return self._s.run(
            svc.activate_subscription, subscription_id=subscription_id, data=data, renewal_notice=notice
        )

    def get(self, subscription_id: str) -> Subscription:
        return self._s.run(svc.get_subscription, subscription_id=subscription_id)

    def get_v2(self, subscription_id: str, *, expand: str | None = None) -> svc.SubscriptionV2:
        """The v2 read: ``expand`` names optional parts (``subscription_line_items``, ...)."""
        return self._s.run(svc.get_subscription_v2, subscription_id=subscription_id, expand=expand)

    def list(self, request: svc.SubscriptionSearch | None = None, /, **fields: Any) -> Page[Subscription]:
        """A page of subscriptions. Filters: ``subscription_ids``, ``customer_id``, ``customer_ids``,
        ``external_customer_id``, ``plan_id``, ``subscription_status``, ``billing_period``, ..."""
        data = request or parse_input(svc.SubscriptionSearch, fields)
        return self._s.run(svc.search_subscriptions, search=data)

    search = list

    def for_customer(self, external_id: str) -> Page[Subscription]:
        """Every live subscription of the customer with ``external_id``."""
        return self._s.run(svc.customer_subscriptions, external_id=external_id)

    def preview_invoice(self, subscription_id: str, **fields: Any) -> Invoice:
        """The invoice the subscription's current period will produce, computed now and not stored."""
        data = parse_input(invoice_svc.InvoicePreview, {"subscription_id": subscription_id, **fields})
        return self._s.run(invoice_svc.preview_invoice, request=data)
