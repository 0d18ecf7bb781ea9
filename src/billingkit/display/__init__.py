"""Notebook and terminal display of billing records, and DataFrames of them.

Records mix in :class:`billingkit.domain.display.Displayed`, which calls this package when it is
first used: ``repr(x)`` is :func:`summary`, ``str(x)`` (``print(x)``, ``x.show()``) is
:func:`to_text`, and Jupyter's ``x._repr_html_()`` is :func:`to_html`. Shown: invoices (lines,
periods, quantities, discounts, taxes, totals, money in the customer's locale), subscriptions,
plans and prices (tiers as a table), customers, pages of results, billing run reports, usage
reports and invoice recompute diffs.

Sees the domain (and :mod:`billingkit.documents` for the invoice wording) only; DataFrames
(:mod:`billingkit.display.frames`) need the optional ``notebook`` extra (pandas).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from babel import Locale

from billingkit.display.layout import Display, Table, html, text
from billingkit.display.views import (
    customer_display,
    diff_display,
    invoice_display,
    line_display,
    page_display,
    plan_display,
    price_display,
    subscription_display,
    summary_of,
)
from billingkit.domain.catalog import Plan, Price
from billingkit.domain.customers import Customer
from billingkit.domain.display import Displayed
from billingkit.domain.invoice_diff import InvoiceDiff
from billingkit.domain.invoices import Invoice, InvoiceLineItem
from billingkit.domain.queries import Page
from billingkit.domain.subscriptions import Subscription

__all__ = ["Display", "InvoiceView", "Table", "describe", "summary", "to_html", "to_text"]


@dataclass(frozen=True, slots=True, repr=False)
class InvoiceView(Displayed):
    """An invoice with the customer it is written for: its display uses the customer's name and
    locale (``metadata["locale"]``, else ``address_country``, else ``en_US``; ``locale``
    overrides it). Made by ``invoice.display(customer=...)`` and ``scoped.invoices.display(id)``."""

    invoice: Invoice
    customer: Customer | None = None
    locale: Locale | str | None = None


_DISPLAYS: tuple[tuple[type[Any], Callable[[Any], Display]], ...] = (
    (InvoiceView, lambda v: invoice_display(v.invoice, customer=v.customer, locale=v.locale)),
    (Invoice, invoice_display),
    (InvoiceLineItem, line_display),
    (InvoiceDiff, diff_display),
    (Plan, plan_display),
    (Price, price_display),
    (Customer, customer_display),
    (Subscription, subscription_display),
    (Page, page_display),
)


def describe(value: object) -> Display:
    """What ``value`` shows. Records of the domain are known here; another object describes
    itself with a ``_display_()`` method (billing run and usage reports do). Raises
    ``TypeError`` for anything else."""
    for kind, build in _DISPLAYS:
        if isinstance(value, kind):
            return build(value)
    own = getattr(value, "_display_", None)
    if callable(own):
        shown = own()
        if isinstance(shown, Display):
            return shown
    raise TypeError(f"billingkit has no display for {type(value).__name__}")


def summary(value: object) -> str:
    """``value``'s one-line ``repr`` (``<Page 2 of 10 Invoice (offset 0)>``) for the displayed
    types without one of their own (records such as ``Invoice`` have theirs)."""
    if isinstance(value, InvoiceView):
        return repr(value.invoice)
    known = summary_of(value)
    return known if known is not None else f"<{type(value).__name__}>"


def to_html(value: object) -> str:
    """``value`` as an HTML fragment for notebooks, every string escaped."""
    return html(describe(value))


def to_text(value: object) -> str:
    """``value`` as plain text for terminals."""
    return text(describe(value))
