"""Money moved at once when a started subscription's line items change mid-period.

* **Charge** (:func:`charge_now`): lines to bill now are priced by the billing core as the
  current period's ADVANCE charges, each clipped to its own start, on one invoice with billing
  reason ``SUBSCRIPTION_UPDATE`` for ``[effective, current period end)``, finalized at once (taxes,
  coupons and prepaid credits apply as on any subscription invoice). A recurring ADVANCE fee
  added 10 days into a 30-day month at 30.00 is charged 30.00 x 20/30 = 20.00 (by seconds); a
  one-time charge dated in the current period is charged in full.
* **Credit** (:func:`credit_unused`): the unused rest of a recurring ADVANCE fee ended mid-period,
  ``price x quantity x remaining / period`` (by seconds), capped at what the current period's
  invoices billed for the line (less their discounts), is paid into the customer's PRE_PAID
  wallet (reason ``SUBSCRIPTION_CREDIT_GRANT``; no credit note, never a negative invoice).

Never twice: the credit's movement key is ``line_item_proration_credit|<line>|<period start>|
<period end>`` (a retry, or a second end of the same line in the period, finds the first and
moves nothing); a charge invoice carries the idempotency key ``line_item_proration|<line>`` of
the line it bills, and one subscription has one ``SUBSCRIPTION_UPDATE`` invoice per
``[effective, period end)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.line_item_rules import is_recurring_advance_fee, started_by
from billingkit.domain.money import ZERO
from billingkit.domain.periods import InvoiceCadence, Period
from billingkit.domain.proration import ProratedItem, prorate_credit
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.domain.resources import iso
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.domain.wallets import TransactionReason, movement_key
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.coupon_associations import count_applications, record_applications
from billingkit.services.grouped_billing import check_settled_alone
from billingkit.services.invoicing import (
    Charge,
    build_invoice,
    compute_invoices,
    issue_invoice,
    load_snapshot,
)
from billingkit.services.line_billing import paid_for_lines
from billingkit.services.wallet_ledger import credit, prepaid_wallet

__all__ = ["charge_now", "credit_unused"]


def charge_now(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    lines: Sequence[SubscriptionLineItem],
    *,
    effective: datetime,
) -> tuple[Subscription, Invoice | None]:
    """Invoice ``lines`` of started ``sub`` now for the rest of its current period from
    ``effective`` (see the module doc); ``sub`` with its billing sequence moved when an invoice
    was issued, and the invoice (None when nothing is owed). ``InvalidOperation`` when ``sub``
    already has an update invoice from the same instant, or when ``sub`` is a grouped child
    (its parent's invoices bill its lines)."""
    if not lines or not started_by(sub):
        return sub, None
    check_settled_alone(sub)
    period = Period(sub.current_period_start, sub.current_period_end)
    start = max(effective, period.start)
    existing = uow.invoices.list(
        ListQuery(
            filters=(
                Filter("subscription_id", Op.EQ, sub.id),
                Filter("billing_reason", Op.EQ, BillingReason.SUBSCRIPTION_UPDATE.value),
                Filter("period_start", Op.GTE, start),
                Filter("period_start", Op.LTE, start),
            ),
            limit=1,
        )
    )
    if existing.items:
        raise InvalidOperation(
            f"subscription {sub.id} already has an update invoice from {iso(start)} "
            f"({existing.items[0].id}); give another effective date"
        )
    charged = sub.model_copy(update={"line_items": tuple(lines)})
    charge = Charge(charged, BillingReason.SUBSCRIPTION_UPDATE, "period_start", period)
    snapshot = load_snapshot(uow, [charged], at=ctx.now)
    (computed,) = compute_invoices(uow, [charge], snapshot, as_of=ctx.now)
    if not computed.draft.lines or computed.draft.subtotal == ZERO:
        return sub, None
    sequence = sub.billing_sequence + 1
    invoice = build_invoice(ctx, computed, snapshot, billing_sequence=sequence)
    invoice = invoice.model_copy(
        update={"period_start": start, "idempotency_key": movement_key("line_item_proration", lines[0].id)}
    )
    issued = issue_invoice(uow, ctx, invoice, computed=computed, snapshot=snapshot)
    record_applications(uow, ctx, count_applications(computed.draft.coupon_applications))
    return sub.model_copy(update={"billing_sequence": sequence}), issued


def credit_unused(
    uow: UnitOfWork, ctx: Context, sub: Subscription, line: SubscriptionLineItem, *, effective: datetime
) -> Decimal | None:
    """Credit the customer's PRE_PAID wallet with the unused rest of recurring ADVANCE fee
    ``line`` ended at ``effective`` in ``sub``'s current period (see the module doc); the amount
    credited, or None when nothing is owed (not such a line, not billed, no time left, or
    credited before). ``InvalidOperation`` for a grouped child (its parent's invoices bill it)."""
    check_settled_alone(sub)
    period = Period(sub.current_period_start, sub.current_period_end)
    if (
        not is_recurring_advance_fee(line)
        or not started_by(sub)
        or not period.start <= effective < period.end
    ):
        return None
    billed = paid_for_lines(uow, sub, period).get(line.id, ZERO)
    price = uow.prices.find(line.price_id)
    if billed <= ZERO or price is None:
        return None
    item = ProratedItem(price.to_spec(), line.quantity, InvoiceCadence.ADVANCE)
    prorated = prorate_credit(item, period, effective, amount_billed=billed)
    if prorated is None or prorated.amount <= ZERO:
        return None
    wallet = prepaid_wallet(uow, ctx, customer_id=sub.customer_id, currency=sub.currency)
    key = movement_key("line_item_proration_credit", line.id, iso(period.start) or "", iso(period.end) or "")
    moved = credit(
        uow,
        ctx,
        wallet,
        credits=prorated.amount,
        amount=prorated.amount,
        reason=TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
        key=key,
        description=f"Unused time of line item {line.id}",
        metadata={"subscription_id": sub.id, "subscription_line_item_id": line.id},
    )
    return prorated.amount if moved.created else None
