"""Invoice reads, search and the preview of a subscription's next invoice.

The preview runs the billing run's own code (:mod:`billingkit.services.invoicing`) on the current
period and writes nothing: for an active subscription, the invoice its current period end will
produce (that period's ARREAR charges with the usage so far, plus the next period's ADVANCE
charges); for a trialing one, the invoice at trial end; for a draft, its opening invoice.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, ClassVar

from billingkit.domain.access import Action
from billingkit.domain.invoices import BillingReason, Invoice, InvoiceStatus, InvoiceType, PaymentStatus
from billingkit.domain.periods import Period
from billingkit.domain.queries import Filter, ListQuery, Op, Page
from billingkit.domain.renewals import plan_due
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.domain.validation import CurrencyCode, DecimalText, InputModel, NonEmptyStr, UtcDatetime
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.grouped_billing import check_billed_alone, group_charges
from billingkit.services.invoicing import Charge, build_invoice, compute_invoices, load_snapshot
from billingkit.services.records import get_live
from billingkit.services.search import Searches, SearchRequest

__all__ = ["InvoicePreview", "InvoiceSearch", "get_invoice", "preview_invoice", "search_invoices"]

ENTITY = "invoice"
LABEL = "invoice"


class InvoiceSearch(SearchRequest):
    kind: ClassVar[str] = "invoices"
    invoice_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    customer_id: Annotated[str | None, Searches("customer_id", Op.EQ)] = None
    #: The subscriber's customer (differs from ``customer_id`` under delegated invoicing).
    subscription_customer_id: Annotated[list[str] | None, Searches("subscription_customer_id", Op.IN)] = None
    external_customer_id: str | None = None
    subscription_id: Annotated[str | None, Searches("subscription_id", Op.EQ)] = None
    invoice_type: Annotated[InvoiceType | None, Searches("invoice_type", Op.EQ)] = None
    invoice_status: Annotated[list[InvoiceStatus] | None, Searches("invoice_status", Op.IN)] = None
    payment_status: Annotated[list[PaymentStatus] | None, Searches("payment_status", Op.IN)] = None
    billing_reason: Annotated[BillingReason | None, Searches("billing_reason", Op.EQ)] = None
    currency: Annotated[CurrencyCode | None, Searches("currency", Op.EQ)] = None
    period_start_gte: Annotated[UtcDatetime | None, Searches("period_start", Op.GTE)] = None
    period_start_lte: Annotated[UtcDatetime | None, Searches("period_start", Op.LTE)] = None
    period_end_gte: Annotated[UtcDatetime | None, Searches("period_end", Op.GTE)] = None
    period_end_lte: Annotated[UtcDatetime | None, Searches("period_end", Op.LTE)] = None
    amount_due_gt: Annotated[DecimalText | None, Searches("amount_due", Op.GT)] = None
    amount_remaining_gt: Annotated[DecimalText | None, Searches("amount_remaining", Op.GT)] = None
    skip_line_items: bool = False


class InvoicePreview(InputModel):
    """``subscription_id``; optionally ``period_start`` and ``period_end`` (both) to preview another
    window than the current period."""

    subscription_id: NonEmptyStr
    period_start: UtcDatetime | None = None
    period_end: UtcDatetime | None = None
    hide_zero_charges_line_items: bool = False


def get_invoice(uow: UnitOfWork, ctx: Context, *, invoice_id: str) -> Invoice:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.invoices, LABEL, invoice_id)


def search_invoices(uow: UnitOfWork, ctx: Context, *, search: InvoiceSearch) -> Page[Invoice]:
    """A page of invoices (newest first by default); ``skip_line_items`` leaves the lines out."""
    ctx.require(ENTITY, Action.READ)
    query = search.to_query()
    if search.external_customer_id:
        customer = uow.customers.find_one(external_id=search.external_customer_id)
        if customer is None:
            return Page(items=[], total=0, limit=query.limit, offset=query.offset)
        query = ListQuery(
            filters=(*query.filters, Filter("customer_id", Op.EQ, customer.id)),
            sort=query.sort,
            limit=query.limit,
            offset=query.offset,
            status=query.status,
        )
    page = uow.invoices.list(query)
    if search.skip_line_items:
        items = [invoice.model_copy(update={"line_items": ()}) for invoice in page.items]
        return Page(items=items, total=page.total, limit=page.limit, offset=page.offset)
    return page


def preview_invoice(uow: UnitOfWork, ctx: Context, *, request: InvoicePreview) -> Invoice:
    """The invoice the subscription's next billing step will issue, computed now, not stored.

    Raises ``NotFound`` for an unknown subscription, ``ValidationError`` for a half-given or
    reversed window or an ended subscription, and ``InvalidOperation`` for a child subscription
    (a parent's preview shows its grouped children's lines).
    """
    ctx.require(ENTITY, Action.READ)
    sub = get_live(uow.subscriptions, "subscription", request.subscription_id)
    check_billed_alone(sub)
    status = sub.subscription_status
    current = Period(sub.current_period_start, sub.current_period_end)
    if (request.period_start is None) != (request.period_end is None):
        field = "period_end" if request.period_end is None else "period_start"
        raise ValidationError("give both period_start and period_end, or neither", field=field)
    if status is SubscriptionStatus.CANCELLED:
        raise ValidationError(
            f"subscription {sub.id} has ended; nothing is left to bill", field="subscription_id"
        )
    if status is SubscriptionStatus.DRAFT:
        charge = Charge(sub, BillingReason.SUBSCRIPTION_CREATE, "period_start", current)
    elif status is SubscriptionStatus.TRIALING:
        trial_end = plan_due(sub, sub.current_period_end)
        first = (
            next(step.period for step in trial_end.steps if step.period is not None)
            if trial_end.steps
            else None
        )
        if first is None:
            raise ValidationError(f"subscription {sub.id} ends with its trial", field="subscription_id")
        charge = Charge(sub, BillingReason.SUBSCRIPTION_TRIAL_END, "period_start", first)
    else:
        window = current
        if request.period_start is not None and request.period_end is not None:
            if request.period_end <= request.period_start:
                raise ValidationError("period_end must be after period_start", field="period_end")
            window = Period(request.period_start, request.period_end)
        following = None
        if sub.end_date is None or window.end < sub.end_date:
            following = sub.schedule().first_period(window.end, end_date=sub.end_date)
        charge = Charge(sub, BillingReason.SUBSCRIPTION_CYCLE, "preview", window, following)
    snapshot = load_snapshot(uow, [sub], at=ctx.now)
    (charge,) = group_charges(snapshot, sub, [charge])
    (computed,) = compute_invoices(uow, [charge], snapshot, as_of=ctx.now)
    invoice = build_invoice(ctx, computed, snapshot, billing_sequence=sub.billing_sequence + 1)
    if request.hide_zero_charges_line_items:
        invoice = invoice.model_copy(
            update={"line_items": tuple(line for line in invoice.line_items if line.amount != Decimal(0))}
        )
    return invoice
