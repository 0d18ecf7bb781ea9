"""Recomputing a stored subscription invoice from its inputs, to explain or audit it.

:func:`recompute_invoice` prices the invoice's charge again with the billing run's own code
(:mod:`billingkit.services.invoicing`: the snapshot of the subscription's line items, prices,
meters, allowances, coupons and taxes as they are stored now, the usage stored for its windows,
:func:`~billingkit.services.invoicing.compute_invoices` and
:func:`~billingkit.services.invoicing.build_invoice`), writes nothing, and answers the
differences line by line (:func:`billingkit.domain.invoice_diff.diff_invoices`).

Rules:

* Accepted: invoices of a subscription (``invoice_type`` ``SUBSCRIPTION``) issued by its opening
  (``SUBSCRIPTION_CREATE``), its trial end (``SUBSCRIPTION_TRIAL_END``) or a period end or
  cancellation (``SUBSCRIPTION_CYCLE``). Refused with ``InvalidOperation``: one-off and manual
  invoices (no inputs to price again), the netted invoices of mid-period changes
  (``SUBSCRIPTION_UPDATE``, ``PRORATION``: their inputs were the change, not the period) and
  threshold invoices (``AUTO_INVOICE_THRESHOLD``: priced on the usage seen at a check).
* The charge: an opening or trial-end invoice bills the ADVANCE charges of its period. A cycle
  invoice whose period is a whole period of the subscription's schedule bills that period's
  ARREAR charges and the next period's ADVANCE ones (none when the subscription ends at its end,
  as the billing run decides); one whose period stops short of the schedule's period end is a
  cancellation's, billing the ARREAR charges up to it.
* Instants: the tax associations, coupon windows and the computing instant are those of when
  the invoice was last computed (``last_computed_at``), so only changed inputs show.
* A coupon's cadence counts the invoices it discounted before this one (by billing sequence), as
  when the invoice was computed: a ``once`` coupon still discounts the invoice it discounted, a
  ``repeated`` one each of its first periods, however many invoices came since.
* Prepaid credits are not drawn again: what the invoice drew from wallets (at finalization) is a
  payment, not a price. The recomputed invoice keeps the stored credits on its total:
  ``total = max(0, subtotal - discount + tax - credits applied)``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import datetime

from billingkit.documents.invoice_text import invoice_locale
from billingkit.domain.cancellation import scheduled_end
from billingkit.domain.invoice_diff import InvoiceDiff, diff_invoices
from billingkit.domain.invoices import BillingReason, Invoice, InvoiceType
from billingkit.domain.money import ZERO
from billingkit.domain.periods import Period
from billingkit.domain.subscriptions import Subscription
from billingkit.errors import InvalidOperation, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.grouped_billing import group_charges
from billingkit.services.invoice_updates import own_applications
from billingkit.services.invoices import get_invoice
from billingkit.services.invoicing import Charge, Snapshot, build_invoice, compute_invoices, load_snapshot
from billingkit.services.records import list_where_in

__all__ = ["RECOMPUTABLE_REASONS", "price_again", "recompute_invoice"]

#: The billing reasons of the invoices :func:`recompute_invoice` accepts.
RECOMPUTABLE_REASONS = frozenset(
    {
        BillingReason.SUBSCRIPTION_CREATE,
        BillingReason.SUBSCRIPTION_TRIAL_END,
        BillingReason.SUBSCRIPTION_CYCLE,
    }
)


def _check_recomputable(invoice: Invoice) -> None:
    if invoice.invoice_type is not InvoiceType.SUBSCRIPTION or invoice.subscription_id is None:
        raise InvalidOperation(
            f"invoice {invoice.id} is a {invoice.invoice_type.value} invoice: only subscription "
            "invoices are computed from inputs that can be priced again"
        )
    if invoice.billing_reason not in RECOMPUTABLE_REASONS:
        reason = invoice.billing_reason.value if invoice.billing_reason is not None else "no billing reason"
        raise InvalidOperation(
            f"invoice {invoice.id} ({reason}) cannot be recomputed: only opening, trial end and "
            "period invoices are (SUBSCRIPTION_CREATE, SUBSCRIPTION_TRIAL_END, SUBSCRIPTION_CYCLE)"
        )
    if invoice.period_start is None or invoice.period_end is None:
        raise InvalidOperation(f"invoice {invoice.id} has no period to recompute")


def _charge(sub: Subscription, invoice: Invoice) -> Charge:
    """The charge the billing run priced ``invoice`` as (see the module rules)."""
    assert invoice.period_start is not None and invoice.period_end is not None
    period = Period(invoice.period_start, invoice.period_end)
    reason = invoice.billing_reason or BillingReason.SUBSCRIPTION_CYCLE
    if reason is not BillingReason.SUBSCRIPTION_CYCLE:
        return Charge(sub, reason, "period_start", period)
    schedule = sub.schedule()
    try:
        whole = schedule.first_period(period.start)
    except ValidationError as exc:
        raise InvalidOperation(
            f"invoice {invoice.id}'s period is not on subscription {sub.id}'s schedule: {exc.message}"
        ) from exc
    if whole.end > period.end:  # cut short: a cancellation's (or an end date's) invoice
        return Charge(sub, reason, "cancel", whole, cancel_at=period.end)
    end = scheduled_end(sub)
    following = (
        None if end is not None and end <= period.end else schedule.first_period(period.end, end_date=end)
    )
    return Charge(sub, reason, "period_end", period, following)


def _applications_then(uow: UnitOfWork, snapshot: Snapshot, sub: Subscription, invoice: Invoice) -> None:
    """Set each of ``sub``'s coupon associations' count of discounted invoices back to what it
    was when ``invoice`` was computed: the subscription's invoices billed before it (by billing
    sequence) that it discounted, each once, as the billing run counts them."""
    associations = snapshot.coupon_associations.get(sub.id)
    if not associations:
        return
    sequence = invoice.billing_sequence or 0
    earlier = [
        stored
        for stored in list_where_in(uow.invoices, "subscription_id", [sub.id], status=None)
        if stored.id != invoice.id
        and stored.billing_sequence is not None
        and stored.billing_sequence < sequence
    ]
    counts = Counter(association for stored in earlier for association in own_applications(stored))
    snapshot.coupon_associations[sub.id] = tuple(
        replace(a, applications=counts.get(a.id, 0)) for a in associations
    )


def recompute_invoice(uow: UnitOfWork, ctx: Context, *, invoice_id: str) -> InvoiceDiff:
    """Price invoice ``invoice_id`` again from its inputs as they are stored now and answer what
    differs from the stored invoice (empty when nothing does). Writes nothing.

    Raises ``NotFound`` (unknown invoice, or its subscription is gone), ``PermissionDenied``
    (the caller may not read invoices) and ``InvalidOperation`` for an invoice of a kind that is
    not recomputed (see the module rules).
    """
    invoice = get_invoice(uow, ctx, invoice_id=invoice_id)
    recomputed, snapshot = price_again(uow, ctx, invoice, at=invoice.last_computed_at or invoice.created_at)
    customer = snapshot.customers.get(invoice.customer_id) or uow.customers.find(invoice.customer_id)
    return diff_invoices(invoice, recomputed, locale=str(invoice_locale(customer)))


def price_again(uow: UnitOfWork, ctx: Context, invoice: Invoice, *, at: datetime) -> tuple[Invoice, Snapshot]:
    """``invoice`` priced again from its inputs as stored now, with the coupon windows, tax
    associations and computing instant of ``at`` (see the module rules), keeping its id, and the
    snapshot it was priced with. Writes nothing.

    Raises ``NotFound`` (its subscription is gone) and ``InvalidOperation`` (an invoice of a kind
    that is not recomputed).
    """
    _check_recomputable(invoice)
    assert invoice.subscription_id is not None
    sub = uow.subscriptions.find(invoice.subscription_id)
    if sub is None:
        raise NotFound(f"subscription {invoice.subscription_id} of invoice {invoice.id} not found")
    snapshot = load_snapshot(uow, [sub], at=at, credits=False)
    _applications_then(uow, snapshot, sub, invoice)
    (charge,) = group_charges(snapshot, sub, [_charge(sub, invoice)])
    (computed,) = compute_invoices(uow, [charge], snapshot, as_of=at)
    fresh = build_invoice(
        ctx, computed, snapshot, billing_sequence=invoice.billing_sequence, invoice_id=invoice.id
    )
    credits = invoice.total_prepaid_credits_applied
    total = max(fresh.total - credits, ZERO)
    recomputed = fresh.model_copy(
        update={"total_prepaid_credits_applied": credits, "total": total, "amount_due": total}
    )
    return recomputed, snapshot
