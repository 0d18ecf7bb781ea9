"""``scoped.invoices``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.invoices import Invoice
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import invoices as svc

__all__ = ["Invoices"]


class Invoices:
    """Invoices of one environment (issued by subscriptions and billing runs)."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def get(self, invoice_id: str) -> Invoice:
        return self._s.run(svc.get_invoice, invoice_id=invoice_id)

    def list(self, request: svc.InvoiceSearch | None = None, /, **fields: Any) -> Page[Invoice]:
        """A page of invoices. Filters: ``customer_id``, ``external_customer_id``,
        ``subscription_id``, ``invoice_status``, ``payment_status``, ``billing_reason``,
        ``period_start_gte`` ... ``period_end_lte``, ``invoice_ids``; ``skip_line_items``."""
        data = request or parse_input(svc.InvoiceSearch, fields)
        return self._s.run(svc.search_invoices, search=data)

    search = list

    def preview(self, subscription_id: str, **fields: Any) -> Invoice:
        """Same as ``scoped.subscriptions.preview_invoice``: the next invoice, not stored."""
        data = parse_input(svc.InvoicePreview, {"subscription_id": subscription_id, **fields})
        return self._s.run(svc.preview_invoice, request=data)
