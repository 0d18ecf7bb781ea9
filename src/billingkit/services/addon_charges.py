"""Money moved when an add-on is added to or removed from a running subscription mid-period.

* :func:`charge_added_lines`: the FIXED ADVANCE lines of an add-on added during the current period
  (a ``recurring`` one with ``create_prorations``, a ``onetime`` one always) are charged now on one
  invoice, billing reason ``SUBSCRIPTION_UPDATE``, period ``[add-on start, current period end)``.
  The amounts are the invoice core's: a line covering part of the period is charged
  ``amount x quantity x covered seconds / period seconds`` (the second-based coefficient of
  :mod:`billingkit.domain.proration`), a onetime line covers the whole period and is charged in
  full. Example: 30.00 a month from 10 May 00:00 in a ``[1 May, 1 Jun)`` period: 30.00 x
  1900800 / 2678400 = 21.29. Taxes apply; the subscription's coupons do not (they count their
  uses per period invoice). The invoice's ``idempotency_key`` is ``addon_charge|<association>``.
* :func:`credit_unused`: a ``recurring`` add-on removed with ``create_prorations`` before the end of
  the current period gets the unused part of its FIXED ADVANCE lines back as a PRE_PAID wallet
  credit (:func:`billingkit.domain.proration.prorate_credit`: ``amount x quantity x remaining
  seconds / period seconds``, each line capped at what its invoices of this period charged),
  reason ``SUBSCRIPTION_CREDIT_GRANT``, movement key
  ``proration_credit_addon|<association>|<period start>|<period end>``: a retry finds the credit
  already made and moves nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from billingkit.domain.addon_associations import AddonAssociation
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.money import ZERO, round_money
from billingkit.domain.periods import InvoiceCadence, Period
from billingkit.domain.proration import ProratedItem, prorate_credit
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    WalletTransaction,
    movement_key,
)
from billingkit.errors import AlreadyExists, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
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

__all__ = ["CHARGE_CAUSE", "CREDIT_CAUSE", "AddonCredit", "charge_added_lines", "credit_unused"]

#: The ``cause`` of an add-on's charge invoice key: ``addon_charge|<association id>``.
CHARGE_CAUSE = "addon_charge"
#: The ``cause`` of a removal's wallet credit key.
CREDIT_CAUSE = "proration_credit_addon"


def _advance_fixed(line: SubscriptionLineItem) -> bool:
    return line.price_type is PriceType.FIXED and line.invoice_cadence is InvoiceCadence.ADVANCE


def charge_added_lines(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    lines: Sequence[SubscriptionLineItem],
    *,
    association: AddonAssociation,
) -> tuple[Subscription, Invoice | None]:
    """Invoice now the current period's share of ``lines`` (the new lines of ``association`` that
    this period's invoices did not bill) and return ``sub`` with its billing sequence moved, and
    the invoice (``None`` when nothing is charged: no FIXED ADVANCE line in the period, or a zero
    amount). ``AlreadyExists`` (409) when the subscription already has an update invoice for the
    same window (two charges from the same instant: the unique invoice key allows one)."""
    period = Period(sub.current_period_start, sub.current_period_end)
    charged = tuple(
        line
        for line in lines
        if _advance_fixed(line)
        and (line.start_date is None or line.start_date < period.end)
        and (line.end_date is None or line.end_date > period.start)
    )
    if not charged:
        return sub, None
    check_settled_alone(sub)  # a grouped child's lines are billed on its parent's invoices
    view = sub.model_copy(update={"line_items": charged})
    snapshot = load_snapshot(uow, [view], at=ctx.now)
    snapshot.coupon_associations.pop(sub.id, None)
    (computed,) = compute_invoices(
        uow,
        [Charge(view, BillingReason.SUBSCRIPTION_UPDATE, "period_start", period)],
        snapshot,
        as_of=ctx.now,
    )
    if not computed.draft.lines or computed.draft.subtotal == ZERO:
        return sub, None
    start = max(association.start_date, period.start)
    taken = uow.invoices.find_one(
        subscription_id=sub.id,
        period_start=start,
        period_end=period.end,
        billing_reason=BillingReason.SUBSCRIPTION_UPDATE.value,
    )
    if taken is not None:
        raise AlreadyExists(
            f"subscription {sub.id} already has update invoice {taken.id} for [{start.isoformat()}, "
            f"{period.end.isoformat()}): one invoice per subscription, window and billing reason; "
            "start this add-on at another instant",
            details={"field": "start_date", "invoice_id": taken.id},
        )
    sequence = sub.billing_sequence + 1
    invoice = build_invoice(ctx, computed, snapshot, billing_sequence=sequence).model_copy(
        update={"period_start": start, "idempotency_key": movement_key(CHARGE_CAUSE, association.id)}
    )
    issued = issue_invoice(uow, ctx, invoice, computed=computed, snapshot=snapshot)
    record_applications(uow, ctx, count_applications(computed.draft.coupon_applications))
    return sub.model_copy(update={"billing_sequence": sequence}), issued


@dataclass(frozen=True, slots=True)
class AddonCredit:
    """What a removal credited: ``amount`` in the subscription's currency (0: nothing), per line
    (subscription line item id -> amount), and the wallet credit row (``None`` when nothing)."""

    amount: Decimal
    lines: dict[str, Decimal]
    transaction: WalletTransaction | None


def credit_unused(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    association: AddonAssociation,
    lines: Sequence[SubscriptionLineItem],
    end: datetime,
) -> AddonCredit:
    """Credit the unused part of the current period of ``association``'s FIXED ADVANCE ``lines``
    (as they were before the removal) from ``end`` to the period end to the customer's PRE_PAID
    wallet in the subscription's currency (see the module doc). Nothing when ``end`` is not inside
    the current period."""
    period = Period(sub.current_period_start, sub.current_period_end)
    if not period.start <= end < period.end:
        return AddonCredit(ZERO, {}, None)
    candidates = [
        line
        for line in lines
        if _advance_fixed(line)
        and (line.start_date is None or line.start_date < period.end)
        and (line.end_date is None or line.end_date > end)
    ]
    if not candidates:
        return AddonCredit(ZERO, {}, None)
    check_settled_alone(sub)
    billed = paid_for_lines(uow, sub, period)
    prices = {p.id: p for p in uow.prices.find_many({line.price_id for line in candidates})}
    credits: dict[str, Decimal] = {}
    for line in candidates:
        price = prices.get(line.price_id)
        if price is None:
            raise ValidationError(
                f"price {line.price_id} of line item {line.id} is missing", field="price_id"
            )
        at = max(end, line.start_date or period.start)
        credit = prorate_credit(
            ProratedItem(price.to_spec(), line.quantity, InvoiceCadence.ADVANCE),
            period,
            at,
            amount_billed=billed.get(line.id, ZERO),
        )
        if credit is not None and credit.amount > ZERO:
            credits[line.id] = credit.amount
    total = round_money(sum(credits.values(), ZERO), sub.currency)
    if total <= ZERO:
        return AddonCredit(ZERO, {}, None)
    wallet = wallet_ledger.prepaid_wallet(uow, ctx, customer_id=sub.customer_id, currency=sub.currency)
    movement = wallet_ledger.credit(
        uow,
        ctx,
        wallet,
        credits=total,
        reason=TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
        key=movement_key(CREDIT_CAUSE, association.id, period.start.isoformat(), period.end.isoformat()),
        reference_type=TransactionReferenceType.EXTERNAL,
        reference_id=association.id,
        description=f"Proration credit: add-on {association.addon_id} removed",
        metadata={"subscription_id": sub.id, "addon_association_id": association.id},
    )
    return AddonCredit(total, credits, movement.transactions[0])
