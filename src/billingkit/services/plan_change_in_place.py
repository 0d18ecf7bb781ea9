"""Changing a subscription's plan in place (``POST /subscriptions/{id}/change/v2/preview`` and
``/change/v2/execute``, reference notes §3.4).

The subscription keeps its id, anchor and current period; ``plan_id`` becomes the target plan
and ``version`` grows. At the effective instant (now, or the current period's end for
``change_at: end_of_period``):

* **Lines** (:mod:`billingkit.domain.plan_change_diff`): a plan line whose price is identical in
  billing terms to a target price is carried (same line, re-pointed at the target price); other
  plan lines close (``end_date`` = effective); unmatched target prices open new lines. Add-on
  lines follow ``entity_policies.addons``: ``carry`` (default) leaves the association alone,
  ``drop`` ends it then (as removing the add-on does) and closes its lines. Lines added to the
  subscription itself are kept.
* **Class** (:func:`billingkit.domain.subscription_changes.classify_change`): what the
  subscription's non-add-on lines cost a whole period before and after
  (:func:`billingkit.services.change_settlements.period_amount`).
* **Money** (:mod:`billingkit.services.change_settlements`, with ``create_prorations``): the
  closing recurring ADVANCE fees (dropped add-ons' included) are credited for their unused time,
  the opening ones charged for the rest of the period; a net charge is one ``SUBSCRIPTION_UPDATE``
  invoice, a net credit a PRE_PAID wallet credit, never a negative invoice. ``none`` moves no
  money now: the period's invoices bill each line for the time it covered.
* **Idempotency**: with ``idempotency_key`` the change is recorded under the key with the
  request's fingerprint and the answer; the same key and request again answer the same and write
  nothing; the same key with another request is an ``IdempotencyConflict`` (409). Every executed
  change is recorded (``subscription_changes``, kind ``plan_change_v2``).
* **Preview** computes the same and writes nothing: the invoice with status ``preview``, or the
  wallet credit it would give.
* **end_of_period**: a pending ``plan_change`` schedule at the current period's end, carried out
  by :func:`run_scheduled_change` before that boundary's renewal, with no proration: the renewal
  bills the old lines' ARREAR charges for the closing period and the new plan's ADVANCE ones for
  the next.

Notifications on execute: ``subscription.plan_changed`` and ``subscription.updated``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.addon_associations import AddonAssociation
from billingkit.domain.catalog import Plan
from billingkit.domain.catalog.prices import PriceEntityType
from billingkit.domain.money import ZERO
from billingkit.domain.plan_change_diff import closing_end, diff_plan_lines
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Status, iso
from billingkit.domain.subscription_changes import (
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
)
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    TransactionType,
    WalletStatus,
    WalletType,
)
from billingkit.errors import BillingError, IdempotencyConflict, InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.change_settlements import (
    ChangeQuote,
    change_invoice,
    period_amount,
    quote_change,
    settle_change,
    settlement_key,
)
from billingkit.services.context import Context
from billingkit.services.invoicing import load_snapshot
from billingkit.services.owned_prices import next_sequence
from billingkit.services.plan_change_in_place_results import (
    AddonChange,
    LineAction,
    LineChange,
    PlanChangeResult,
)
from billingkit.services.plan_change_requests import (
    AddonPolicy,
    ChangeAt,
    EntityPolicies,
    PlanChangeRequest,
    addon_changes,
    check_effective,
    check_subscription,
    target_plan,
    target_prices,
)
from billingkit.services.records import get_live, list_where_in
from billingkit.services.subscription_addon_removal import end_addon_grants
from billingkit.services.subscription_lines import record_line_items
from billingkit.services.subscription_schedules import executed_schedule, failed_schedule
from billingkit.services.subscription_setup import check_allowances, line_for_price
from billingkit.services.wallet_transactions import WalletTransactionDetail, details

__all__ = [
    "EXECUTOR",
    "AddonPolicy",
    "ChangeAt",
    "EntityPolicies",
    "PlanChangeRequest",
    "change_plan",
    "preview_plan_change",
    "run_scheduled_change",
]

ENTITY = "subscription"
LABEL = "subscription"
#: The schedule executor name of an end-of-period plan change in place.
EXECUTOR = "plan_change_v2"
#: The key of a recorded change's ``result`` holding its answer as JSON text: a JSON column may
#: reorder keys (PostgreSQL's jsonb does), and a retry must get the first answer byte for byte.
_ANSWER = "answer_json"


@dataclass(frozen=True, slots=True)
class _Change:
    """A plan change worked out, nothing written: ``after`` is the subscription to save (its
    ``version`` still ``before``'s), ``opened`` its new lines, ``dropped`` the add-on
    associations it ends (as stored, as they will be)."""

    before: Subscription
    after: Subscription
    from_plan: Plan
    to_plan: Plan
    change_type: SubscriptionChangeType
    effective: datetime
    line_changes: tuple[LineChange, ...]
    opened: tuple[SubscriptionLineItem, ...]
    dropped: tuple[tuple[AddonAssociation, AddonAssociation], ...]
    addon_changes: tuple[AddonChange, ...]
    quote: ChangeQuote
    warnings: tuple[str, ...]

    def result(self, **fields: Any) -> PlanChangeResult:
        """The answer of this change; ``fields`` override or add to what it holds."""
        base: dict[str, Any] = {
            "subscription": self.after,
            "change_type": self.change_type,
            "from_plan": self.from_plan,
            "to_plan": self.to_plan,
            "effective_at": self.effective,
            "line_changes": self.line_changes,
            "addon_changes": self.addon_changes,
            "warnings": self.warnings,
        }
        return PlanChangeResult(**{**base, **fields})


# -- working the change out ------------------------------------------------------------------------


def _in_force(line: SubscriptionLineItem, at: datetime) -> bool:
    return line.end_date is None or line.end_date > at


def _work_out(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    data: PlanChangeRequest,
    *,
    effective: datetime,
    scheduled: bool = False,
    schedule_id: str | None = None,
) -> _Change:
    """Check ``data`` against stored ``sub`` and work the change out at ``effective`` (see the
    module doc). Reads only."""
    plan = target_plan(uow, sub, data.target_plan_id)
    check_subscription(uow, ctx, sub, data, schedule_id=schedule_id)
    check_effective(sub, effective, scheduled=scheduled)
    targets = target_prices(uow, sub, plan, effective)
    dropped, addons = addon_changes(uow, ctx, sub, data, effective)
    current = {price.id: price for price in uow.prices.find_many({line.price_id for line in sub.line_items})}
    diff = diff_plan_lines(sub.line_items, current, targets, effective)
    meters = {m.id: m for m in (uow.meters.find(p.meter_id) for p, _ in diff.opening if p.meter_id) if m}
    carried = {line.id: price for line, price in diff.carried}
    closing = {line.id for line in diff.closing}
    drop_ends = {before.id: after.end_date for before, after in dropped}
    lines: list[SubscriptionLineItem] = []
    changes: list[LineChange] = []
    ended_before: list[SubscriptionLineItem] = []
    for line in sub.line_items:
        if line.id in carried:
            price = carried[line.id]
            line = line.model_copy(
                update={
                    "price_id": price.id,
                    "entity_id": plan.id,
                    "plan_display_name": plan.name,
                    "display_name": price.display_name or line.meter_display_name or plan.name,
                }
            )
            changes.append(LineChange(LineAction.UPDATED, line))
        elif line.id in closing:
            ended_before.append(line)
            line = line.model_copy(update={"end_date": closing_end(line, effective)})
            changes.append(LineChange(LineAction.ENDED, line))
        elif (end := drop_ends.get(line.addon_association_id or "")) is not None and _in_force(line, end):
            ended_before.append(line)
            line = line.model_copy(update={"end_date": closing_end(line, end)})
            changes.append(LineChange(LineAction.ENDED, line))
        lines.append(line)
    opened = tuple(
        line_for_price(
            ctx,
            price,
            meters.get(price.meter_id or ""),
            subscription_id=sub.id,
            customer_id=sub.customer_id,
            entity_type="plan",
            entity_id=plan.id,
            owner_name=plan.name,
            start=max(effective, price.start_date) if price.start_date else effective,
            end=price.end_date,
        ).model_copy(update={"quantity": quantity})
        for price, quantity in diff.opening
    )
    changes += [LineChange(LineAction.CREATED, line) for line in opened]
    after = sub.model_copy(
        update={
            **ctx.touch(),
            "plan_id": plan.id,
            "line_items": (*lines, *opened),
            "synced_price_sequence": next_sequence(uow, PriceEntityType.PLAN, plan.id) - 1,
        }
    )
    check_allowances(after, load_snapshot(uow, [after], at=effective, credits=False))

    def own(subscription: Subscription) -> list[SubscriptionLineItem]:
        return [
            li
            for li in subscription.line_items
            if li.addon_association_id is None and _in_force(li, effective)
        ]

    change_type = classify_change(
        period_amount(uow, own(sub), sub.currency), period_amount(uow, own(after), sub.currency)
    )
    quote = quote_change(
        uow, ctx, after, ended=ended_before, started=opened, effective=effective, prorate=data.prorate
    )
    return _Change(
        before=sub,
        after=after,
        from_plan=uow.plans.get(sub.plan_id),
        to_plan=plan,
        change_type=change_type,
        effective=effective,
        line_changes=tuple(changes),
        opened=opened,
        dropped=tuple(dropped),
        addon_changes=tuple(addons),
        quote=quote,
        warnings=diff.warnings,
    )


def _settlement_key(sub: Subscription, data: PlanChangeRequest, effective: datetime) -> str:
    """What names the change's invoice or wallet credit: the client's key (hashed: it may hold
    any character), else the subscription, its version and the effective instant."""
    if data.idempotency_key is not None:
        digest = hashlib.sha256(data.idempotency_key.encode()).hexdigest()[:40]
        return f"{EXECUTOR}:key:{digest}"
    return f"{EXECUTOR}:{sub.id}:v{sub.version}:{iso(effective)}"


# -- idempotency -----------------------------------------------------------------------------------


def _earlier(uow: UnitOfWork, sub: Subscription, data: PlanChangeRequest) -> PlanChangeResult | None:
    """The change recorded under ``data.idempotency_key``, answered again; ``IdempotencyConflict``
    when the key was used with another request."""
    key = data.idempotency_key
    if key is None:
        return None
    found = uow.subscription_changes.find_one(idempotency_key=key)
    if found is None:
        return None
    if found.request_fingerprint != data.fingerprint(sub.id):
        raise IdempotencyConflict(
            f"idempotency_key {key!r} was used for another change request ({found.id})",
            details={"field": "idempotency_key", "subscription_change_id": found.id},
        )
    txn = uow.wallet_transactions.find(found.wallet_transaction_id) if found.wallet_transaction_id else None
    assert found.change_type is not None and found.to_plan_id and found.from_plan_id
    return PlanChangeResult(
        subscription=uow.subscriptions.get(found.subscription_id),
        change_type=found.change_type,
        from_plan=uow.plans.get(found.from_plan_id),
        to_plan=uow.plans.get(found.to_plan_id),
        effective_at=found.effective_at,
        invoice=uow.invoices.find(found.invoice_id) if found.invoice_id else None,
        wallet_transaction=details(uow, [txn])[0] if txn is not None else None,
        schedule=uow.subscription_schedules.find(found.schedule_id) if found.schedule_id else None,
        replayed=True,
        answer=json.loads(found.result[_ANSWER]),
    )


def _record(
    uow: UnitOfWork,
    ctx: Context,
    change: _Change,
    result: PlanChangeResult,
    data: PlanChangeRequest | None,
) -> None:
    """One ``subscription_changes`` row for ``result`` (under the request's key, if any)."""
    key = data.idempotency_key if data is not None else None
    txn = result.wallet_transaction
    uow.subscription_changes.add(
        SubscriptionChange(
            id=ctx.ids.new("subs_change"),
            **ctx.stamp(),
            subscription_id=change.before.id,
            change_kind=ChangeKind.PLAN_CHANGE_V2,
            change_type=change.change_type,
            from_plan_id=change.from_plan.id,
            to_plan_id=change.to_plan.id,
            effective_at=result.scheduled_at or change.effective,
            schedule_id=result.schedule.id if result.schedule is not None else None,
            invoice_id=result.invoice.id if result.invoice is not None else None,
            wallet_transaction_id=txn.id if txn is not None else None,
            idempotency_key=key,
            request_fingerprint=data.fingerprint(change.before.id) if key is not None and data else None,
            result={_ANSWER: json.dumps(result.to_dict())},
            metadata=dict(result.metadata),
        )
    )


# -- carrying it out -------------------------------------------------------------------------------


def _carry_out(
    uow: UnitOfWork,
    ctx: Context,
    change: _Change,
    data: PlanChangeRequest,
    *,
    record: PlanChangeRequest | None,
    metadata: dict[str, str],
) -> PlanChangeResult:
    """Write ``change``: settle its money, save the subscription and its new lines, end the
    dropped add-ons, record it (under ``record``'s key), notify."""
    settled = settle_change(
        uow, ctx, change.quote, key=_settlement_key(change.before, data, change.effective)
    )
    to_save = change.after.model_copy(update={"billing_sequence": settled.subscription.billing_sequence})
    saved = uow.subscriptions.update(to_save, expected_version=change.before.version)
    record_line_items(uow, ctx, change.opened)
    for before, after in change.dropped:
        uow.addon_associations.update(after, expected_version=before.version)
        end_addon_grants(uow, ctx, change.before, before, after.end_date or change.effective)
    txn = details(uow, [settled.transaction])[0] if settled.transaction is not None else None
    result = change.result(
        subscription=saved, invoice=settled.invoice, wallet_transaction=txn, metadata=metadata
    )
    _record(uow, ctx, change, result, record)
    customer = uow.customers.find(saved.customer_id)
    notifications.notify(uow, ctx, "subscription.plan_changed", saved, customer)
    notifications.notify(uow, ctx, "subscription.updated", saved, customer)
    return result


def _wallet_preview(
    uow: UnitOfWork, ctx: Context, change: _Change, key: str
) -> WalletTransactionDetail | None:
    """The wallet credit a net credit would give (not stored): into the customer's PRE_PAID
    wallet in the currency (or the one that would be made)."""
    amount = change.quote.settlement.wallet_credit
    if amount <= ZERO:
        return None
    sub = change.before
    wallets = [
        wallet
        for wallet in list_where_in(
            uow.wallets,
            "customer_id",
            [sub.customer_id],
            Filter("currency", Op.EQ, sub.currency),
            Filter("wallet_type", Op.EQ, WalletType.PRE_PAID),
        )
        if wallet.wallet_status is WalletStatus.ACTIVE and wallet.conversion_rate == 1
    ]
    wallet_id = min(wallets, key=lambda w: (w.created_at, w.id)).id if wallets else ctx.ids.new("wallet")
    return WalletTransactionDetail(
        id=ctx.ids.new("wtx"),
        **ctx.stamp(),
        wallet_id=wallet_id,
        customer_id=sub.customer_id,
        type=TransactionType.CREDIT,
        credit_amount=amount,
        amount=amount,
        transaction_reason=TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
        idempotency_key=settlement_key(key),
        reference_type=TransactionReferenceType.EXTERNAL,
        reference_id=sub.id,
        description=f"Net credit of the change of subscription {sub.id} at {change.effective.isoformat()}",
        metadata={"subscription_id": sub.id, "effective_date": change.effective.isoformat()},
        credits_available=amount,
        currency=sub.currency,
        conversion_rate=1,
        topup_conversion_rate=1,
    )


def _effective(sub: Subscription, data: PlanChangeRequest, now: datetime) -> datetime:
    return sub.current_period_end if data.change_at is ChangeAt.END_OF_PERIOD else now


def _scheduled_request(data: PlanChangeRequest) -> PlanChangeRequest:
    """What runs at the boundary: the request with no proration (the renewal bills the rest)."""
    return data.model_copy(update={"proration_behavior": ProrationBehavior.NONE})


def preview_plan_change(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: PlanChangeRequest
) -> PlanChangeResult:
    """What :func:`change_plan` would do with ``data`` now, written nowhere: the subscription as
    it would be, the lines, and the invoice (status ``preview``) or wallet credit. With an
    idempotency key already used for this request: the answer that change gave. Raises as
    :func:`change_plan`. Takes ``subscription:write``, as a modify preview does."""
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    if (earlier := _earlier(uow, sub, data)) is not None:
        return earlier
    effective = _effective(sub, data, ctx.now)
    if data.change_at is ChangeAt.END_OF_PERIOD:
        change = _work_out(uow, ctx, sub, _scheduled_request(data), effective=effective, scheduled=True)
        return change.result(
            subscription=sub,
            preview=True,
            line_changes=(),
            scheduled_at=effective,
            metadata=data.metadata or {},
        )
    change = _work_out(uow, ctx, sub, data, effective=effective)
    key = _settlement_key(sub, data, effective)
    after = change.after.model_copy(update={"version": sub.version + 1})
    return change.result(
        subscription=after,
        preview=True,
        invoice=change_invoice(ctx, change.quote, key=key),
        wallet_transaction=_wallet_preview(uow, ctx, change, key),
        metadata=data.metadata or {},
    )


def change_plan(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: PlanChangeRequest
) -> PlanChangeResult:
    """Move subscription ``subscription_id`` to plan ``data.target_plan_id`` in place (see the
    module doc); ``end_of_period``: schedule it for the current period's end.

    Raises ``NotFound`` for an unknown subscription; ``ValidationError`` naming the field for an
    unknown or unchanged target plan, a target without prices for the subscription's currency
    and period, an override naming another add-on association, ``create_prorations`` over lines
    of another period; ``InvalidOperation`` naming the reason for a subscription that cannot
    change plan (not active or trialing, paused or pause scheduled, not standalone, cancellation
    or plan change pending, phases); ``IdempotencyConflict`` for a key used with another
    request. Nothing is written then.
    """
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    if (earlier := _earlier(uow, sub, data)) is not None:
        return earlier
    effective = _effective(sub, data, ctx.now)
    metadata = dict(data.metadata or {})
    if data.change_at is ChangeAt.IMMEDIATE:
        change = _work_out(uow, ctx, sub, data, effective=effective)
        return _carry_out(uow, ctx, change, data, record=data, metadata=metadata)
    change = _work_out(uow, ctx, sub, _scheduled_request(data), effective=effective, scheduled=True)
    schedule = SubscriptionSchedule(
        id=ctx.ids.new("sched"),
        **ctx.stamp(),
        subscription_id=sub.id,
        schedule_type=ScheduleType.PLAN_CHANGE,
        scheduled_at=effective,
        run_at=effective,
        configuration={
            "executor": EXECUTOR,
            "target_plan_id": change.to_plan.id,
            "request": data.model_dump(mode="json", exclude={"idempotency_key"}),
        },
        metadata=metadata,
    )
    uow.subscription_schedules.add(schedule)
    result = change.result(
        subscription=sub, line_changes=(), schedule=schedule, scheduled_at=effective, metadata=metadata
    )
    if data.idempotency_key is not None:
        _record(uow, ctx, change, result, data)
    return result


def run_scheduled_change(
    uow: UnitOfWork, ctx: Context, schedule: SubscriptionSchedule
) -> SubscriptionSchedule:
    """The executor of an ``end_of_period`` plan change (``schedule_runs.EXECUTORS``): the change
    is made at the schedule's instant without proration; ``failed`` with the reason when it is no
    longer possible (the subscription or the target plan changed meanwhile)."""
    sub = uow.subscriptions.find(schedule.subscription_id)
    try:
        if sub is None or sub.status is not Status.PUBLISHED:
            raise InvalidOperation(f"subscription {schedule.subscription_id} not found")
        data = _scheduled_request(
            PlanChangeRequest.model_validate(schedule.configuration.get("request") or {})
        )
        data = data.model_copy(update={"change_at": ChangeAt.IMMEDIATE})
        change = _work_out(
            uow, ctx, sub, data, effective=schedule.scheduled_at, scheduled=True, schedule_id=schedule.id
        )
    except BillingError as error:
        return failed_schedule(ctx, schedule, error.message)
    result = _carry_out(uow, ctx, change, data, record=None, metadata=dict(schedule.metadata))
    return executed_schedule(
        ctx,
        schedule,
        {
            "subscription_id": result.subscription.id,
            "change_type": result.change_type.value,
            "from_plan_id": result.from_plan.id,
            "to_plan_id": result.to_plan.id,
            "effective_at": iso(result.effective_at),
        },
    )
