"""A customer's invoices summed per currency: ``GET /customers/{id}/invoices/summary``
(getCustomerInvoiceSummary, the reference's CustomerMultiCurrencyInvoiceSummary).

A pure read. The reference announces overdue invoices (``invoice.payment.overdue``) as a side
effect of this read; billingkit announces them from the due-work runner
(:mod:`billingkit.services.invoice_overdue`), so reading a summary never writes.

Rules (per currency, exact ``Decimal`` sums of stored amounts):

* Counted: the customer's FINALIZED invoices (the ones it owes or paid). Drafts may still change,
  SKIPPED ones bill nothing and VOIDED ones are cancelled, so none of them count.
* ``total_invoice_count`` / ``total_revenue_amount``: the invoices and the sum of their ``total``.
* Unpaid: ``amount_remaining`` above 0; ``total_unpaid_amount`` sums it.
* Overdue: unpaid with a ``due_date`` before now; ``total_overdue_amount`` sums their remaining.
* ``unpaid_usage_charges`` / ``unpaid_fixed_charges``: of each unpaid invoice's remaining amount,
  the part its USAGE (FIXED) lines account for, after their discounts and credits, at most the
  remaining amount (:func:`billingkit.domain.wallet_balances.unpaid_share`, as a wallet restricted
  to that price type counts it). Example: remaining 22.00, USAGE line payable 20.00, FIXED line
  20.00 -> usage 20.00, fixed 20.00 (tax and payments make the parts overlap; each is a bound).
* ``summaries`` are ordered by currency; ``default_currency`` is the currency of the customer's
  newest counted invoice (``None`` without one).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.invoices import Invoice, InvoiceStatus
from billingkit.domain.money import ZERO
from billingkit.domain.queries import Filter, Op
from billingkit.domain.wallet_balances import PayableLine, unpaid_share
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import get_live, list_where_in

__all__ = ["CurrencyInvoiceSummary", "CustomerInvoiceSummary", "get_customer_invoice_summary"]

_USAGE = frozenset({"USAGE"})
_FIXED = frozenset({"FIXED"})


@dataclass(frozen=True, slots=True)
class CurrencyInvoiceSummary:
    """The reference's CustomerInvoiceSummary: one currency's counts and exact sums."""

    customer_id: str
    currency: str
    total_invoice_count: int = 0
    total_revenue_amount: Decimal = ZERO
    unpaid_invoice_count: int = 0
    total_unpaid_amount: Decimal = ZERO
    overdue_invoice_count: int = 0
    total_overdue_amount: Decimal = ZERO
    unpaid_usage_charges: Decimal = ZERO
    unpaid_fixed_charges: Decimal = ZERO

    def to_dict(self) -> dict[str, Any]:
        return {
            "customer_id": self.customer_id,
            "currency": self.currency,
            "total_invoice_count": self.total_invoice_count,
            "total_revenue_amount": str(self.total_revenue_amount),
            "unpaid_invoice_count": self.unpaid_invoice_count,
            "total_unpaid_amount": str(self.total_unpaid_amount),
            "overdue_invoice_count": self.overdue_invoice_count,
            "total_overdue_amount": str(self.total_overdue_amount),
            "unpaid_usage_charges": str(self.unpaid_usage_charges),
            "unpaid_fixed_charges": str(self.unpaid_fixed_charges),
        }


@dataclass(frozen=True, slots=True)
class CustomerInvoiceSummary:
    """The reference's CustomerMultiCurrencyInvoiceSummary."""

    customer_id: str
    default_currency: str | None
    summaries: tuple[CurrencyInvoiceSummary, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "customer_id": self.customer_id,
            "default_currency": self.default_currency,
            "summaries": [summary.to_dict() for summary in self.summaries],
        }


def _payable(invoice: Invoice) -> list[PayableLine]:
    return [
        PayableLine.of(
            line.price_type.value if line.price_type is not None else None,
            line.amount,
            line_item_discount=line.line_item_discount,
            invoice_level_discount=line.invoice_level_discount,
            prepaid_credits_applied=line.prepaid_credits_applied,
        )
        for line in invoice.line_items
    ]


def get_customer_invoice_summary(
    uow: UnitOfWork, ctx: Context, *, customer_id: str
) -> CustomerInvoiceSummary:
    """Customer ``customer_id``'s FINALIZED invoices counted and summed per currency (see the
    module rules). Writes nothing. Raises ``NotFound`` for an unknown customer."""
    ctx.require("customer", Action.READ)
    ctx.require("invoice", Action.READ)
    customer = get_live(uow.customers, "customer", customer_id)
    invoices = list_where_in(
        uow.invoices,
        "customer_id",
        [customer.id],
        Filter("invoice_status", Op.IN, (InvoiceStatus.FINALIZED,)),
    )
    now = ctx.now
    sums: dict[str, dict[str, Any]] = {}
    for invoice in invoices:
        row = sums.setdefault(
            invoice.currency,
            {
                "total_invoice_count": 0,
                "total_revenue_amount": ZERO,
                "unpaid_invoice_count": 0,
                "total_unpaid_amount": ZERO,
                "overdue_invoice_count": 0,
                "total_overdue_amount": ZERO,
                "unpaid_usage_charges": ZERO,
                "unpaid_fixed_charges": ZERO,
            },
        )
        row["total_invoice_count"] += 1
        row["total_revenue_amount"] += invoice.total
        remaining = invoice.amount_remaining
        if remaining <= ZERO:
            continue
        row["unpaid_invoice_count"] += 1
        row["total_unpaid_amount"] += remaining
        lines = _payable(invoice)
        row["unpaid_usage_charges"] += unpaid_share(remaining, lines, _USAGE)
        row["unpaid_fixed_charges"] += unpaid_share(remaining, lines, _FIXED)
        if invoice.due_date is not None and invoice.due_date < now:
            row["overdue_invoice_count"] += 1
            row["total_overdue_amount"] += remaining
    newest = max(invoices, key=lambda inv: (inv.created_at, inv.id), default=None)
    return CustomerInvoiceSummary(
        customer_id=customer.id,
        default_currency=newest.currency if newest is not None else None,
        summaries=tuple(
            CurrencyInvoiceSummary(customer.id, currency, **sums[currency]) for currency in sorted(sums)
        ),
    )
