"""Subscription phases: given with a new subscription (``phases``), added, moved and removed
later, and read.

A phase is a window of the subscription with its own line items: a copy of each plan line
(``override_line_items`` re-price them for the phase), its extra ``line_items``, and its coupons.
How the windows fit and how the plan lines make room is
:mod:`billingkit.domain.phase_windows`; billing needs nothing more, since every charge is clipped
to its line's own dates. Rules of the operations:

* Drafts cannot be given phases (``phases`` on a draft: 400 on ``phases``; later operations on a
  draft: ``InvalidOperation``), nor can a cancelled subscription's phases change.
* A phase's coupons (``subscription_coupons``, the deprecated ``coupons`` and
  ``line_item_coupons``) attach like the subscription's, start at the phase start by default,
  must lie inside the phase, end with it at the latest, and carry ``subscription_phase_id``.
  A ``price_id`` names the phase's line of that price (a plan price names the phase's copy).
* What may be invoiced never changes: a new phase starts, and a phase's start moves or the phase
  is deleted, only at or after the subscription's settled instant (the end of its current
  period, or now if later; :func:`~billingkit.domain.phase_windows.settled_until`); a phase's end
  moves only from and to an instant at or after it. Otherwise ``InvalidOperation`` (the phase
  has started, or ended) or a ``ValidationError`` naming the date.
* Moving a phase: plan copies follow (keeping their overrides), extra lines and coupon
  associations whose bound was the phase's bound move with it, and everything is clipped to
  the new window. Deleting one removes its lines (never invoiced), archives its coupon
  associations (their redemptions are not given back) and archives the phase.
* Every change is one unit of work: the subscription is saved against the version it was read
  at, the phase against its own. Notifications: ``subscription.phase.created``,
  ``subscription.phase.updated``, ``subscription.phase.deleted`` (payload ``phase``: ``id``,
  ``subscription_id``, ``start_date``, ``end_date``), and ``subscription.updated`` when the
  subscription's line items changed (not on create, which sends ``subscription.created``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Annotated, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.catalog import PriceEntityType
from billingkit.domain.coupon_associations import CouponAssociation
from billingkit.domain.phase_windows import (
    PhaseLines,
    Window,
    check_fits,
    check_settled,
    check_windows,
    is_plan_line,
    settled_until,
    subtract,
)
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Status
from billingkit.domain.subscription_phases import SubscriptionPhase
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionStatus
from billingkit.domain.validation import InputModel, Metadata, NonEmptyStr, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.coupon_associations import (
    CouponRequest,
    SubscriptionCouponInput,
    attach_coupons,
    coupon_requests,
)
from billingkit.services.line_item_requests import LineItemCreate
from billingkit.services.phase_line_items import MAX_PHASE_LINE_ITEMS, phase_line_items
from billingkit.services.price_overrides import OverrideLineItem, override_lines
from billingkit.services.records import PartialUpdate, get_live, list_where_in, new_fields
from billingkit.services.subscription_lines import record_line_items

__all__ = [
    "MAX_PHASES",
    "SubscriptionPhaseCreate",
    "SubscriptionPhaseUpdate",
    "add_phase",
    "create_phases",
    "delete_phase",
    "get_phase",
    "list_phases",
    "phases_of",
    "update_phase",
]

ENTITY = "subscription"
LABEL = "subscription phase"
#: Most phases one subscription create may give.
MAX_PHASES = 20
#: Most coupons one phase may attach through each of its coupon fields.
_MAX_COUPONS = 100


class SubscriptionPhaseCreate(InputModel):
    """The reference's ``SubscriptionPhaseCreateRequest``: the window ``[start_date, end_date)``
    (``end_date`` omitted: open-ended), ``override_line_items`` re-pricing plan prices for the
    phase, extra ``line_items``, coupons (``subscription_coupons``; deprecated ``coupons`` and
    ``line_item_coupons``) and ``metadata``. Used on create (``phases``) and by ``add_phase``."""

    start_date: UtcDatetime
    end_date: UtcDatetime | None = None
    line_items: Annotated[list[LineItemCreate], Field(max_length=MAX_PHASE_LINE_ITEMS)] | None = None
    override_line_items: Annotated[list[OverrideLineItem], Field(max_length=MAX_PHASE_LINE_ITEMS)] | None = (
        None
    )
    subscription_coupons: Annotated[list[SubscriptionCouponInput], Field(max_length=_MAX_COUPONS)] | None = (
        None
    )
    #: Deprecated: coupon ids on the whole phase; use ``subscription_coupons``.
    coupons: Annotated[list[NonEmptyStr], Field(max_length=_MAX_COUPONS)] | None = None
    #: Deprecated: price id -> coupon ids on the phase's line of that price.
    line_item_coupons: (
        Annotated[
            dict[NonEmptyStr, Annotated[list[NonEmptyStr], Field(max_length=_MAX_COUPONS)]],
            Field(max_length=_MAX_COUPONS),
        ]
        | None
    ) = None
    metadata: Metadata = {}


class SubscriptionPhaseUpdate(PartialUpdate):
    """A phase's new ``start_date``, ``end_date`` (``null``: open-ended) and ``metadata``
    (replaces the old); fields not sent stay as they are."""

    required: ClassVar[frozenset[str]] = frozenset({"start_date", "metadata"})

    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    metadata: Metadata | None = None


# -- reading -------------------------------------------------------------------------------------


def phases_of(uow: UnitOfWork, subscription_id: str) -> list[SubscriptionPhase]:
    """The live phases of a subscription, in order of start."""
    found = list_where_in(uow.subscription_phases, "subscription_id", [subscription_id])
    return sorted(found, key=lambda phase: (phase.start_date, phase.id))


def list_phases(uow: UnitOfWork, ctx: Context, *, subscription_id: str) -> list[SubscriptionPhase]:
    """Every live phase of subscription ``subscription_id``, in order of start; ``NotFound`` for
    an unknown subscription."""
    ctx.require(ENTITY, Action.READ)
    sub = get_live(uow.subscriptions, "subscription", subscription_id)
    return phases_of(uow, sub.id)


def get_phase(uow: UnitOfWork, ctx: Context, *, phase_id: str) -> SubscriptionPhase:
    """The live phase ``phase_id``; ``NotFound`` otherwise."""
    ctx.require(ENTITY, Action.READ)
    return get_live(uow.subscription_phases, LABEL, phase_id)


# -- the lines of a subscription while its phases change -----------------------------------------


def _window(phase: SubscriptionPhase) -> Window:
    return (phase.start_date, phase.end_date)


def _new_phase(ctx: Context, sub: Subscription, request: SubscriptionPhaseCreate) -> SubscriptionPhase:
    return SubscriptionPhase(
        **new_fields(ctx, "subs_phase"),
        subscription_id=sub.id,
        start_date=request.start_date,
        end_date=request.end_date,
        metadata=dict(request.metadata),
    )


def _tiles(uow: UnitOfWork, ctx: Context, sub: Subscription) -> PhaseLines:
    """The subscription's lines ready for editing: each phase copy of a plan line keyed by the
    plan line's price (its own price, or the price its override price was made from)."""
    plan = {line.price_id for line in sub.line_items if is_plan_line(line)}
    copies = [line for line in sub.line_items if line.subscription_phase_id and line.entity_type == "plan"]
    parents = {
        price.id: price.parent_price_id
        for price in uow.prices.find_many({line.price_id for line in copies if line.price_id not in plan})
    }
    keys: dict[str, str] = {}
    for line in copies:
        key = line.price_id if line.price_id in plan else parents.get(line.price_id)
        if key in plan:
            keys[line.id] = key
    return PhaseLines(sub.line_items, keys, lambda: ctx.ids.new("subs_line"), sub_start=sub.start_date)


def _plan_prices(uow: UnitOfWork, lines: Sequence[SubscriptionLineItem]) -> dict[str, str]:
    """Plan price id (as an override request names it) -> the price the plan line bills (itself,
    or the subscription's own override of it)."""
    keys = {line.price_id for line in lines if is_plan_line(line)}
    named = {key: key for key in keys}
    for price in uow.prices.find_many(keys):
        if price.entity_type is PriceEntityType.SUBSCRIPTION and price.parent_price_id:
            named.setdefault(price.parent_price_id, price.id)
    return named


def _fill(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    tiles: PhaseLines,
    phase: SubscriptionPhase,
    request: SubscriptionPhaseCreate,
    plan_prices: dict[str, str],
    prefix: str,
) -> None:
    """Give ``phase`` its lines: copies of the plan lines over its window (overridden as asked)
    and its extra lines."""
    copies = tiles.claim(phase.id, _window(phase))
    if request.override_line_items:
        overrides = [
            item.model_copy(update={"price_id": plan_prices.get(item.price_id, item.price_id)})
            for item in request.override_line_items
        ]
        tiles.replace(override_lines(uow, ctx, copies, overrides, field=prefix + "override_line_items"))
    if request.line_items:
        extra = phase_line_items(
            uow,
            ctx,
            sub,
            request.line_items,
            start=phase.start_date,
            end=phase.end_date,
            phase_id=phase.id,
            field=prefix + "line_items",
        )
        tiles.add(extra)


def _phase_line(
    tiles: PhaseLines,
    lines: Sequence[SubscriptionLineItem],
    phase_id: str,
    price_id: str,
    plan: dict[str, str],
) -> SubscriptionLineItem | None:
    """The phase's line of ``price_id``: an extra line of that price, else its copy of the plan
    line of that (plan) price."""
    mine = [line for line in lines if line.subscription_phase_id == phase_id]
    for line in mine:
        if line.price_id == price_id and line.entity_type != "plan":
            return line
    key = plan.get(price_id, price_id)
    return next((line for line in mine if line.entity_type == "plan" and tiles.key_of(line.id) == key), None)


def _attach_coupons(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    tiles: PhaseLines,
    phase: SubscriptionPhase,
    request: SubscriptionPhaseCreate,
    *,
    prefix: str,
    plan_prices: dict[str, str],
    new_subscription: bool,
) -> None:
    """Attach the phase's coupons (see the module doc), limited to the phase's window."""
    asked = coupon_requests(request.subscription_coupons, request.coupons, request.line_item_coupons)
    if not asked:
        return
    start, end = _window(phase)
    resolved: list[CouponRequest] = []
    for item in asked:
        item = replace(
            item,
            coupon_field=prefix + item.coupon_field,
            price_field=prefix + item.price_field,
            path=prefix + item.path,
        )
        if item.start_date is not None and (
            item.start_date < start or (end is not None and item.start_date >= end)
        ):
            raise ValidationError("start_date must lie inside the phase", field=item.path + "start_date")
        if item.end_date is not None and end is not None and item.end_date > end:
            raise ValidationError("end_date cannot be after the phase's end", field=item.path + "end_date")
        if item.price_id is not None:
            line = _phase_line(tiles, sub.line_items, phase.id, item.price_id, plan_prices)
            if line is None:
                raise ValidationError(
                    f"price {item.price_id} is not a price of this phase's line items", field=item.price_field
                )
            item = replace(item, line_item_id=line.id)
        resolved.append(item)
    added = attach_coupons(uow, ctx, sub, resolved, default_start=start, new_subscription=new_subscription)
    changes = []
    for association in added:
        until = association.end_date
        if until is None or (end is not None and until > end):
            until = end
        fields = {"subscription_phase_id": phase.id, "end_date": until}
        changes.append((association, association.model_copy(update=fields)))
    uow.coupon_associations.update_many(changes)


def _notify_phase(uow: UnitOfWork, ctx: Context, event_type: str, phase: SubscriptionPhase) -> None:
    notifications.notify(uow, ctx, event_type, phase)


def _notify_updated(uow: UnitOfWork, ctx: Context, sub: Subscription) -> None:
    notifications.notify(uow, ctx, "subscription.updated", sub, uow.customers.find(sub.customer_id))


# -- on create -----------------------------------------------------------------------------------


def create_phases(
    uow: UnitOfWork, ctx: Context, sub: Subscription, requests: Sequence[SubscriptionPhaseCreate] | None
) -> Subscription:
    """A new subscription's ``phases``: stores them, their coupon associations and the prices
    their overrides and inline lines make, records ``subscription.phase.created`` for each, and
    returns ``sub`` with its line items rearranged around them (the caller stores ``sub`` and
    records its lines). Nothing was invoiced yet, so any window inside the subscription will do.
    Raises ``ValidationError`` naming ``phases[i].<field>``."""
    if not requests:
        return sub
    if sub.subscription_status is SubscriptionStatus.DRAFT:
        raise ValidationError(
            "a draft subscription cannot be given phases; activate it, then add them", field="phases"
        )
    prefixes = [f"phases[{index}]." for index in range(len(requests))]
    check_windows(
        [(item.start_date, item.end_date) for item in requests],
        sub_start=sub.start_date,
        sub_end=sub.end_date,
        prefixes=prefixes,
    )
    starts = {line.id: line.start_date or sub.start_date for line in sub.line_items if is_plan_line(line)}
    tiles = PhaseLines(sub.line_items, {}, lambda: ctx.ids.new("subs_line"), sub_start=sub.start_date)
    plan_prices = _plan_prices(uow, sub.line_items)
    phases = [_new_phase(ctx, sub, request) for request in requests]
    for phase, request, prefix in zip(phases, requests, prefixes, strict=True):
        _fill(uow, ctx, sub, tiles, phase, request, plan_prices, prefix)
    tiles.end_at_start(starts)
    sub = sub.model_copy(update={"line_items": tiles.lines})
    uow.subscription_phases.add_many(phases)
    for phase, request, prefix in zip(phases, requests, prefixes, strict=True):
        _attach_coupons(
            uow,
            ctx,
            sub,
            tiles,
            phase,
            request,
            prefix=prefix,
            plan_prices=plan_prices,
            new_subscription=True,
        )
    for phase in phases:
        _notify_phase(uow, ctx, "subscription.phase.created", phase)
    return sub


# -- later changes -------------------------------------------------------------------------------


def _changeable(uow: UnitOfWork, subscription_id: str) -> Subscription:
    sub = get_live(uow.subscriptions, "subscription", subscription_id)
    if sub.subscription_status is SubscriptionStatus.DRAFT:
        raise InvalidOperation(f"subscription {sub.id} is a draft: activate it before giving it phases")
    if sub.subscription_status is SubscriptionStatus.CANCELLED:
        raise InvalidOperation(f"subscription {sub.id} is cancelled: its phases cannot change")
    return sub


def _save_lines(
    uow: UnitOfWork, ctx: Context, sub: Subscription, tiles: PhaseLines, settled: datetime
) -> Subscription:
    """Store ``sub`` with the edited lines (checked against the version it was read at, and
    proven not to touch time before ``settled``) and index its new lines."""
    lines = tiles.lines
    check_settled(sub.line_items, lines, settled)
    known = {line.id for line in sub.line_items}
    saved = uow.subscriptions.update(
        sub.model_copy(update={"line_items": lines, **ctx.touch()}), expected_version=sub.version
    )
    record_line_items(uow, ctx, [line for line in lines if line.id not in known])
    return saved


def add_phase(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: SubscriptionPhaseCreate
) -> SubscriptionPhase:
    """Add a phase to a live, non-draft, non-cancelled subscription. It starts at or after the
    subscription's settled instant (else a ``ValidationError`` on ``start_date``), fits beside
    its other phases and inside its window; its lines, coupons and overrides as on create.
    Records ``subscription.phase.created`` and ``subscription.updated``."""
    ctx.require(ENTITY, Action.WRITE)
    sub = _changeable(uow, subscription_id)
    settled = settled_until(sub, ctx.now)
    if data.start_date < settled:
        raise ValidationError(
            f"a new phase cannot start before {settled.isoformat()}: the subscription is invoiced until then",
            field="start_date",
        )
    window = (data.start_date, data.end_date)
    others = [_window(phase) for phase in phases_of(uow, sub.id)]
    check_fits(window, others, sub_start=sub.start_date, sub_end=sub.end_date)
    tiles = _tiles(uow, ctx, sub)
    plan_prices = _plan_prices(uow, sub.line_items)
    phase = _new_phase(ctx, sub, data)
    _fill(uow, ctx, sub, tiles, phase, data, plan_prices, "")
    saved = _save_lines(uow, ctx, sub, tiles, settled)
    uow.subscription_phases.add(phase)
    _attach_coupons(
        uow, ctx, saved, tiles, phase, data, prefix="", plan_prices=plan_prices, new_subscription=False
    )
    _notify_phase(uow, ctx, "subscription.phase.created", phase)
    _notify_updated(uow, ctx, saved)
    return phase


def _check_move(phase: SubscriptionPhase, new: Window, settled: datetime) -> None:
    """A phase's window may move only where nothing is invoiced (see the module doc)."""
    start, end = new
    if start != phase.start_date:
        if phase.start_date < settled:
            raise InvalidOperation(
                f"phase {phase.id} has started (the subscription is invoiced until {settled.isoformat()}): "
                "its start_date cannot move"
            )
        if start < settled:
            raise ValidationError(
                f"start_date cannot be before {settled.isoformat()}: the subscription is invoiced until then",
                field="start_date",
            )
    if end != phase.end_date:
        if phase.end_date is not None and phase.end_date < settled:
            raise InvalidOperation(f"phase {phase.id} has ended: its end_date cannot move")
        if end is not None and end < settled:
            raise ValidationError(
                f"end_date cannot be before {settled.isoformat()}: the subscription is invoiced until then",
                field="end_date",
            )


def _move_coupons(uow: UnitOfWork, ctx: Context, phase: SubscriptionPhase, old: Window, new: Window) -> None:
    """The phase's coupon associations after its window moved: a bound equal to the phase's old
    bound moves with it, then each is clipped to the new window (an association left with nothing
    ends at its start, so it discounts nothing)."""
    changes = []
    for item in _phase_coupons(uow, phase):
        start = new[0] if item.start_date == old[0] else max(item.start_date, new[0])
        end = new[1] if item.end_date == old[1] else item.end_date
        if new[1] is not None and (end is None or end > new[1]):
            end = new[1]
        if end is not None and end < start:
            end = start
        if (start, end) != (item.start_date, item.end_date):
            update = {"start_date": start, "end_date": end, **ctx.touch()}
            changes.append((item, item.model_copy(update=update)))
    if changes:
        uow.coupon_associations.update_many(changes)


def _phase_coupons(uow: UnitOfWork, phase: SubscriptionPhase) -> list[CouponAssociation]:
    """The phase's live coupon associations."""
    return list_where_in(
        uow.coupon_associations,
        "subscription_id",
        [phase.subscription_id],
        Filter("subscription_phase_id", Op.EQ, phase.id),
    )


def update_phase(
    uow: UnitOfWork, ctx: Context, *, phase_id: str, data: SubscriptionPhaseUpdate
) -> SubscriptionPhase:
    """Change a phase's dates and metadata (see the module doc for what may move). Records
    ``subscription.phase.updated``, and ``subscription.updated`` when its dates moved."""
    ctx.require(ENTITY, Action.WRITE)
    phase = get_live(uow.subscription_phases, LABEL, phase_id)
    sub = _changeable(uow, phase.subscription_id)
    changes = data.changes()
    old = _window(phase)
    new = (changes.get("start_date", phase.start_date), changes.get("end_date", phase.end_date))
    if new != old:
        settled = settled_until(sub, ctx.now)
        _check_move(phase, new, settled)
        others = [_window(other) for other in phases_of(uow, sub.id) if other.id != phase.id]
        check_fits(new, others, sub_start=sub.start_date, sub_end=sub.end_date)
        tiles = _tiles(uow, ctx, sub)
        grown = [part for part in subtract(new, old) if part is not None]
        shrunk = [part for part in subtract(old, new) if part is not None]
        for part in grown:  # first: the copies still exist to lend their overrides
            tiles.claim(phase.id, part)
        for part in shrunk:
            tiles.release(phase.id, part)
        tiles.follow(phase.id, old, new)
        sub = _save_lines(uow, ctx, sub, tiles, settled)
        _move_coupons(uow, ctx, phase, old, new)
    update = {"start_date": new[0], "end_date": new[1], **ctx.touch()}
    if "metadata" in changes:
        update["metadata"] = dict(changes["metadata"])
    saved = uow.subscription_phases.update(phase.model_copy(update=update), expected_version=phase.version)
    _notify_phase(uow, ctx, "subscription.phase.updated", saved)
    if new != old:
        _notify_updated(uow, ctx, sub)
    return saved


def delete_phase(uow: UnitOfWork, ctx: Context, *, phase_id: str) -> SubscriptionPhase:
    """Delete a phase that has not started (its start at or after the subscription's settled
    instant; else ``InvalidOperation``: end it with ``end_date`` instead): its lines go, its time
    goes back to the plan lines, its coupon associations and itself are archived. Records
    ``subscription.phase.deleted`` and ``subscription.updated``; returns the archived phase."""
    ctx.require(ENTITY, Action.WRITE)
    phase = get_live(uow.subscription_phases, LABEL, phase_id)
    sub = _changeable(uow, phase.subscription_id)
    settled = settled_until(sub, ctx.now)
    if phase.start_date < settled:
        raise InvalidOperation(
            f"phase {phase.id} has started (the subscription is invoiced until {settled.isoformat()}): "
            "end it with end_date instead of deleting it"
        )
    tiles = _tiles(uow, ctx, sub)
    tiles.drop(phase.id, _window(phase))
    sub = _save_lines(uow, ctx, sub, tiles, settled)
    touched = ctx.touch()
    archived = [
        (item, item.model_copy(update={"status": Status.ARCHIVED, **touched}))
        for item in _phase_coupons(uow, phase)
    ]
    if archived:
        uow.coupon_associations.update_many(archived)
    gone = uow.subscription_phases.update(
        phase.model_copy(update={"status": Status.ARCHIVED, **touched}), expected_version=phase.version
    )
    _notify_phase(uow, ctx, "subscription.phase.deleted", gone)
    _notify_updated(uow, ctx, sub)
    return gone
