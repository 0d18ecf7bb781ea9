"""Subscriptions: create (draft or active), activate a draft, read and search.

Rules (``docs/billing-rules.md`` has worked examples):

* The customer is ``customer_id`` when given (it wins), else the live customer with
  ``external_customer_id``. Plan and customer must be live; unknown ones are a 400 naming the field.
* Line items: one per live plan price with the subscription's currency, billing period and period
  count (FIXED quantity = the price's ``min_quantity``, else 1; USAGE quantity 0, with the meter).
  No such price -> 400 on ``currency``.
* ``trial_period_days``: omitted or null inherits the days common to the plan's recurring FIXED
  prices (a 400 if they disagree), 0 means no trial, more overrides. A trial makes the subscription
  ``trialing`` with ``[start, start + days)`` as its current period; nothing is billed until it ends.
* ``subscription_status: draft`` stores a draft (no invoice, not billed); anything else starts
  billing at ``start_date`` (default now) with an opening invoice for the first period's ADVANCE
  charges.
* ``billing_cycle`` anniversary (default) anchors on ``billing_anchor`` or the start; calendar anchors
  on calendar boundaries (``billing_anchor`` is then refused). Periods are computed in ``timezone``
  (default: the customer's). Activating a draft at a new start keeps a requested ``billing_anchor``
  and moves a derived anchor to the new start.
* ``version`` starts at 1 and grows with every change; ``synced_price_sequence`` is the plan's
  highest price sequence the line items were built from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import Plan, Price
from billingkit.domain.catalog.prices import BillingCadence, PriceEntityType, PriceType
from billingkit.domain.customers import Customer
from billingkit.domain.event_types import subscription_payload
from billingkit.domain.invoices import BillingReason
from billingkit.domain.periods import MAX_PERIOD_COUNT, BillingCycle, BillingPeriod, BillingSchedule, Period
from billingkit.domain.queries import Filter, ListQuery, Op, Page, Sort
from billingkit.domain.renewals import next_run_at
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import (
    CollectionMethod,
    PaymentBehavior,
    PaymentTerms,
    ProrationBehavior,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.domain.validation import (
    CurrencyCode,
    DecimalText,
    InputModel,
    Metadata,
    NonEmptyStr,
    TimeZoneName,
    UtcDatetime,
)
from billingkit.errors import InvalidOperation, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.invoicing import (
    Charge,
    Snapshot,
    build_invoice,
    compute_invoices,
    issue_invoice,
    load_snapshot,
    supported_allowance,
)
from billingkit.services.prices import next_sequence, prices_of
from billingkit.services.records import build, get_live
from billingkit.services.search import NotSupported, Searches, SearchRequest

__all__ = [
    "SubscriptionActivate",
    "SubscriptionCreate",
    "SubscriptionSearch",
    "SubscriptionV2",
    "activate_subscription",
    "create_subscription",
    "customer_subscriptions",
    "get_subscription",
    "get_subscription_v2",
    "open_subscription",
    "search_subscriptions",
    "subscription_payload",
]

ENTITY = "subscription"
LABEL = "subscription"
#: Longest trial accepted, in days (ten years).
MAX_TRIAL_DAYS = 3650
V2_EXPANSIONS = frozenset({"coupon_associations", "credit_grants", "subscription_line_items", "phases"})

# Requests the reference accepts that this version does not carry out yet: refused when given,
# so a subscription is never stored without something its creator asked for.
_NOT_YET = (
    "addons",
    "credit_grants",
    "line_items",
    "override_line_items",
    "override_entitlements",
    "line_item_commitments",
    "phases",
    "subscription_coupons",
    "coupons",
    "line_item_coupons",
    "tax_rate_overrides",
    "inheritance",
    "checkout",
    "auto_invoice_threshold",
)

# Collection method -> the payment behaviours it allows (the reference's pairs).
_BEHAVIOURS = {
    CollectionMethod.CHARGE_AUTOMATICALLY: frozenset(
        {
            PaymentBehavior.ALLOW_INCOMPLETE,
            PaymentBehavior.ERROR_IF_INCOMPLETE,
            PaymentBehavior.DEFAULT_ACTIVE,
        }
    ),
    CollectionMethod.SEND_INVOICE: frozenset(
        {PaymentBehavior.DEFAULT_ACTIVE, PaymentBehavior.DEFAULT_INCOMPLETE}
    ),
}


class SubscriptionCreate(InputModel):
    plan_id: NonEmptyStr
    currency: CurrencyCode
    billing_period: BillingPeriod
    billing_period_count: Annotated[int, Field(ge=1, le=MAX_PERIOD_COUNT)] = 1
    billing_cycle: BillingCycle = BillingCycle.ANNIVERSARY
    billing_anchor: UtcDatetime | None = None
    customer_id: str | None = None
    external_customer_id: str | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    subscription_status: SubscriptionStatus | None = None
    trial_period_days: Annotated[int, Field(ge=0, le=MAX_TRIAL_DAYS)] | None = None
    collection_method: CollectionMethod = CollectionMethod.CHARGE_AUTOMATICALLY
    payment_behavior: PaymentBehavior = PaymentBehavior.DEFAULT_ACTIVE
    payment_terms: PaymentTerms | None = None
    proration_behavior: ProrationBehavior = ProrationBehavior.NONE
    commitment_amount: DecimalText | None = None
    commitment_duration: BillingPeriod | None = None
    overage_factor: DecimalText | None = None
    enable_true_up: bool = False
    gateway_payment_method_id: Annotated[str, Field(max_length=255)] | None = None
    lookup_key: Annotated[NonEmptyStr, Field(max_length=255)] | None = None
    timezone: TimeZoneName | None = None
    metadata: Metadata = {}
    addons: Any = None
    credit_grants: Any = None
    line_items: Any = None
    override_line_items: Any = None
    override_entitlements: Any = None
    line_item_commitments: Any = None
    phases: Any = None
    subscription_coupons: Any = None
    coupons: Any = None
    line_item_coupons: Any = None
    tax_rate_overrides: Any = None
    inheritance: Any = None
    checkout: Any = None
    auto_invoice_threshold: Any = None


class SubscriptionActivate(InputModel):
    """``start_date`` (optional) replaces the draft's start date."""

    start_date: UtcDatetime | None = None


class SubscriptionSearch(SearchRequest):
    kind: ClassVar[str] = "subscriptions"

    subscription_ids: Annotated[list[str] | None, Searches("id", Op.IN)] = None
    customer_id: Annotated[str | None, Searches("customer_id", Op.EQ)] = None
    customer_ids: Annotated[list[str] | None, Searches("customer_id", Op.IN)] = None
    external_customer_id: str | None = None
    plan_id: Annotated[str | None, Searches("plan_id", Op.EQ)] = None
    subscription_status: Annotated[
        list[SubscriptionStatus] | None, Searches("subscription_status", Op.IN)
    ] = None
    billing_period: Annotated[list[BillingPeriod] | None, Searches("billing_period", Op.IN)] = None
    billing_cadence: Annotated[list[BillingCadence] | None, Searches("billing_cadence", Op.IN)] = None
    subscription_type: Annotated[list[SubscriptionType] | None, Searches("subscription_type", Op.IN)] = None
    active_at: Annotated[UtcDatetime | None, NotSupported()] = None
    with_line_items: bool = True


@dataclass(frozen=True, slots=True)
class SubscriptionV2:
    """The v2 read: the subscription, which optional parts were asked for (``expand``), and
    whether the plan has price changes its line items do not have yet."""

    subscription: Subscription
    expand: frozenset[str]
    plan_prices_out_of_sync: bool

    def to_dict(self) -> dict[str, Any]:
        data = self.subscription.to_dict(line_items="subscription_line_items" in self.expand)
        data["plan_prices_out_of_sync"] = self.plan_prices_out_of_sync
        # Billing-only relations this version does not have yet are empty lists when asked for.
        for name in ("coupon_associations", "credit_grants", "phases"):
            if name in self.expand:
                data[name] = []
        return data


def _refuse_unsupported(data: SubscriptionCreate) -> None:
    for name in _NOT_YET:
        if getattr(data, name) not in (None, [], {}):
            raise ValidationError(f"{name} is not supported by this version of billingkit", field=name)


def _customer(uow: UnitOfWork, data: SubscriptionCreate) -> Customer:
    if data.customer_id:
        customer = uow.customers.find(data.customer_id)
        if customer is None or customer.status is not Status.PUBLISHED:
            raise ValidationError(f"customer {data.customer_id} not found", field="customer_id")
        return customer
    if data.external_customer_id:
        found = uow.customers.find_one(external_id=data.external_customer_id)
        if found is None:
            raise ValidationError(
                f"no customer with external id {data.external_customer_id!r}", field="external_customer_id"
            )
        return found
    raise ValidationError("customer_id or external_customer_id is required", field="customer_id")


def _plan(uow: UnitOfWork, plan_id: str) -> Plan:
    plan = uow.plans.find(plan_id)
    if plan is None or plan.status is not Status.PUBLISHED:
        raise ValidationError(f"plan {plan_id} not found", field="plan_id")
    return plan


def _trial_days(requested: int | None, prices: list[Price]) -> int:
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


def _line_items(
    ctx: Context,
    sub_id: str,
    customer: Customer,
    plan: Plan,
    prices: list[Price],
    uow: UnitOfWork,
    start: datetime,
) -> tuple[SubscriptionLineItem, ...]:
    meters = {m.id: m for m in (uow.meters.find(p.meter_id) for p in prices if p.meter_id) if m is not None}
    items = []
    for price in prices:
        meter = meters.get(price.meter_id or "")
        fixed = price.type is PriceType.FIXED
        items.append(
            SubscriptionLineItem(
                id=ctx.ids.new("subs_line"),
                subscription_id=sub_id,
                customer_id=customer.id,
                entity_type="plan",
                entity_id=plan.id,
                plan_display_name=plan.name,
                display_name=price.display_name or (meter.name if meter is not None else plan.name),
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
                start_date=max(start, price.start_date) if price.start_date else start,
                end_date=price.end_date,
            )
        )
    return tuple(items)


def _check_allowances(sub: Subscription, snapshot: Snapshot) -> None:
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


def _periods_from(
    start: datetime,
    end_date: datetime | None,
    schedule: BillingSchedule,
    trial_days: int,
) -> tuple[Period, datetime | None, datetime | None]:
    """(current period, trial start, trial end) of a subscription starting at ``start``."""
    if trial_days:
        trial_end = start + timedelta(days=trial_days)
        if end_date is not None:
            trial_end = min(trial_end, end_date)
        return Period(start, trial_end), start, trial_end
    return schedule.first_period(start, end_date=end_date), None, None


def _matching_prices(
    candidates: Sequence[Price], plan_id: str, data: SubscriptionCreate, start: datetime
) -> list[Price]:
    """The plan prices a subscription in ``data.currency`` every ``data.billing_period_count``
    ``data.billing_period`` starting at ``start`` bills, or a ``ValidationError`` against the field
    that does not match (``currency``, ``billing_period``, ``billing_period_count``, ``start_date``)
    listing what the plan does offer."""
    want = (data.currency, data.billing_period, data.billing_period_count)
    live = [p for p in candidates if p.end_date is None or p.end_date > start]
    prices = [p for p in live if (p.currency, p.billing_period, p.billing_period_count) == want]
    if prices:
        return prices
    offers = sorted({(p.currency, p.billing_period.value, p.billing_period_count) for p in live})
    offered = "; it has " + ", ".join(f"{c} {n} x {b}" for c, b, n in offers) if offers else ""
    asked = f"{data.currency} {data.billing_period_count} x {data.billing_period.value}"
    if not offers:
        field = "start_date" if candidates else "plan_id"
        message = f"plan {plan_id} has no prices in force at {start.isoformat()}"
    elif all(p.currency != data.currency for p in live):
        field, message = "currency", f"plan {plan_id} has no prices in {data.currency}"
    elif all((p.currency, p.billing_period) != want[:2] for p in live):
        field = "billing_period"
        message = f"plan {plan_id} has no {data.billing_period.value} prices in {data.currency}"
    else:
        field, message = "billing_period_count", f"plan {plan_id} has no prices for {asked}"
    raise ValidationError(message + offered, field=field)


def open_subscription(
    uow: UnitOfWork, ctx: Context, sub: Subscription, reason: BillingReason, snapshot: Snapshot | None = None
) -> Subscription:
    """Issue the opening invoice of an active subscription (the current period's ADVANCE charges)
    and return the subscription with its billing sequence advanced; trialing ones bill nothing.
    ``snapshot``: the catalogue ``sub`` is priced with, when the caller has loaded it already."""
    if sub.subscription_status is not SubscriptionStatus.ACTIVE:
        return sub
    charge = Charge(sub, reason, "period_start", Period(sub.current_period_start, sub.current_period_end))
    snapshot = snapshot or load_snapshot(uow, [sub])
    (computed,) = compute_invoices(uow, [charge], snapshot, as_of=ctx.now)
    if not computed.draft.lines:
        return sub
    sequence = sub.billing_sequence + 1
    issue_invoice(uow, ctx, build_invoice(ctx, computed, snapshot, billing_sequence=sequence))
    return sub.model_copy(update={"billing_sequence": sequence})


def create_subscription(
    uow: UnitOfWork, ctx: Context, *, data: SubscriptionCreate, renewal_notice: timedelta | None = None
) -> Subscription:
    """Create a subscription (see the module doc); with status active, its opening invoice too.

    Raises ``ValidationError`` naming the field for bad input; nothing is written then.
    """
    ctx.require(ENTITY, Action.WRITE)
    _refuse_unsupported(data)
    customer = _customer(uow, data)
    plan = _plan(uow, data.plan_id)
    if data.billing_period is BillingPeriod.ONETIME:
        raise ValidationError("a subscription needs a recurring billing_period", field="billing_period")
    requested = data.subscription_status
    if requested not in (
        None,
        SubscriptionStatus.DRAFT,
        SubscriptionStatus.ACTIVE,
        SubscriptionStatus.TRIALING,
    ):
        raise ValidationError(
            "subscription_status may only ask for draft, active or trialing", field="subscription_status"
        )
    if data.payment_behavior not in _BEHAVIOURS[data.collection_method]:
        raise ValidationError(
            f"payment_behavior {data.payment_behavior.value} does not go with collection_method "
            f"{data.collection_method.value}",
            field="payment_behavior",
        )
    if data.commitment_amount is not None or data.overage_factor is not None:
        if data.commitment_amount is None or data.overage_factor is None:
            field = "commitment_amount" if data.commitment_amount is None else "overage_factor"
            raise ValidationError("commitment_amount and overage_factor go together", field=field)
        if data.commitment_amount <= 0:
            raise ValidationError("commitment_amount must be greater than 0", field="commitment_amount")
        if data.overage_factor < 1:
            raise ValidationError("overage_factor must be at least 1", field="overage_factor")
    if data.commitment_duration not in (None, data.billing_period):
        raise ValidationError(
            "commitments over several billing periods are not supported by this version of billingkit",
            field="commitment_duration",
        )
    start = data.start_date or ctx.now
    if data.end_date is not None and data.end_date <= start:
        raise ValidationError("end_date must be after start_date", field="end_date")
    timezone = data.timezone or customer.timezone
    schedule = BillingSchedule.for_start(
        start,
        period=data.billing_period,
        count=data.billing_period_count,
        cycle=data.billing_cycle,
        timezone=timezone,
        billing_anchor=data.billing_anchor,
    )
    prices = _matching_prices(prices_of(uow, PriceEntityType.PLAN, plan.id), plan.id, data, start)
    trial_days = _trial_days(data.trial_period_days, prices)
    if requested is SubscriptionStatus.TRIALING and not trial_days:
        raise ValidationError("a trialing subscription needs trial_period_days", field="subscription_status")
    draft = requested is SubscriptionStatus.DRAFT
    status = (
        SubscriptionStatus.DRAFT
        if draft
        else SubscriptionStatus.TRIALING
        if trial_days
        else SubscriptionStatus.ACTIVE
    )
    period, trial_start, trial_end = _periods_from(start, data.end_date, schedule, trial_days)
    sub_id = ctx.ids.new("subs")
    fields: dict[str, Any] = {
        "id": sub_id,
        **ctx.stamp(),
        **data.model_dump(
            include={
                "lookup_key",
                "plan_id",
                "gateway_payment_method_id",
                "billing_cycle",
                "billing_period",
                "billing_period_count",
                "currency",
                "end_date",
                "collection_method",
                "payment_behavior",
                "payment_terms",
                "proration_behavior",
                "commitment_amount",
                "commitment_duration",
                "overage_factor",
                "enable_true_up",
                "metadata",
            }
        ),
        "customer_id": customer.id,
        "subscription_status": status,
        "billing_anchor": schedule.anchor,
        # Remembered because an anchor equal to the start looks derived: a draft created on 5 May
        # with billing_anchor 5 May and activated on 12 May must still renew on the 5th.
        "billing_anchor_requested": data.billing_cycle is BillingCycle.ANNIVERSARY
        and data.billing_anchor is not None,
        "timezone": timezone,
        "start_date": start,
        "trial_start": trial_start,
        "trial_end": trial_end,
        "current_period_start": period.start,
        "current_period_end": period.end,
        "line_items": _line_items(ctx, sub_id, customer, plan, prices, uow, start),
        "synced_price_sequence": next_sequence(uow, PriceEntityType.PLAN, plan.id) - 1,
        "next_run_at": None if draft else next_run_at(status, period.start, period.end, None, renewal_notice),
    }
    sub = build(Subscription, fields)
    snapshot = load_snapshot(uow, [sub])
    _check_allowances(sub, snapshot)
    sub = open_subscription(uow, ctx, sub, BillingReason.SUBSCRIPTION_CREATE, snapshot)
    uow.subscriptions.add(sub)
    event = "subscription.draft.created" if draft else "subscription.created"
    notifications.notify(uow, ctx, event, sub, customer)
    return sub


def activate_subscription(
    uow: UnitOfWork,
    ctx: Context,
    *,
    subscription_id: str,
    data: SubscriptionActivate,
    renewal_notice: timedelta | None = None,
) -> Subscription:
    """Activate a draft: optionally move its start to ``data.start_date``, recompute its first
    period and trial window, and issue its opening invoice. The anchor is kept when the draft was
    created with ``billing_anchor``, else it moves to the new start. Anything but a draft ->
    ``InvalidOperation`` (400 ``invalid_operation``); a start at or after ``end_date`` ->
    ``ValidationError`` on ``start_date``."""
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    if sub.subscription_status is not SubscriptionStatus.DRAFT:
        raise InvalidOperation(
            f"only draft subscriptions can be activated; {sub.id} is {sub.subscription_status.value}"
        )
    start = data.start_date or sub.start_date
    if sub.end_date is not None and sub.end_date <= start:
        raise ValidationError("start_date must be before the subscription's end_date", field="start_date")
    # A requested anchor stays; a derived one (the old start) follows the new start.
    schedule = BillingSchedule.for_start(
        start,
        period=sub.billing_period,
        count=sub.billing_period_count,
        cycle=sub.billing_cycle,
        timezone=sub.timezone,
        billing_anchor=sub.billing_anchor if sub.billing_anchor_requested else None,
    )
    trial_days = 0
    if sub.trial_start is not None and sub.trial_end is not None:
        trial_days = (sub.trial_end - sub.trial_start) // timedelta(days=1)
    period, trial_start, trial_end = _periods_from(start, sub.end_date, schedule, trial_days)
    status = SubscriptionStatus.TRIALING if trial_days else SubscriptionStatus.ACTIVE
    # Lines that started with the draft move with it; a line whose price starts later keeps that.
    lines = tuple(
        line.model_copy(
            update={
                "start_date": start
                if line.start_date is None or line.start_date == sub.start_date
                else max(start, line.start_date)
            }
        )
        for line in sub.line_items
    )
    activated = sub.model_copy(
        update={
            **ctx.touch(),
            "subscription_status": status,
            "start_date": start,
            "billing_anchor": schedule.anchor,
            "trial_start": trial_start,
            "trial_end": trial_end,
            "current_period_start": period.start,
            "current_period_end": period.end,
            "line_items": lines,
            "next_run_at": next_run_at(status, period.start, period.end, None, renewal_notice),
        }
    )
    activated = open_subscription(uow, ctx, activated, BillingReason.SUBSCRIPTION_CREATE)
    activated = uow.subscriptions.update(activated, expected_version=sub.version)
    customer = uow.customers.find(activated.customer_id)
    notifications.notify(uow, ctx, "subscription.activated", activated, customer)
    return activated


def get_subscription(uow: UnitOfWork, ctx: Context, *, subscription_id: str) -> Subscription:
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.subscriptions, LABEL, subscription_id)


def get_subscription_v2(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, expand: str | None = None
) -> SubscriptionV2:
    """The v2 read. ``expand`` is a comma list of ``coupon_associations``, ``credit_grants``,
    ``subscription_line_items`` and ``phases``; anything else is a 400 on ``expand``."""
    ctx.require(ENTITY, Action.READ)
    wanted = frozenset(part.strip() for part in (expand or "").split(",") if part.strip())
    unknown = wanted - V2_EXPANSIONS
    if unknown:
        raise ValidationError(
            f"expand may name {', '.join(sorted(V2_EXPANSIONS))}; not {', '.join(sorted(unknown))}",
            field="expand",
        )
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    plan_sequence = next_sequence(uow, PriceEntityType.PLAN, sub.plan_id) - 1
    return SubscriptionV2(sub, wanted, sub.synced_price_sequence < plan_sequence)


def search_subscriptions(uow: UnitOfWork, ctx: Context, *, search: SubscriptionSearch) -> Page[Subscription]:
    """A page of subscriptions matching the filters (newest first by default)."""
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
    return uow.subscriptions.list(query)


def customer_subscriptions(uow: UnitOfWork, ctx: Context, *, external_id: str) -> Page[Subscription]:
    """Every live subscription of the customer with ``external_id`` (newest first);
    ``NotFound`` when there is no such customer."""
    ctx.require(ENTITY, Action.READ)
    customer = uow.customers.find_one(external_id=external_id)
    if customer is None:
        raise NotFound(f"customer with external id {external_id!r} not found")
    query = ListQuery(
        filters=(Filter("customer_id", Op.EQ, customer.id),), sort=(Sort("created_at"),), limit=1000
    )
    return uow.subscriptions.list(query)
