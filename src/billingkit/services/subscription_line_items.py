"""A subscription's line items beyond the plan's: extra lines and overrides on create, and
adding, changing and ending lines afterwards.

Rules (the pure ones are in :mod:`billingkit.domain.line_item_rules`; money moved at once is
settled like every mid-period change, :mod:`billingkit.services.line_settlements`;
``docs/billing-rules.md`` has worked examples):

* **A new line** names exactly one of ``price_id`` (a live price of a plan, an add-on or this
  subscription) and ``price`` (made for this subscription, ``entity_type`` ``SUBSCRIPTION``). Its
  price is in the subscription's currency and bills with its period or once (``ONETIME``, FIXED).
  ``entity_type`` ``subscription``, ``entity_id`` the subscription. ``start_date`` defaults to the
  subscription's start on create and on drafts, else to now (never before the subscription's
  start); the line is clipped to its price's own dates and to its phase's window
  (``subscription_phase_id``: a phase of this subscription). Commitment fields go on USAGE lines
  (not with a subscription ``commitment_amount``).
* **Added to a started subscription**, a recurring ADVANCE fee starting in the current period is
  charged for the rest of it at once with ``proration_behavior: create_prorations`` (else it is
  first billed with the next period); a one-time charge dated in the current period is invoiced at
  once in full (the current period's invoice is already out); everything else waits for the
  period-end invoice, clipped to the line's dates.
* **A change** of what the line charges (amount, billing model, tiers, transform, unit amounts) or
  of its quantity ends the line at ``effective_from`` (default now, not before the line's start)
  and starts a replacement line there with a subscription-owned price (``parent_price_id``: the
  old price): the reference's behaviour, so each invoice line names one price and quantity. With
  ``create_prorations`` the old line's unused time is credited and the new one charged for the
  rest of the period, netted: one invoice for a net charge (the credit a negative line on it),
  one wallet credit for a net credit. Lines nothing has been billed for (drafts, trials, lines
  starting in a later period, one-time lines not invoiced yet) change in place. ``metadata`` and
  commitment changes are made in place. ``end_date`` edits follow spec rule 7.
* **Deleting** ends the line at ``effective_from`` (default now), or at its start when it has not
  started; it is kept for history and no longer billed (ARREAR usage is measured up to the end).
  A draft's line is removed outright (nothing was billed; activation would move its start past
  its end). ``create_prorations`` credits a recurring ADVANCE fee's unused time.
* Every change checks the subscription's version (``VersionConflict``: a concurrent change saved
  it first), bumps it and records ``subscription.updated``. A cancelled subscription's lines do
  not change (``InvalidOperation``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.catalog import Meter, Price, PriceEntityType
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.input_rules import prefixed
from billingkit.domain.invoices import Invoice
from billingkit.domain.line_item_rules import (
    check_changeable,
    check_effective,
    check_end_date_edit,
    check_line_period,
    check_line_window,
    deletion_end,
    is_one_time,
    is_recurring_advance_fee,
    one_time_charge_date,
    one_time_invoiced,
    started_by,
)
from billingkit.domain.money import ZERO
from billingkit.domain.periods import InvoiceCadence, Period
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import (
    ProrationBehavior,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
)
from billingkit.errors import InvalidOperation, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.entitlement_overrides import override_entitlements
from billingkit.services.line_item_requests import (
    COMMITMENT_FIELDS,
    CommitmentFields,
    LineItemCreate,
    LineItemDelete,
    LineItemUpdate,
    OverrideEntitlement,
)
from billingkit.services.line_settlements import line_charge_key, line_end_key, settle_lines
from billingkit.services.owned_prices import add_owned_price
from billingkit.services.price_overrides import OverrideLineItem, override_lines, override_price
from billingkit.services.records import get_live
from billingkit.services.subscription_commitments import check_line_item_commitments, commit_line_items
from billingkit.services.subscription_lines import find_line_item, record_line_items

__all__ = [
    "LineItemChange",
    "PhaseWindow",
    "add_line_item",
    "build_line",
    "delete_line_item",
    "line_item_dict",
    "line_items_at_create",
    "update_line_item",
]

ENTITY = "subscription"
LABEL = "subscription"
#: The fields of a line item change that change what its price charges.
PRICE_VALUES = (
    "amount",
    "billing_model",
    "tier_mode",
    "tiers",
    "transform_quantity",
    "price_unit_amount",
    "price_unit_tiers",
)
# The commitment config's field names -> the line item request's (to name a bad value).
_COMMITMENT_NAMES = {
    "overage_factor": "commitment_overage_factor",
    "enable_true_up": "commitment_true_up_enabled",
    "is_window_commitment": "commitment_windowed",
}
_OWNERS = frozenset({PriceEntityType.PLAN, PriceEntityType.ADDON, PriceEntityType.SUBSCRIPTION})


def line_item_dict(sub: Subscription, line: SubscriptionLineItem) -> dict[str, Any]:
    """The wire form of ``line`` (the reference's ``SubscriptionLineItemResponse``): its fields
    and its subscription's record fields."""
    return {**line.model_dump(mode="json"), **sub.common_fields()}


@dataclass(frozen=True, slots=True)
class LineItemChange:
    """What a line item operation did: ``line_item`` (new, changed, replacing or ended), the
    ``subscription`` as saved, the ``invoice`` issued at once (a proration charge or a one-time
    charge, or a change's net charge; None when none) and ``credited``, the amount paid into the
    customer's PRE_PAID wallet for unused time (a change's net credit; None when none)."""

    subscription: Subscription
    line_item: SubscriptionLineItem
    invoice: Invoice | None = None
    credited: Decimal | None = None

    def to_dict(self) -> dict[str, Any]:
        return line_item_dict(self.subscription, self.line_item)


@dataclass(frozen=True, slots=True)
class PhaseWindow:
    """The phase ``id`` a new line belongs to, and its window ``[start, end)``."""

    id: str
    start: datetime
    end: datetime | None


def _price_of(
    uow: UnitOfWork, ctx: Context, sub: Subscription, request: LineItemCreate, prefix: str
) -> Price:
    """The price a new line of ``sub`` bills: the live one named, or a new subscription price."""
    if (request.price_id is None) == (request.price is None):
        raise ValidationError("give exactly one of price_id and price", field=prefix + "price_id")
    if request.price is not None:
        try:
            data = request.price.price_input(sub.currency)
        except ValidationError as exc:
            raise prefixed(exc, prefix + "price.") from None
        check_line_period(
            sub,
            price_type=data.type,
            currency=sub.currency,
            billing_period=data.billing_period,
            billing_period_count=data.billing_period_count,
            field=prefix + "price.billing_period",
        )
        return add_owned_price(
            uow,
            ctx,
            data,
            entity_type=PriceEntityType.SUBSCRIPTION,
            entity_id=sub.id,
            field_prefix=prefix + "price.",
        )
    price = uow.prices.find(request.price_id or "")
    if (
        price is None
        or price.status is not Status.PUBLISHED
        or price.entity_type not in _OWNERS
        or (price.entity_type is PriceEntityType.SUBSCRIPTION and price.entity_id != sub.id)
    ):
        raise ValidationError(f"price {request.price_id} not found", field=prefix + "price_id")
    check_line_period(
        sub,
        price_type=price.type,
        currency=price.currency,
        billing_period=price.billing_period,
        billing_period_count=price.billing_period_count,
        field=prefix + "price_id",
    )
    return price


def commit_line(
    sub: Subscription,
    line: SubscriptionLineItem,
    request: CommitmentFields,
    meter: Meter | None,
    *,
    prefix: str = "",
    current: dict[str, Any] | None = None,
) -> SubscriptionLineItem:
    """``line`` with the commitment ``request`` describes (over ``current``, its stored one).
    Raises ``ValidationError`` naming ``<prefix>commitment_*``."""
    if sub.commitment_amount is not None:
        raise ValidationError(
            "a subscription with a commitment_amount takes no line item commitments",
            field=prefix + "commitment_type",
        )
    config = request.commitment_config(current)
    configs = {line.price_id: config}
    try:
        check_line_item_commitments(configs, sub.billing_period, sub.billing_period_count)
        (committed,) = commit_line_items([line], configs, {meter.id: meter} if meter is not None else {})
    except ValidationError as exc:
        name = (exc.field or "").removeprefix(f"line_item_commitments.{line.price_id}").lstrip(".")
        field = prefix + _COMMITMENT_NAMES.get(name, name or "commitment_type")
        raise ValidationError(exc.message, field=field) from None
    return committed


def _clip(
    uow: UnitOfWork,
    sub: Subscription,
    request: LineItemCreate,
    price: Price,
    start: datetime,
    prefix: str,
    phase: PhaseWindow | None,
) -> tuple[datetime, datetime | None]:
    """``[start, request.end_date)`` clipped to the price's own dates and the phase's window
    (``phase``, or the stored phase ``request.subscription_phase_id`` names)."""
    end = request.end_date
    windows = [(price.start_date, price.end_date)]
    if phase is not None:
        windows.append((phase.start, phase.end))
    elif request.subscription_phase_id is not None:
        stored = uow.subscription_phases.find(request.subscription_phase_id)
        if stored is None or stored.status is not Status.PUBLISHED or stored.subscription_id != sub.id:
            raise ValidationError(
                f"subscription phase {request.subscription_phase_id} is not a phase of this subscription",
                field=prefix + "subscription_phase_id",
            )
        windows.append((stored.start_date, stored.end_date))
    for window_start, window_end in windows:
        if window_start is not None and window_start > start:
            start = window_start
        if window_end is not None and (end is None or window_end < end):
            end = window_end
    return start, end


def build_line(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    request: LineItemCreate,
    *,
    prefix: str = "",
    default_start: datetime,
    phase: PhaseWindow | None = None,
) -> SubscriptionLineItem:
    """A new line of ``sub`` from ``request`` (see the module doc); a price made for it is stored
    in ``uow``, the line is not. ``phase``: the (maybe not yet stored) phase the line belongs to.
    Raises ``ValidationError`` naming ``<prefix><field>``."""
    price = _price_of(uow, ctx, sub, request, prefix)
    fixed = price.type is PriceType.FIXED
    if not fixed and request.quantity:
        raise ValidationError(
            "a usage line item's quantity is measured: give quantity for FIXED prices only",
            field=prefix + "quantity",
        )
    quantity = request.quantity if request.quantity is not None else (price.min_quantity or Decimal(1))
    start, end = _clip(uow, sub, request, price, request.start_date or default_start, prefix, phase)
    check_line_window(sub, start, end, prefix=prefix)
    meter = uow.meters.find(price.meter_id) if price.meter_id else None
    line = SubscriptionLineItem(
        id=ctx.ids.new("subs_line"),
        subscription_id=sub.id,
        customer_id=sub.customer_id,
        entity_type="subscription",
        entity_id=sub.id,
        display_name=request.display_name
        or price.display_name
        or (meter.name if meter is not None else None),
        price_id=price.id,
        price_type=price.type,
        price_unit=price.price_unit,
        price_unit_id=price.price_unit_id,
        meter_id=price.meter_id,
        meter_display_name=meter.name if meter is not None else None,
        quantity=quantity if fixed else ZERO,
        currency=price.currency,
        billing_period=price.billing_period,
        billing_period_count=price.billing_period_count,
        invoice_cadence=price.invoice_cadence,
        start_date=start,
        end_date=end,
        subscription_phase_id=phase.id if phase is not None else request.subscription_phase_id,
        metadata=request.metadata,
    )
    if request.commitment_given():
        line = commit_line(sub, line, request, meter, prefix=prefix)
    return line


def line_items_at_create(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    *,
    line_items: Sequence[LineItemCreate] | None,
    override_line_items: Sequence[OverrideLineItem] | None,
    entitlement_overrides: Sequence[OverrideEntitlement] | None,
) -> Subscription:
    """A new (not yet stored) subscription with its plan prices overridden
    (``override_line_items``), its extra ``line_items`` added (starting with it by default) and
    its entitlement overrides stored. Errors name ``line_items[i].<field>``,
    ``override_line_items[i].<field>``, ``override_entitlements[i].<field>``."""
    lines = sub.line_items
    if override_line_items:
        lines = override_lines(uow, ctx, lines, override_line_items)
    for index, request in enumerate(line_items or ()):
        lines += (
            build_line(uow, ctx, sub, request, prefix=f"line_items[{index}].", default_start=sub.start_date),
        )
    if entitlement_overrides:
        override_entitlements(uow, ctx, sub, entitlement_overrides)
    return sub.model_copy(update={"line_items": lines})


def _charged_at_once(sub: Subscription, line: SubscriptionLineItem, proration: ProrationBehavior) -> bool:
    """Whether a line just added to ``sub`` is invoiced now: a one-time ADVANCE charge dated in
    the (already invoiced) current period, or a recurring ADVANCE fee starting in it with
    ``create_prorations``."""
    if not started_by(sub) or line.price_type is not PriceType.FIXED:
        return False
    if line.invoice_cadence is not InvoiceCadence.ADVANCE or line.start_date is None:
        return False
    if is_one_time(line):
        return one_time_charge_date(line, sub) < sub.current_period_end
    return proration is ProrationBehavior.CREATE_PRORATIONS and line.start_date < sub.current_period_end


def _save(uow: UnitOfWork, ctx: Context, claimed: Subscription, updated: Subscription) -> Subscription:
    """Store ``updated`` at ``claimed``'s version and record ``subscription.updated``."""
    saved = uow.subscriptions.update(updated.model_copy(update=ctx.touch()), expected_version=claimed.version)
    notifications.notify(uow, ctx, "subscription.updated", saved, uow.customers.find(saved.customer_id))
    return saved


def _with_line(sub: Subscription, line: SubscriptionLineItem, *more: SubscriptionLineItem) -> Subscription:
    """``sub`` with ``line`` replacing the line of its id, and ``more`` appended."""
    lines = tuple(line if li.id == line.id else li for li in sub.line_items)
    return sub.model_copy(update={"line_items": (*lines, *more)})


def add_line_item(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: LineItemCreate
) -> LineItemChange:
    """Add a line item to a live subscription (see the module doc). Raises ``NotFound`` for an
    unknown subscription, ``ValidationError`` naming the field, ``InvalidOperation`` for a
    cancelled subscription, ``VersionConflict`` when it changed concurrently."""
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    check_changeable(sub)
    default = (
        sub.start_date
        if sub.subscription_status is SubscriptionStatus.DRAFT
        else max(ctx.now, sub.start_date)
    )
    line = build_line(uow, ctx, sub, data, default_start=default)
    updated = sub.model_copy(update={"line_items": (*sub.line_items, line)})
    invoice = None
    if _charged_at_once(sub, line, data.proration_behavior):
        assert line.start_date is not None  # built lines always have one
        settled = settle_lines(
            uow,
            ctx,
            updated,
            key=line_charge_key(line.id),
            effective=max(line.start_date, sub.current_period_start),
            started=[line],
            in_full=[line.id] if is_one_time(line) else [],
            field="start_date",
        )
        updated, invoice = settled.subscription, settled.invoice
    saved = _save(uow, ctx, sub, updated)
    record_line_items(uow, ctx, [line])
    return LineItemChange(saved, line, invoice)


def _live_line(uow: UnitOfWork, line_item_id: str) -> tuple[Subscription, SubscriptionLineItem]:
    sub, line = find_line_item(uow, line_item_id)
    if sub.status is not Status.PUBLISHED:
        raise NotFound(f"subscription line item {line_item_id} not found")
    check_changeable(sub)
    return sub, line


def _commitment_of(line: SubscriptionLineItem) -> dict[str, Any]:
    return {name: getattr(line, name) for name in COMMITMENT_FIELDS}


def _new_values(
    uow: UnitOfWork, ctx: Context, sub: Subscription, line: SubscriptionLineItem, data: LineItemUpdate
) -> dict[str, Any]:
    """The line item fields ``data`` changes (a new price stored in ``uow`` when its values
    differ; fields equal to the line's are left out)."""
    sent = data.model_fields_set
    changes: dict[str, Any] = {}
    values = {name: getattr(data, name) for name in PRICE_VALUES if name in sent}
    if values:
        price = uow.prices.find(line.price_id)
        if price is None:
            raise ValidationError(f"price {line.price_id} of the line item is missing", field="price_id")
        override = OverrideLineItem.model_validate({"price_id": line.price_id, **values})
        made = override_price(uow, ctx, price, override, subscription_id=sub.id)
        if made is not None:
            changes["price_id"] = made.id
    if "quantity" in sent and data.quantity is not None and data.quantity != line.quantity:
        if line.price_type is not PriceType.FIXED:
            raise ValidationError(
                "a usage line item's quantity is measured; it cannot be set", field="quantity"
            )
        changes["quantity"] = data.quantity
    if "metadata" in sent:
        changes["metadata"] = data.metadata or {}
    if data.commitment_given():
        meter = uow.meters.find(line.meter_id) if line.meter_id else None
        committed = commit_line(sub, line, data, meter, current=_commitment_of(line))
        changes.update(_commitment_of(committed))
    return changes


def _replace(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    line: SubscriptionLineItem,
    changes: dict[str, Any],
    data: LineItemUpdate,
) -> LineItemChange:
    """End ``line`` at ``effective_from`` and start its replacement with ``changes`` there, with
    the proration ``data`` asks for."""
    at = data.effective_from or ctx.now
    check_effective(sub, line, at, field="effective_from")
    at = max(at, line.start_date or sub.start_date)
    replacement = line.model_copy(update={**changes, "id": ctx.ids.new("subs_line"), "start_date": at})
    updated = _with_line(sub, line.model_copy(update={"end_date": at}), replacement)
    invoice = credited = None
    if data.proration_behavior is ProrationBehavior.CREATE_PRORATIONS and is_recurring_advance_fee(line):
        settled = settle_lines(
            uow,
            ctx,
            updated,
            key=line_end_key(line.id, Period(sub.current_period_start, sub.current_period_end)),
            effective=at,
            ended=[line],
            started=[replacement],
            field="effective_from",
        )
        updated, invoice, credited = settled.subscription, settled.invoice, settled.credited
    saved = _save(uow, ctx, sub, updated)
    record_line_items(uow, ctx, [replacement])
    return LineItemChange(saved, replacement, invoice, credited)


def update_line_item(
    uow: UnitOfWork, ctx: Context, *, line_item_id: str, data: LineItemUpdate
) -> LineItemChange:
    """Change a line item (see the module doc): in place, or by ending it and starting a
    replacement (the answer's ``line_item``). Raises ``NotFound``, ``ValidationError`` naming the
    field, ``InvalidOperation`` (a cancelled subscription, an ended line, a one-time line already
    invoiced), ``VersionConflict``."""
    ctx.require(ENTITY, Action.WRITE)
    sub, line = _live_line(uow, line_item_id)
    if "end_date" in data.model_fields_set:
        moving = [name for name in (*PRICE_VALUES, "quantity") if name in data.model_fields_set]
        if moving or data.commitment_given():
            raise ValidationError(
                "end_date goes alone (metadata may come with it): change the price, quantity or "
                "commitment in another request",
                field="end_date",
            )
        check_end_date_edit(sub, line, data.end_date)
    changes = _new_values(uow, ctx, sub, line, data)
    if "end_date" in data.model_fields_set:
        changes["end_date"] = data.end_date
    elif "price_id" in changes or "quantity" in changes:
        if is_one_time(line) and one_time_invoiced(line, sub):
            raise InvalidOperation(
                f"one-time line item {line.id} is invoiced: its price and quantity are final"
            )
        later = line.start_date is not None and line.start_date >= sub.current_period_end
        if started_by(sub) and not is_one_time(line) and not later:
            return _replace(uow, ctx, sub, line, changes, data)
    changed = line.model_copy(update=changes)
    saved = _save(uow, ctx, sub, _with_line(sub, changed))
    return LineItemChange(saved, changed)


def delete_line_item(
    uow: UnitOfWork, ctx: Context, *, line_item_id: str, data: LineItemDelete
) -> LineItemChange:
    """End a line item at ``effective_from`` (see the module doc); the answer's ``line_item`` is
    the ended line (a draft's, removed, as it was). Raises ``NotFound``, ``ValidationError`` on
    ``effective_from`` (outside the subscription window, before the current period) or
    ``end_date`` (a one-time charge already invoiced), ``InvalidOperation`` (a cancelled
    subscription, a line already ended), ``VersionConflict``."""
    ctx.require(ENTITY, Action.WRITE)
    sub, line = _live_line(uow, line_item_id)
    if sub.subscription_status is SubscriptionStatus.DRAFT:
        remaining = tuple(li for li in sub.line_items if li.id != line.id)
        saved = _save(uow, ctx, sub, sub.model_copy(update={"line_items": remaining}))
        return LineItemChange(saved, line)
    end = deletion_end(sub, line, data.effective_from or ctx.now)
    ended = line.model_copy(update={"end_date": end})
    updated, credited = _with_line(sub, ended), None
    if data.proration_behavior is ProrationBehavior.CREATE_PRORATIONS:
        settled = settle_lines(
            uow,
            ctx,
            updated,
            key=line_end_key(line.id, Period(sub.current_period_start, sub.current_period_end)),
            effective=end,
            ended=[line],
            field="effective_from",
        )
        updated, credited = settled.subscription, settled.credited
    saved = _save(uow, ctx, sub, updated)
    return LineItemChange(saved, ended, None, credited)
