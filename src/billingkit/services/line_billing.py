"""What a subscription has paid for each of its line items in a period: the one cap on every
prorated credit of unused time (cancellation, add-on removal, line item deletion).

A line's share is its ADVANCE charges for time inside the period on the subscription's live
invoices (draft or finalized; voided ones gave the money back already), after their discounts,
less what finalized credit notes refunded on those charges. Two reads for any number of lines.
"""

from __future__ import annotations

from decimal import Decimal

from billingkit.domain.credit_notes import CreditNoteStatus
from billingkit.domain.invoices import InvoiceStatus
from billingkit.domain.money import ZERO
from billingkit.domain.periods import InvoiceCadence, Period
from billingkit.domain.queries import Filter, Op
from billingkit.domain.subscriptions import Subscription
from billingkit.ports import UnitOfWork
from billingkit.services.records import list_where_in

__all__ = ["billed_and_credited", "paid_for_lines"]


def billed_and_credited(
    uow: UnitOfWork, sub: Subscription, period: Period
) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """Per line item id: what ``sub``'s live invoices charged for its ADVANCE share of ``period``
    (after discounts), and what finalized credit notes gave back on those charges."""
    invoices = list_where_in(
        uow.invoices,
        "subscription_id",
        [sub.id],
        Filter("invoice_status", Op.IN, [InvoiceStatus.DRAFT.value, InvoiceStatus.FINALIZED.value]),
    )
    billed: dict[str, Decimal] = {}
    owners: dict[str, str] = {}  # invoice line id -> subscription line item id
    for invoice in invoices:
        for line in invoice.line_items:
            item = line.subscription_line_item_id
            if item is None or line.invoice_cadence is not InvoiceCadence.ADVANCE:
                continue
            if line.period_start >= period.end or line.period_end <= period.start:
                continue
            net = line.amount - line.line_item_discount - line.invoice_level_discount
            billed[item] = billed.get(item, ZERO) + net
            owners[line.id] = item
    credited: dict[str, Decimal] = {}
    if owners:
        notes = list_where_in(
            uow.credit_notes,
            "invoice_id",
            [invoice.id for invoice in invoices],
            Filter("credit_note_status", Op.EQ, CreditNoteStatus.FINALIZED.value),
        )
        for note in notes:
            for note_line in note.line_items:
                item = owners.get(note_line.invoice_line_item_id)
                if item is not None:
                    credited[item] = credited.get(item, ZERO) + note_line.amount
    return billed, credited


def paid_for_lines(uow: UnitOfWork, sub: Subscription, period: Period) -> dict[str, Decimal]:
    """Per line item id: billed less credited (see :func:`billed_and_credited`), never below 0."""
    billed, credited = billed_and_credited(uow, sub, period)
    return {item: max(amount - credited.get(item, ZERO), ZERO) for item, amount in billed.items()}
