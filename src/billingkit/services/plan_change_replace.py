"""Plan change v1, archive and replace (``POST /subscriptions/{id}/change/preview`` and
``/change/execute``, reference notes §3.3): the subscription on its current plan is cancelled and
a new subscription (a new id) starts on the target plan.

* From ``active`` or ``trialing`` ``standalone`` subscriptions only; refused (``InvalidOperation``,
  nothing written) for other states, the plan it is already on, a pending cancellation or plan
  change, a scheduled pause, phases, or a period that ended and is not billed yet.
* ``change_type``: :func:`~billingkit.services.change_settlements.period_amount` of the current
  plan lines against the lines the new subscription gets (price applied to quantity, recurring
  FIXED lines), :func:`~billingkit.domain.subscription_changes.classify_change`.
* ``change_at: immediate`` (one unit of work): the old subscription is cancelled now (reason
  ``subscription_change``; the used part of its period invoiced, unless trialing; no wallet
  credit), then the new one is created (start and anniversary anchor now, no trial, the
  request's billing period, count and cycle; commitment, overage factor, true-up, payment terms,
  collection method, payment behaviour, payment method, lookup key, time zone and metadata
  carried; the subscription's tax associations and whole-subscription coupons carried, a moved
  coupon being no new redemption). ``proration_behavior: create_prorations``: the old
  subscription's unused ADVANCE time (:func:`~billingkit.services.change_settlements.quote_change`)
  is netted against the new subscription's first-period ADVANCE fees in ONE settlement
  (:func:`~billingkit.services.change_settlements.settle_change`): net > 0 -> the new
  subscription's opening invoice, billing reason ``SUBSCRIPTION_UPDATE`` (instead of the usual
  ``SUBSCRIPTION_CREATE`` one); net < 0 -> the excess credit into the customer's PRE_PAID wallet.
  ``none``: no credit, the usual opening invoice.
* ``change_at: end_of_period``: a pending ``plan_change`` schedule at the current period end,
  run by the worker (:func:`run_scheduled_change`, ``schedule_runs.EXECUTORS["plan_change"]``)
  before the billing run of that boundary: the old subscription is set to end there (the billing
  run bills its last period once, ARREAR usage included, and cancels it) and the new one starts
  there with its usual opening invoice; nothing is prorated.
* A preview carries the whole change out in the unit of work and rolls it back: the figures are
  those an execute at the same instant gives, and nothing is written or notified.

Example (30-day June, 30.00 -> 90.00 a month, changed on 16 June): 15.00 unused on the old plan,
the new subscription's opening invoice is 90.00 - 15.00 = 75.00 (``SUBSCRIPTION_UPDATE``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from pydantic import Field, model_validator

from billingkit.domain.access import Action
from billingkit.domain.cancellation import (
    CancelInvoicePolicy,
    CancellationType,
    check_single_period,
    plan_cancellation,
)
from billingkit.domain.catalog import Plan, Price
from billingkit.domain.catalog.prices import BillingCadence, PriceEntityType
from billingkit.domain.money import ZERO
from billingkit.domain.periods import MAX_PERIOD_COUNT, BillingCycle, BillingPeriod, BillingSchedule, Period
from billingkit.domain.resources import iso
from billingkit.domain.subscription_changes import (
    ChangeAt,
    ChangeKind,
    SubscriptionChange,
    SubscriptionChangeType,
    classify_change,
)
from billingkit.domain.subscription_schedules import ScheduleType, SubscriptionSchedule
from billingkit.domain.subscriptions import (
    ProrationBehavior,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
)
from billingkit.domain.validation import InputModel, Metadata, NonEmptyStr
from billingkit.errors import BillingError, InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.change_settlements import period_amount, quote_change
from billingkit.services.context import Context
from billingkit.services.owned_prices import prices_of
from billingkit.services.plan_change_openings import ReplacementOpening, opening_invoice, replacement_request
from billingkit.services.plan_change_replace_results import (
    NewBillingCycle,
    PlanChangePreview,
    PlanChangeResult,
    ProrationFigures,
)
from billingkit.services.plan_change_requests import check_plan_changeable
from billingkit.services.records import get_live, list_where_in
from billingkit.services.subscription_cancel import CancelSubscriptionRequest, cancel_subscription
from billingkit.services.subscription_schedules import executed_schedule, failed_schedule
from billingkit.services.subscription_setup import find_customer, find_plan, matching_prices, plan_line_items
from billingkit.services.subscriptions import SubscriptionCreate, create_subscription

__all__ = [
    "CANCELLATION_REASON",
    "EXECUTOR",
    "ChangeAt",
    "PlanChangeRequest",
    "change_plan",
    "preview_plan_change",
    "run_scheduled_change",
]

ENTITY = "subscription"
LABEL = "subscription"
#: The cancellation reason of the subscription a plan change replaces.
CANCELLATION_REASON = "subscription_change"
#: The schedule executor name of an end-of-period plan change (``schedule_runs.EXECUTORS``).
EXECUTOR = "plan_change"


class PlanChangeRequest(InputModel):
    """The reference's ``SubscriptionChangeRequest``. The spec requires ``target_plan_id``,
    ``billing_cadence`` (``RECURRING``), ``billing_cycle`` and ``billing_period``;
    ``proration_behavior`` defaults to ``create_prorations`` (the spec's default),
    ``billing_period_count`` to 1 (as on create; the official SDK may omit it), ``change_at`` to
    ``immediate``. ``metadata`` is merged over the carried subscription metadata."""

    target_plan_id: NonEmptyStr
    billing_cadence: BillingCadence
    billing_cycle: BillingCycle
    billing_period: BillingPeriod
    billing_period_count: Annotated[int, Field(ge=1, le=MAX_PERIOD_COUNT)] = 1
    proration_behavior: ProrationBehavior = ProrationBehavior.CREATE_PRORATIONS
    change_at: ChangeAt = ChangeAt.IMMEDIATE
    metadata: Metadata = {}

    @model_validator(mode="after")
    def _recurring(self) -> Self:
        if self.billing_cadence is not BillingCadence.RECURRING:
            raise ValidationError("a subscription's billing_cadence is RECURRING", field="billing_cadence")
        if self.billing_period is BillingPeriod.ONETIME:
            raise ValidationError("a subscription needs a recurring billing_period", field="billing_period")
        return self

    @property
    def prorate(self) -> bool:
        return self.proration_behavior is ProrationBehavior.CREATE_PRORATIONS


# -- checks (no writes) ---------------------------------------------------------------------------


class _Target:
    """What a change of ``sub`` to ``plan`` at ``effective`` leads to, checked."""

    def __init__(self, plan: Plan, change_type: SubscriptionChangeType, effective: datetime) -> None:
        self.plan, self.change_type, self.effective = plan, change_type, effective


def _plan_lines(sub: Subscription, at: datetime) -> list[SubscriptionLineItem]:
    """The current plan lines of ``sub`` in force at ``at`` (add-on lines left out)."""
    return [
        line
        for line in sub.line_items
        if line.addon_association_id is None
        and (line.start_date is None or line.start_date <= at)
        and (line.end_date is None or line.end_date > at)
    ]


def _refuse(
    uow: UnitOfWork, ctx: Context, sub: Subscription, *, scheduled: SubscriptionSchedule | None
) -> None:
    """``InvalidOperation`` when ``sub`` cannot change plan now (see the module doc).
    ``scheduled``: the end-of-period schedule being carried out (it is pending itself)."""
    check_plan_changeable(uow, ctx, sub, schedule_id=scheduled.id if scheduled is not None else None)
    if scheduled is None and sub.current_period_end <= ctx.now:
        raise InvalidOperation(
            f"the period of subscription {sub.id} ended at {iso(sub.current_period_end)} and is not "
            "billed yet: run the due work (billing.run_due()) first"
        )


def _target_plan(uow: UnitOfWork, plan_id: str) -> Plan:
    try:
        return find_plan(uow, plan_id)
    except ValidationError as error:
        raise ValidationError(error.message, field="target_plan_id") from error


def _target_prices(
    uow: UnitOfWork, sub: Subscription, plan: Plan, data: PlanChangeRequest, at: datetime
) -> list[Price]:
    """The target plan's prices the new subscription bills; a ``ValidationError`` on the request
    field that finds none (``billing_period``, ``billing_period_count``, else ``target_plan_id``:
    no price in the subscription's currency)."""
    try:
        return matching_prices(
            prices_of(uow, PriceEntityType.PLAN, plan.id),
            plan.id,
            currency=sub.currency,
            billing_period=data.billing_period,
            billing_period_count=data.billing_period_count,
            start=at,
        )
    except ValidationError as error:
        field = error.field if error.field in ("billing_period", "billing_period_count") else "target_plan_id"
        raise ValidationError(error.message, field=field) from error


def _check(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    data: PlanChangeRequest,
    *,
    effective: datetime,
    scheduled: SubscriptionSchedule | None = None,
) -> _Target:
    """Everything checked before the first write; the target plan and the classification."""
    _refuse(uow, ctx, sub, scheduled=scheduled)
    plan = _target_plan(uow, data.target_plan_id)
    if plan.id == sub.plan_id:
        raise InvalidOperation(f"subscription {sub.id} is already on plan {plan.id}")
    prices = _target_prices(uow, sub, plan, data, effective)
    if data.prorate and scheduled is None and data.change_at is ChangeAt.IMMEDIATE:
        check_single_period(sub)
    customer = find_customer(uow, customer_id=sub.customer_id, external_customer_id=None)
    lines = plan_line_items(
        uow, ctx, sub_id=sub.id, customer=customer, plan=plan, prices=prices, start=effective
    )
    current = period_amount(uow, _plan_lines(sub, effective), sub.currency)
    return _Target(plan, classify_change(current, period_amount(uow, lines, sub.currency)), effective)


# -- carrying a change out ------------------------------------------------------------------------


def _replacement(
    sub: Subscription, data: PlanChangeRequest, *, start: datetime, preview: bool
) -> SubscriptionCreate:
    return replacement_request(
        sub,
        plan_id=data.target_plan_id,
        billing_period=data.billing_period,
        billing_period_count=data.billing_period_count,
        billing_cycle=data.billing_cycle,
        metadata=data.metadata,
        start=start,
        preview=preview,
    )


def _record(
    uow: UnitOfWork,
    ctx: Context,
    result: PlanChangeResult,
    target: _Target,
    *,
    schedule_id: str | None = None,
) -> None:
    """The ``subscription_changes`` row of a carried out change, and its notifications."""
    old, new = result.old_subscription, result.new_subscription
    assert new is not None
    uow.subscription_changes.add(
        SubscriptionChange(
            id=ctx.ids.new("subs_change"),
            **ctx.stamp(),
            subscription_id=old.id,
            change_kind=ChangeKind.PLAN_CHANGE,
            change_type=target.change_type,
            from_plan_id=old.plan_id,
            to_plan_id=new.plan_id,
            new_subscription_id=new.id,
            effective_at=result.effective_date,
            schedule_id=schedule_id,
            invoice_id=None if result.invoice is None else result.invoice.id,
            wallet_transaction_id=None if result.transaction is None else result.transaction.id,
            result={key: value for key, value in result.to_dict().items() if key != "invoice"},
            metadata=result.metadata or {},
        )
    )
    customer = uow.customers.find(new.customer_id)
    notifications.notify(uow, ctx, "subscription.plan_changed", new, customer)
    notifications.notify(uow, ctx, "subscription.updated", new, customer)


def _replace(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    data: PlanChangeRequest,
    target: _Target,
    *,
    preview: bool,
) -> tuple[PlanChangeResult, ReplacementOpening]:
    """Cancel ``sub`` now and open its replacement (see the module doc). Writes in ``uow``."""
    now = target.effective
    credits = quote_change(
        uow, ctx, sub, ended=sub.line_items, started=(), effective=now, prorate=data.prorate
    ).credits
    cancelled = cancel_subscription(
        uow,
        ctx,
        subscription_id=sub.id,
        data=CancelSubscriptionRequest(
            cancellation_type=CancellationType.IMMEDIATE,
            proration_behavior=ProrationBehavior.NONE,
            cancel_immediately_invoice_policy=CancelInvoicePolicy.GENERATE_INVOICE,
            reason=CANCELLATION_REASON,
        ),
    ).subscription
    opening = ReplacementOpening(sub, credits, prorate=data.prorate, key=f"{sub.id}:{EXECUTOR}:{iso(now)}")
    new = create_subscription(
        uow,
        ctx,
        data=_replacement(sub, data, start=now, preview=preview),
        renewal_notice=ctx.settings.renewal_notice,
        open_with=opening,
    )
    result = PlanChangeResult(
        old_subscription=cancelled,
        change_type=target.change_type,
        effective_date=now,
        proration=ProrationFigures.of(
            sub, now, credit=sum((c.amount for c in credits), ZERO), charge=opening.charge_total
        ),
        new_subscription=new,
        invoice=opening_invoice(uow, opening, new),
        transaction=None if opening.settled is None else opening.settled.transaction,
        metadata=dict(data.metadata),
    )
    _record(uow, ctx, result, target)
    return result, opening


def _schedule(
    uow: UnitOfWork, ctx: Context, sub: Subscription, data: PlanChangeRequest, target: _Target
) -> PlanChangeResult:
    """A pending ``plan_change`` schedule at the current period end (run by the worker)."""
    schedule = SubscriptionSchedule(
        id=ctx.ids.new("sched"),
        **ctx.stamp(),
        subscription_id=sub.id,
        schedule_type=ScheduleType.PLAN_CHANGE,
        scheduled_at=target.effective,
        run_at=target.effective,
        configuration={
            **data.model_dump(mode="json"),
            "executor": EXECUTOR,
            "from_plan_id": sub.plan_id,
            "change_type": target.change_type.value,
        },
        metadata=dict(data.metadata),
    )
    uow.subscription_schedules.add(schedule)
    return PlanChangeResult(
        old_subscription=sub,
        change_type=target.change_type,
        effective_date=target.effective,
        proration=ProrationFigures.of(sub, target.effective),
        schedule=schedule,
        metadata=dict(data.metadata),
    )


def _effective(sub: Subscription, data: PlanChangeRequest, now: datetime) -> datetime:
    return sub.current_period_end if data.change_at is ChangeAt.END_OF_PERIOD else now


def change_plan(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: PlanChangeRequest
) -> PlanChangeResult:
    """Move subscription ``subscription_id`` to ``data.target_plan_id`` (see the module doc): now,
    or at the end of the current period (a pending schedule).

    Raises ``NotFound`` for an unknown subscription; ``ValidationError`` naming the request field
    (``target_plan_id``: unknown plan or no price in the subscription's currency;
    ``billing_period``/``billing_period_count``: no such prices; ``proration_behavior``: line items
    on another billing period); ``InvalidOperation`` for a subscription that cannot change plan.
    Nothing is written then."""
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    target = _check(uow, ctx, sub, data, effective=_effective(sub, data, ctx.now))
    if data.change_at is ChangeAt.END_OF_PERIOD:
        return _schedule(uow, ctx, sub, data, target)
    result, _ = _replace(uow, ctx, sub, data, target, preview=False)
    return result


def _warnings(sub: Subscription, data: PlanChangeRequest, uow: UnitOfWork) -> list[str]:
    warnings = []
    if sub.subscription_status is SubscriptionStatus.TRIALING:
        warnings.append("the trial ends: the new subscription starts without one and is billed now")
    if any(line.addon_association_id is not None for line in _plan_lines(sub, sub.current_period_start)):
        warnings.append("add-ons end with the current subscription; attach them to the new one again")
    if any(
        item.subscription_line_item_id is not None
        for item in list_where_in(uow.coupon_associations, "subscription_id", [sub.id])
    ):
        warnings.append("coupons on the current plan's line items are not carried to the new plan")
    if (
        data.proration_behavior is ProrationBehavior.NONE
        and sub.subscription_status is SubscriptionStatus.ACTIVE
    ):
        warnings.append("proration_behavior none: the unused time of the current period is not credited")
    return warnings


def preview_plan_change(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: PlanChangeRequest
) -> PlanChangePreview:
    """What :func:`change_plan` with ``data`` would do now, written nowhere: the change is carried
    out in the unit of work and rolled back (no notification either). Raises what
    :func:`change_plan` raises. Needs the right to make the change."""
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    target = _check(uow, ctx, sub, data, effective=_effective(sub, data, ctx.now))
    current = uow.plans.find(sub.plan_id)
    warnings = _warnings(sub, data, uow)
    if data.change_at is ChangeAt.END_OF_PERIOD:
        schedule = BillingSchedule.for_start(
            target.effective,
            period=data.billing_period,
            count=data.billing_period_count,
            cycle=data.billing_cycle,
            timezone=sub.timezone,
        )
        preview = PlanChangePreview(
            subscription_id=sub.id,
            current_plan=current,
            target_plan=target.plan,
            change_type=target.change_type,
            proration=ProrationFigures.of(sub, target.effective),
            effective_date=target.effective,
            new_cycle=NewBillingCycle(
                schedule.first_period(target.effective),
                schedule.anchor,
                data.billing_period,
                data.billing_period_count,
            ),
            warnings=(*warnings, "the new subscription's opening invoice is computed at the period end"),
            metadata=dict(data.metadata),
        )
        return preview
    result, opening = _replace(uow, ctx, sub, data, target, preview=True)
    new = result.new_subscription
    assert new is not None
    invoice = result.invoice
    preview = PlanChangePreview(
        subscription_id=sub.id,
        current_plan=current,
        target_plan=target.plan,
        change_type=target.change_type,
        proration=result.proration,
        effective_date=result.effective_date,
        new_cycle=NewBillingCycle(
            Period(new.current_period_start, new.current_period_end),
            new.billing_anchor,
            new.billing_period,
            new.billing_period_count,
        ),
        invoice=None if invoice is None else invoice.model_copy(update={"invoice_number": None}),
        wallet_credit=ZERO if opening.quote is None else opening.quote.settlement.wallet_credit,
        warnings=tuple(warnings),
        metadata=dict(data.metadata),
    )
    uow.rollback()
    ctx.recorded.clear()
    return preview


# -- the end-of-period executor -------------------------------------------------------------------


def run_scheduled_change(
    uow: UnitOfWork, ctx: Context, schedule: SubscriptionSchedule
) -> SubscriptionSchedule:
    """Carry out an end-of-period plan change (``schedule_runs.EXECUTORS["plan_change"]``) at its
    boundary: the old subscription ends there (the billing run that follows bills its last period
    and cancels it), the new one starts there with its usual opening invoice; nothing prorated.
    Returns ``schedule`` executed, or failed when the change can no longer be made (checked
    before any write)."""
    boundary = schedule.scheduled_at
    try:
        data = PlanChangeRequest.model_validate(
            {k: v for k, v in schedule.configuration.items() if k in PlanChangeRequest.model_fields}
        )
        sub = get_live(uow.subscriptions, LABEL, schedule.subscription_id)
        if sub.current_period_end != boundary:
            raise InvalidOperation(
                f"subscription {sub.id}'s period no longer ends at {iso(boundary)} "
                f"(it ends at {iso(sub.current_period_end)})"
            )
        target = _check(uow, ctx, sub, data, effective=boundary, scheduled=schedule)
        ending = plan_cancellation(
            sub,
            cancellation_type=CancellationType.END_OF_PERIOD,
            cancel_at=None,
            reason=CANCELLATION_REASON,
            now=ctx.now,
            renewal_notice=ctx.settings.renewal_notice,
        )
    except BillingError as error:
        return failed_schedule(ctx, schedule, str(error))
    old = uow.subscriptions.update(
        sub.model_copy(update={**ending.changes, **ctx.touch()}), expected_version=sub.version
    )
    notifications.notify(uow, ctx, "subscription.updated", old, uow.customers.find(old.customer_id))
    opening = ReplacementOpening(sub, (), prorate=False, key=f"{sub.id}:{EXECUTOR}:{iso(boundary)}")
    new = create_subscription(
        uow,
        ctx,
        data=_replacement(sub, data, start=boundary, preview=False),
        renewal_notice=ctx.settings.renewal_notice,
        open_with=opening,
    )
    result = PlanChangeResult(
        old_subscription=old,
        change_type=target.change_type,
        effective_date=boundary,
        proration=ProrationFigures.of(sub, boundary),
        new_subscription=new,
        invoice=opening_invoice(uow, opening, new),
        metadata=dict(data.metadata),
    )
    _record(uow, ctx, result, target, schedule_id=schedule.id)
    return executed_schedule(
        ctx,
        schedule,
        {
            "old_subscription_id": sub.id,
            "new_subscription_id": new.id,
            "change_type": target.change_type.value,
            "invoice_id": None if result.invoice is None else result.invoice.id,
        },
    )
