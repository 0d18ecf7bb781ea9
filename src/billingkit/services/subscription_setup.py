"""What a new subscription is built from: its customer and plan, the plan prices it bills, the
trial it inherits, its line items, and its opening invoice.

Each reads the store (the catalogue, the customer) and so lives in services; the pure rules of
where a subscription stands live in :mod:`billingkit.domain.subscription_lifecycle`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from billingkit.domain.catalog import Meter, Plan, Price
from billingkit.domain.catalog.prices import BillingCadence, PriceType
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import BillingReason
from billingkit.domain.periods import BillingPeriod, Period
from billingkit.domain.resources import Status
from billingkit.domain.subscription_inheritance import is_child
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionStatus
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.coupon_associations import count_applications, record_applications
from billingkit.services.invoicing import (
    Charge,
    Snapshot,
    build_invoice,
    compute_invoices,
    issue_invoice,
    load_snapshot,
    supported_allowance,
)

__all__ = [
    "check_allowances",
    "find_customer",
    "find_plan",
    "inherited_trial_days",
    "line_for_price",
    "matching_prices",
    "open_subscription",
    "plan_line_items",
]


def find_customer(uow: UnitOfWork, *, customer_id: str | None, external_customer_id: str | None) -> Customer:
    """The live customer ``customer_id`` when given (it wins), else the one with
    ``external_customer_id``; a ``ValidationError`` naming the field that finds none."""
    if customer_id:
        customer = uow.customers.find(customer_id)
        if customer is None or customer.status is not Status.PUBLISHED:
            raise ValidationError(f"customer {customer_id} not found", field="customer_id")
        return customer
    if external_customer_id:
        found = uow.customers.find_one(external_id=external_customer_id)
        if found is None:
            raise ValidationError(
                f"no customer with external id {external_customer_id!r}", field="external_customer_id"
            )
        return found
    raise ValidationError("customer_id or external_customer_id is required", field="customer_id")


def find_plan(uow: UnitOfWork, plan_id: str) -> Plan:
    """The live plan ``plan_id``; a ``ValidationError`` on ``plan_id`` when there is none."""
    plan = uow.plans.find(plan_id)
    if plan is None or plan.status is not Status.PUBLISHED:
        raise ValidationError(f"plan {plan_id} not found", field="plan_id")
    return plan


def inherited_trial_days(requested: int | None, prices: list[Price]) -> int:
    """Requested days, else the days common to the recurring FIXED prices (0 when none has any)."""
    if requested is not None:
        return requested
    days = {
        p.trial_period_days
        for p in prices
        if p.type is PriceType.FIXED and p.billing_cadence is BillingCadence.RECURRING
    }
    if len(days) > 1:
        raise ValidationError(
            f"the plan's fixed prices have different trial periods ({sorted(days)} days); "
            "give trial_period_days",
            field="trial_period_days",
        )
    return days.pop() if days else 0


def line_for_price(
    ctx: Context,
    price: Price,
    meter: Meter | None,
    *,
    subscription_id: str,
    customer_id: str,
    entity_type: str,
    entity_id: str,
    owner_name: str,
    start: datetime | None,
    end: datetime | None,
    addon_association_id: str | None = None,
) -> SubscriptionLineItem:
    """A new line billing ``price`` of a plan or an add-on (``owner_name``): FIXED at the price's
    ``min_quantity``, else 1; USAGE at 0 with its meter."""
    fixed = price.type is PriceType.FIXED
    return SubscriptionLineItem(
        id=ctx.ids.new("subs_line"),
        subscription_id=subscription_id,
        customer_id=customer_id,
        entity_type=entity_type,
        entity_id=entity_id,
        plan_display_name=owner_name,
        display_name=price.display_name or (meter.name if meter is not None else owner_name),
        price_id=price.id,
        price_type=price.type,
        price_unit=price.price_unit,
        price_unit_id=price.price_unit_id,
        meter_id=price.meter_id,
        meter_display_name=meter.name if meter is not None else None,
        quantity=(price.min_quantity or Decimal(1)) if fixed else Decimal(0),
        currency=price.currency,
        billing_period=price.billing_period,
        billing_period_count=price.billing_period_count,
        invoice_cadence=price.invoice_cadence,
        start_date=start,
        end_date=end,
        addon_association_id=addon_association_id,
    )


def plan_line_items(
    uow: UnitOfWork,
    ctx: Context,
    *,
    sub_id: str,
    customer: Customer,
    plan: Plan,
    prices: Sequence[Price],
    start: datetime,
    meters: Mapping[str, Meter] | None = None,
) -> tuple[SubscriptionLineItem, ...]:
    """One line per plan price (:func:`line_for_price`), starting with the subscription or when
    the price starts, whichever is later. ``meters`` (by id) saves reading the prices' meters
    when the caller has them (a batch of subscriptions)."""
    if meters is None:
        meters = {
            m.id: m for m in (uow.meters.find(p.meter_id) for p in prices if p.meter_id) if m is not None
        }
    return tuple(
        line_for_price(
            ctx,
            price,
            meters.get(price.meter_id or ""),
            subscription_id=sub_id,
            customer_id=customer.id,
            entity_type="plan",
            entity_id=plan.id,
            owner_name=plan.name,
            start=max(start, price.start_date) if price.start_date else start,
            end=price.end_date,
        )
        for price in prices
    )


def check_allowances(sub: Subscription, snapshot: Snapshot) -> None:
    """Refuse a plan whose metered entitlements reset on another cycle than the subscription's:
    billing them needs per-window usage, which this version does not compute."""
    for entitlement in snapshot.allowances.get(sub.plan_id, {}).values():
        if not supported_allowance(entitlement, sub):
            period = entitlement.usage_reset_period.value if entitlement.usage_reset_period else "none"
            raise ValidationError(
                f"entitlement {entitlement.id} resets {period}, which differs from the subscription's "
                f"{sub.billing_period_count} x {sub.billing_period.value} period; such allowances are "
                "not supported by this version of billingkit",
                field="billing_period",
            )


def matching_prices(
    candidates: Sequence[Price],
    plan_id: str,
    *,
    currency: str,
    billing_period: BillingPeriod,
    billing_period_count: int,
    start: datetime,
) -> list[Price]:
    """The plan prices a subscription in ``currency`` every ``billing_period_count``
    ``billing_period`` starting at ``start`` bills, or a ``ValidationError`` against the field
    that does not match (``currency``, ``billing_period``, ``billing_period_count``, ``start_date``)
    listing what the plan does offer."""
    want = (currency, billing_period, billing_period_count)
    live = [p for p in candidates if p.end_date is None or p.end_date > start]
    prices = [p for p in live if (p.currency, p.billing_period, p.billing_period_count) == want]
    if prices:
        return prices
    offers = sorted({(p.currency, p.billing_period.value, p.billing_period_count) for p in live})
    offered = "; it has " + ", ".join(f"{c} {n} x {b}" for c, b, n in offers) if offers else ""
    asked = f"{currency} {billing_period_count} x {billing_period.value}"
    if not offers:
        field = "start_date" if candidates else "plan_id"
        message = f"plan {plan_id} has no prices in force at {start.isoformat()}"
    elif all(p.currency != currency for p in live):
        field, message = "currency", f"plan {plan_id} has no prices in {currency}"
    elif all((p.currency, p.billing_period) != want[:2] for p in live):
        field = "billing_period"
        message = f"plan {plan_id} has no {billing_period.value} prices in {currency}"
    else:
        field, message = "billing_period_count", f"plan {plan_id} has no prices for {asked}"
    raise ValidationError(message + offered, field=field)


def open_subscription(
    uow: UnitOfWork, ctx: Context, sub: Subscription, reason: BillingReason, snapshot: Snapshot | None = None
) -> Subscription:
    """Issue the opening invoice of an active subscription (the current period's ADVANCE charges)
    and return the subscription with its billing sequence advanced; trialing ones bill nothing,
    nor do ``grouped_invoicing`` children (their parent's invoices bill them).
    ``snapshot``: the catalogue ``sub`` is priced with, when the caller has loaded it already."""
    if sub.subscription_status is not SubscriptionStatus.ACTIVE or is_child(sub):
        return sub
    charge = Charge(sub, reason, "period_start", Period(sub.current_period_start, sub.current_period_end))
    snapshot = snapshot or load_snapshot(uow, [sub], at=ctx.now)
    (computed,) = compute_invoices(uow, [charge], snapshot, as_of=ctx.now)
    if not computed.draft.lines:
        return sub
    sequence = sub.billing_sequence + 1
    invoice = build_invoice(ctx, computed, snapshot, billing_sequence=sequence)
    issue_invoice(uow, ctx, invoice, computed=computed, snapshot=snapshot)
    record_applications(uow, ctx, count_applications(computed.draft.coupon_applications))
    return sub.model_copy(update={"billing_sequence": sequence})
