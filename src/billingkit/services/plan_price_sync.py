"""Plan price sync (``POST /plans/{id}/sync/subscriptions``): every live subscription of a plan
brought up to the plan's current prices, batch by batch.

The rule for one subscription is :func:`billingkit.domain.plan_price_sync.sync_line_items`. The
sync is synchronous: :func:`start_sync` checks the plan and fixes the target (the plan's highest
price sequence now); :func:`sync_batch`, one unit of work each, takes the next ``limit``
subscriptions of the plan (not cancelled, synced below the target, in id order after the last
batch's), reconciles their line items, records the new ones (``record_line_items``), saves each at
the version it was read at, and records ``subscription.updated`` for each subscription whose line
items changed. ``synced_price_sequence`` becomes the plan's highest sequence as that batch read it,
so ``plan_prices_out_of_sync`` turns false. The facade (``scoped.plans.sync_subscriptions``) runs the
batches; a batch that meets a concurrent change (``VersionConflict``) is read and done again.

A batch reads a constant number of statements whatever its size: the subscriptions (one page),
the plan's prices, the prices its lines name, the customers and the meters of the new lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.catalog import Plan, Price, PriceEntityType
from billingkit.domain.customers import Customer
from billingkit.domain.plan_price_sync import PhaseWindow, lineage, sync_line_items
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import (
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.errors import NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.owned_prices import all_prices, owner_filters
from billingkit.services.records import list_where_in
from billingkit.services.subscription_lines import record_line_items
from billingkit.services.subscription_setup import plan_line_items

__all__ = ["PlanPriceSync", "SyncBatch", "start_sync", "sync_batch"]

#: How many subscription-owned prices may lie between a line's price and the plan price it was
#: made from (a phase's override of the subscription's override of a plan price: 2).
_OVERRIDE_DEPTH = 4


@dataclass(frozen=True, slots=True)
class SyncBatch:
    """What one batch did: subscriptions read (``checked``) and changed (``updated``: their line
    items changed), lines opened and ended, and the id of the last subscription read (``None``:
    the batch found none)."""

    checked: int = 0
    updated: int = 0
    line_items_added: int = 0
    line_items_ended: int = 0
    last_id: str | None = None


@dataclass(frozen=True, slots=True)
class PlanPriceSync:
    """A plan price sync: its ``run_id``, the plan, the target ``price_sequence`` (the plan's
    highest when the sync started; every subscription read ends at least there), and the totals of
    its batches. ``done`` once a batch found fewer subscriptions than it asked for."""

    run_id: str
    plan_id: str
    price_sequence: int
    started_at: datetime
    subscriptions_checked: int = 0
    subscriptions_updated: int = 0
    line_items_added: int = 0
    line_items_ended: int = 0
    last_id: str | None = None
    done: bool = False

    @property
    def workflow_id(self) -> str:
        """The reference answers a workflow id; ours names the plan's sync (one per plan)."""
        return f"plan_price_sync_{self.plan_id}"

    def with_batch(self, batch: SyncBatch, *, limit: int) -> PlanPriceSync:
        """This sync after ``batch`` (asked for ``limit`` subscriptions)."""
        return replace(
            self,
            subscriptions_checked=self.subscriptions_checked + batch.checked,
            subscriptions_updated=self.subscriptions_updated + batch.updated,
            line_items_added=self.line_items_added + batch.line_items_added,
            line_items_ended=self.line_items_ended + batch.line_items_ended,
            last_id=batch.last_id or self.last_id,
            done=batch.checked < limit,
        )

    @property
    def message(self) -> str:
        return (
            f"plan {self.plan_id}: {self.subscriptions_updated} of {self.subscriptions_checked} "
            f"subscriptions updated ({self.line_items_added} line items added, "
            f"{self.line_items_ended} ended); all synced to price sequence {self.price_sequence} or later"
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: the reference's ``{workflow_id, run_id, message}`` and the counts."""
        return {
            "workflow_id": self.workflow_id,
            "run_id": self.run_id,
            "message": self.message,
            "plan_id": self.plan_id,
            "price_sequence": self.price_sequence,
            "subscriptions_checked": self.subscriptions_checked,
            "subscriptions_updated": self.subscriptions_updated,
            "line_items_added": self.line_items_added,
            "line_items_ended": self.line_items_ended,
        }

    def __repr__(self) -> str:
        return (
            f"<PlanPriceSync {self.run_id} {self.plan_id} seq {self.price_sequence}: "
            f"{self.subscriptions_updated}/{self.subscriptions_checked} updated>"
        )


def _require(ctx: Context) -> None:
    ctx.require("plan", Action.WRITE)
    ctx.require("subscription", Action.WRITE)


def _plan(uow: UnitOfWork, plan_id: str) -> Plan:
    plan = uow.plans.find(plan_id)
    if plan is None or plan.status is not Status.PUBLISHED:
        raise NotFound(f"plan {plan_id} not found")
    return plan


def _plan_prices(uow: UnitOfWork, plan_id: str) -> list[Price]:
    """Every price the plan ever had (any status), oldest first."""
    return all_prices(uow, owner_filters(PriceEntityType.PLAN, plan_id), status=None)


def start_sync(uow: UnitOfWork, ctx: Context, *, plan_id: str) -> PlanPriceSync:
    """A new sync of the live plan ``plan_id`` (nothing written). Raises ``NotFound`` (404)."""
    _require(ctx)
    _plan(uow, plan_id)
    prices = _plan_prices(uow, plan_id)
    return PlanPriceSync(
        run_id=ctx.ids.new("sync"),
        plan_id=plan_id,
        price_sequence=max((p.sequence for p in prices), default=0),
        started_at=ctx.now,
    )


def _overridden(
    uow: UnitOfWork, subs: Sequence[Subscription], plan_prices: dict[str, Price]
) -> dict[str, dict[str | None, set[str]]]:
    """Per subscription, the lineages of the plan prices it overrides, by phase id (``None``: its
    lines outside phases): its lines whose price is subscription-owned and made from a plan price,
    directly or through another subscription-owned price (a phase's override of an override).
    One read per level of that chain for the whole batch."""
    owned: dict[str, Price] = {}
    wanted = {line.price_id for sub in subs for line in sub.line_items if line.price_id not in plan_prices}
    for _ in range(_OVERRIDE_DEPTH):
        found = [p for p in uow.prices.find_many(wanted) if p.entity_type is PriceEntityType.SUBSCRIPTION]
        owned.update((p.id, p) for p in found)
        wanted = {p.parent_price_id for p in found if p.parent_price_id} - set(owned) - set(plan_prices)
        if not wanted:
            break

    def root(price_id: str) -> str | None:
        for _ in range(_OVERRIDE_DEPTH + 1):
            if price_id in plan_prices:
                return lineage(plan_prices[price_id])
            price = owned.get(price_id)
            if price is None or price.parent_price_id is None:
                return None
            price_id = price.parent_price_id
        return None

    result: dict[str, dict[str | None, set[str]]] = {}
    for sub in subs:
        by_phase: dict[str | None, set[str]] = {}
        for line in sub.line_items:
            family = root(line.price_id) if line.price_id in owned and line.entity_type == "plan" else None
            if family is not None:
                by_phase.setdefault(line.subscription_phase_id, set()).add(family)
        result[sub.id] = by_phase
    return result


def _phases(uow: UnitOfWork, subs: Sequence[Subscription]) -> dict[str, list[PhaseWindow]]:
    """The live phases of each subscription (one read for the batch)."""
    windows: dict[str, list[PhaseWindow]] = {sub.id: [] for sub in subs}
    for phase in list_where_in(uow.subscription_phases, "subscription_id", windows):
        windows[phase.subscription_id].append((phase.id, phase.start_date, phase.end_date))
    return windows


class _Opener:
    """Makes new plan lines: each price's line as a new subscription would get it (meter names,
    display names: :func:`~billingkit.services.subscription_setup.plan_line_items`), made once per
    batch and copied for each subscription with its own id, owner and start."""

    def __init__(self, uow: UnitOfWork, ctx: Context, plan: Plan, customers: dict[str, Customer]) -> None:
        self._uow, self._ctx, self._plan, self._customers = uow, ctx, plan, customers
        self._made: dict[str, SubscriptionLineItem] = {}

    def line(self, sub: Subscription, price: Price, start: datetime) -> SubscriptionLineItem:
        made = self._made.get(price.id)
        customer = self._customers.get(sub.customer_id)
        if customer is None:  # as billing it would: a subscription cannot be priced without it
            raise ValidationError(
                f"customer {sub.customer_id} of subscription {sub.id} is missing", field="customer_id"
            )
        if made is None:
            (made,) = plan_line_items(
                self._uow,
                self._ctx,
                sub_id=sub.id,
                customer=customer,
                plan=self._plan,
                prices=[price],
                start=start,
            )
            self._made[price.id] = made
        return made.model_copy(
            update={
                "id": self._ctx.ids.new("subs_line"),
                "subscription_id": sub.id,
                "customer_id": sub.customer_id,
                "start_date": start,
                "end_date": price.end_date,
            }
        )


def _candidates(
    uow: UnitOfWork, plan_id: str, target: int, after_id: str | None, limit: int
) -> list[Subscription]:
    """The next ``limit`` subscriptions to sync, in id order after ``after_id`` (read in pages of
    the store's largest page)."""
    found: list[Subscription] = []
    while len(found) < limit:
        filters = [
            Filter("plan_id", Op.EQ, plan_id),
            Filter("synced_price_sequence", Op.LT, target),
            Filter("subscription_status", Op.NE, SubscriptionStatus.CANCELLED.value),
            # Inherited children are skeletons of their parent's plan: they never carry lines.
            Filter("subscription_type", Op.NE, SubscriptionType.INHERITED.value),
        ]
        last = found[-1].id if found else after_id
        if last is not None:
            filters.append(Filter("id", Op.GT, last))
        size = min(limit - len(found), MAX_LIMIT)
        page = uow.subscriptions.list(
            ListQuery(filters=tuple(filters), sort=(Sort("id", False),), limit=size)
        ).items
        found += page
        if len(page) < size:
            break
    return found


def sync_batch(
    uow: UnitOfWork, ctx: Context, *, sync: PlanPriceSync, after_id: str | None, limit: int
) -> SyncBatch:
    """Sync the next ``limit`` subscriptions of ``sync``'s plan after ``after_id`` (see the module
    doc); what the batch did. Raises ``NotFound`` when the plan was archived meanwhile and
    ``VersionConflict`` when a subscription changed since it was read (nothing is then written)."""
    _require(ctx)
    plan = _plan(uow, sync.plan_id)
    subs = _candidates(uow, plan.id, sync.price_sequence, after_id, limit)
    if not subs:
        return SyncBatch()
    prices = _plan_prices(uow, plan.id)
    by_id = {price.id: price for price in prices}
    sequence = max((p.sequence for p in prices), default=0)
    overridden = _overridden(uow, subs, by_id)
    phases = _phases(uow, subs)
    customers = {c.id: c for c in uow.customers.find_many({sub.customer_id for sub in subs})}
    opener = _Opener(uow, ctx, plan, customers)
    changes: list[tuple[Subscription, Subscription]] = []
    added: list[SubscriptionLineItem] = []
    updated: set[str] = set()
    ended = 0
    for sub in subs:
        changed = [p for p in prices if p.sequence > sub.synced_price_sequence]
        result = sync_line_items(
            sub,
            changed,
            overridden=overridden[sub.id],
            open_line=partial(opener.line, sub),
            new_id=partial(ctx.ids.new, "subs_line"),
            phases=phases[sub.id],
        )
        fields: dict[str, Any] = {"synced_price_sequence": max(sequence, sub.synced_price_sequence)}
        if result.changed:
            fields.update(line_items=result.lines, **ctx.touch())
        changes.append((sub, sub.model_copy(update=fields)))
        if result.changed:
            updated.add(sub.id)
            added += result.added
            ended += result.ended
    saved = uow.subscriptions.update_many(changes)
    record_line_items(uow, ctx, added)
    events = [
        notifications.notification(ctx, "subscription.updated", sub, customers.get(sub.customer_id))
        for sub in saved
        if sub.id in updated
    ]
    notifications.record_many(uow, ctx, events)
    return SyncBatch(
        checked=len(subs),
        updated=len(updated),
        line_items_added=len(added),
        line_items_ended=ended,
        last_id=subs[-1].id,
    )
