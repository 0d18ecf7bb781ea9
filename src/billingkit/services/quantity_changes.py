"""``type: quantity_change`` of ``POST /subscriptions/{id}/modify/execute``: new quantities for
some of a subscription's FIXED line items, prorated (reference notes §3.5, §3.1).

For each named line, the line ends at ``effective_date`` (default now) and a **replacement** starts
there: a new id, the new quantity, the same price, terms, metadata and end date. So every invoice
line names one quantity, and a line's history stays readable. A one-time line not invoiced yet
changes in place (nothing was billed for it; its charge is billed later at the new quantity).

Money goes through :mod:`billingkit.services.change_settlements`, always prorated (the reference
prorates every quantity change; its request has no ``proration_behavior``): the ended lines'
unused ADVANCE time is credited (capped at what the line paid this period), the replacements are
charged for the rest of the period, and the request settles as one: a net charge is one
``SUBSCRIPTION_UPDATE`` invoice, a net credit goes to the customer's PRE_PAID wallet. A trialing
subscription has paid nothing: its lines change and no money moves.

Example: 5 -> 8 seats at 10.00 a month, a third into a 30-day month: charge 80.00 x 2/3 = 53.33,
credit 50.00 x 2/3 = 33.33, one invoice of 20.00. 8 -> 5: 20.00 into the wallet, no invoice.

Checked before anything is written (a ``ValidationError`` names the field,
``quantity_change_params.line_items[i].<field>``): the line is one of this subscription's, live at
the effective date, FIXED (a usage line's quantity is measured), not a one-time line already
invoiced, named once; the quantity is above zero and differs from the line's; the effective date
lies in the current period, not before the line's start, and is the same for every line of the
request (one settlement, one invoice). Only ``active`` and ``trialing`` subscriptions
(``InvalidOperation`` otherwise).

**Retries.** A line, once replaced, is ended: the same request again cannot change it twice. The
change is recorded (``subscription_changes``, kind ``quantity_change``) under a key naming the
subscription and its lines; the same request again (same lines, quantities and given dates)
answers what the first did and moves nothing; a different one is refused on its ended lines.

**Pay first.** :func:`pending_quantity_change` checks and prices a change without writing it (a
``modify_subscription`` checkout session stores its invoice as a ``DRAFT`` under the settlement
key); once paid, :func:`change_quantities` carries it out and issues that very invoice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Self

from pydantic import Field, model_validator

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.invoices import Invoice
from billingkit.domain.line_item_rules import is_one_time, one_time_invoiced
from billingkit.domain.subscription_changes import ChangeKind, SubscriptionChange
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionStatus
from billingkit.domain.validation import DecimalText, InputModel, NonEmptyStr, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.change_settlements import ChangeQuote, change_invoice, quote_change, settle_change
from billingkit.services.context import Context
from billingkit.services.modify_resources import ChangedResources
from billingkit.services.records import new_fields
from billingkit.services.subscription_lines import record_line_items
from billingkit.services.wallet_transactions import details

__all__ = [
    "LineItemQuantityChange",
    "PendingQuantityChange",
    "SubModifyQuantityChangeRequest",
    "change_quantities",
    "pending_quantity_change",
]

#: The statuses whose line quantities may change.
CHANGEABLE = frozenset({SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING})
MAX_LINES = 100
FIELD = "quantity_change_params.line_items"


class LineItemQuantityChange(InputModel):
    """Line item ``id`` of the subscription at ``quantity`` (a decimal above zero) from
    ``effective_date`` (default now)."""

    id: NonEmptyStr
    quantity: Annotated[DecimalText, Field(gt=0)]
    effective_date: UtcDatetime | None = None


class SubModifyQuantityChangeRequest(InputModel):
    """The reference's ``SubModifyQuantityChangeRequest``: one to 100 line items."""

    line_items: Annotated[list[LineItemQuantityChange], Field(min_length=1, max_length=MAX_LINES)]

    @model_validator(mode="after")
    def _each_line_once(self) -> Self:
        seen: set[str] = set()
        for i, item in enumerate(self.line_items):
            if item.id in seen:
                raise ValidationError(f"line item {item.id} is named twice", field=f"{FIELD}[{i}].id")
            seen.add(item.id)
        return self

    def fingerprint(self) -> str:
        """The digest of what the request asks (its lines in id order, each quantity as a plain
        decimal, each effective date as given)."""
        asked = sorted(
            (
                item.id,
                format(item.quantity.normalize(), "f"),
                None if item.effective_date is None else item.effective_date.isoformat(),
            )
            for item in self.line_items
        )
        return hashlib.sha256(json.dumps(asked).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class _Plan:
    """A checked quantity change, before anything is written: ``updated`` (the subscription with
    its lines ended, replaced or changed), the ``ended`` lines as they were, the ``replacements``
    (new lines), the lines changed ``in_place``, and ``at``, the effective instant."""

    updated: Subscription
    ended: tuple[SubscriptionLineItem, ...]
    replacements: tuple[SubscriptionLineItem, ...]
    in_place: tuple[SubscriptionLineItem, ...]
    at: datetime


def _key(sub: Subscription, lines: Sequence[str]) -> str:
    """The change's idempotency key: its subscription and lines (a line is replaced only once)."""
    digest = hashlib.sha256(",".join(sorted(lines)).encode()).hexdigest()[:32]
    return f"quantity_change:{sub.id}:{digest}"


def _effective(ctx: Context, sub: Subscription, data: SubModifyQuantityChangeRequest) -> datetime:
    """The request's one effective instant: every line's ``effective_date`` (default now) must be
    the same, inside the current period."""
    at: datetime | None = None
    for i, item in enumerate(data.line_items):
        when = item.effective_date or ctx.now
        name = f"{FIELD}[{i}].effective_date"
        if at is not None and when != at:
            raise ValidationError(
                "every line item of one quantity change takes effect at the same instant "
                "(one settlement): send the others in another request",
                field=name,
            )
        if not sub.current_period_start <= when < sub.current_period_end:
            raise ValidationError(
                f"effective_date must lie in the current period [{sub.current_period_start.isoformat()}, "
                f"{sub.current_period_end.isoformat()})",
                field=name,
            )
        at = when
    assert at is not None  # the request has at least one line
    return at


def _check_line(
    sub: Subscription, line: SubscriptionLineItem | None, item: LineItemQuantityChange, i: int, at: datetime
) -> SubscriptionLineItem:
    prefix = f"{FIELD}[{i}]."
    if line is None:
        raise ValidationError(f"subscription {sub.id} has no line item {item.id}", field=prefix + "id")
    if line.end_date is not None and line.end_date <= at:
        raise ValidationError(
            f"line item {line.id} ended at {line.end_date.isoformat()}", field=prefix + "id"
        )
    if line.price_type is not PriceType.FIXED:
        raise ValidationError(
            f"line item {line.id} is a usage line: its quantity is measured, it cannot be set",
            field=prefix + "id",
        )
    if is_one_time(line) and one_time_invoiced(line, sub):
        raise ValidationError(
            f"one-time line item {line.id} is invoiced: its quantity is final", field=prefix + "id"
        )
    if item.quantity == line.quantity:
        raise ValidationError(
            f"line item {line.id} already has quantity {line.quantity}", field=prefix + "quantity"
        )
    start = line.start_date or sub.start_date
    if at < start and not is_one_time(line):
        raise ValidationError(
            f"effective_date is before line item {line.id} starts ({start.isoformat()})",
            field=prefix + "effective_date",
        )
    return line


def _plan(ctx: Context, sub: Subscription, data: SubModifyQuantityChangeRequest) -> _Plan:
    """Check ``data`` against ``sub`` (see the module doc) and build the change; writes nothing."""
    if sub.subscription_status not in CHANGEABLE:
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_status.value}: only an active or trialing "
            "subscription's quantities can change"
        )
    at = _effective(ctx, sub, data)
    lines = {line.id: line for line in sub.line_items}
    changed: dict[str, SubscriptionLineItem] = {}
    ended: list[SubscriptionLineItem] = []
    replacements: list[SubscriptionLineItem] = []
    in_place: list[SubscriptionLineItem] = []
    for i, item in enumerate(data.line_items):
        line = _check_line(sub, lines.get(item.id), item, i, at)
        if is_one_time(line):
            changed[line.id] = line.model_copy(update={"quantity": item.quantity})
            in_place.append(changed[line.id])
            continue
        changed[line.id] = line.model_copy(update={"end_date": at})
        ended.append(line)
        replacements.append(
            line.model_copy(
                update={"id": ctx.ids.new("subs_line"), "quantity": item.quantity, "start_date": at}
            )
        )
    kept = tuple(changed.get(line.id, line) for line in sub.line_items)
    updated = sub.model_copy(update={"line_items": (*kept, *replacements)})
    return _Plan(updated, tuple(ended), tuple(replacements), tuple(in_place), at)


def _changed_lines(plan: _Plan) -> tuple[tuple[SubscriptionLineItem, str], ...]:
    closed = {line.id for line in plan.ended}
    ended = tuple((line, "ended") for line in plan.updated.line_items if line.id in closed)
    return (
        *ended,
        *((line, "created") for line in plan.replacements),
        *((line, "updated") for line in plan.in_place),
    )


def _replay(uow: UnitOfWork, record: SubscriptionChange, sub: Subscription) -> ChangedResources:
    """What the recorded change answered, read again (nothing moves)."""
    invoice = uow.invoices.find(record.invoice_id) if record.invoice_id else None
    movement = (
        uow.wallet_transactions.find(record.wallet_transaction_id) if record.wallet_transaction_id else None
    )
    wanted = dict(record.result.get("line_items", {}))
    lines = tuple((line, wanted[line.id]) for line in sub.line_items if line.id in wanted)
    return ChangedResources(
        invoices=(invoice,) if invoice is not None else (),
        wallet_transactions=tuple(details(uow, [movement])) if movement is not None else (),
        line_items=lines,
    )


def _quote(uow: UnitOfWork, ctx: Context, plan: _Plan, *, use_credits: bool = True) -> ChangeQuote:
    return quote_change(
        uow,
        ctx,
        plan.updated,
        ended=plan.ended,
        started=plan.replacements,
        effective=plan.at,
        prorate=True,
        use_credits=use_credits,
    )


def _settle_key(key: str, at: datetime) -> str:
    return f"{key}@{at.isoformat()}"


@dataclass(frozen=True, slots=True)
class PendingQuantityChange:
    """A checked quantity change not carried out yet (a checkout session's): ``request`` with
    every line's ``effective_date`` set to ``at``; ``invoice`` (built, not stored: the change's
    settlement invoice, priced without prepaid credits, or None when the change nets no charge),
    stored under the key :func:`change_quantities` settles ``request`` with, so that invoice is the
    one the change issues once applied."""

    request: SubModifyQuantityChangeRequest
    at: datetime
    invoice: Invoice | None


def pending_quantity_change(
    uow: UnitOfWork, ctx: Context, sub: Subscription, data: SubModifyQuantityChangeRequest
) -> PendingQuantityChange:
    """Check ``data`` against ``sub`` as :func:`change_quantities` would, and price it without
    writing anything (see :class:`PendingQuantityChange`). Raises as :func:`change_quantities`."""
    plan = _plan(ctx, sub, data)
    fixed = data.model_copy(
        update={
            "line_items": [item.model_copy(update={"effective_date": plan.at}) for item in data.line_items]
        }
    )
    key = _settle_key(_key(sub, [item.id for item in data.line_items]), plan.at)
    return PendingQuantityChange(
        fixed, plan.at, change_invoice(ctx, _quote(uow, ctx, plan, use_credits=False), key=key)
    )


def change_quantities(
    uow: UnitOfWork, ctx: Context, sub: Subscription, data: SubModifyQuantityChangeRequest
) -> tuple[Subscription, ChangedResources]:
    """Carry out quantity change ``data`` on stored ``sub`` (see the module doc): the subscription
    saved and what else changed. Raises ``ValidationError`` naming the field or
    ``InvalidOperation`` (nothing written then), ``VersionConflict`` when the subscription
    changed meanwhile."""
    key = _key(sub, [item.id for item in data.line_items])
    fingerprint = data.fingerprint()
    earlier = uow.subscription_changes.find_one(idempotency_key=key, include_archived=True)
    if earlier is not None and earlier.request_fingerprint == fingerprint:
        return sub, _replay(uow, earlier, sub)
    plan = _plan(ctx, sub, data)
    quote = _quote(uow, ctx, plan)
    settled = settle_change(uow, ctx, quote, key=_settle_key(key, plan.at))
    saved = uow.subscriptions.update(
        settled.subscription.model_copy(update=ctx.touch()), expected_version=sub.version
    )
    record_line_items(uow, ctx, plan.replacements)
    changed_lines = _changed_lines(plan)
    movement = settled.transaction
    uow.subscription_changes.add(
        SubscriptionChange.model_validate(
            {
                **new_fields(ctx, "subs_change"),
                "subscription_id": sub.id,
                "change_kind": ChangeKind.QUANTITY_CHANGE,
                "from_plan_id": sub.plan_id,
                "to_plan_id": sub.plan_id,
                "effective_at": plan.at,
                "invoice_id": settled.invoice.id if settled.invoice is not None else None,
                "wallet_transaction_id": movement.id if movement is not None else None,
                "idempotency_key": key,
                "request_fingerprint": fingerprint,
                "result": {
                    "line_items": {line.id: action for line, action in changed_lines},
                    "net_amount": str(quote.settlement.net),
                },
            }
        )
    )
    notifications.notify(uow, ctx, "subscription.updated", saved, uow.customers.find(saved.customer_id))
    changed = ChangedResources(
        invoices=(settled.invoice,) if settled.invoice is not None else (),
        wallet_transactions=tuple(details(uow, [movement])) if movement is not None else (),
        line_items=tuple((_saved_line(saved, line), action) for line, action in changed_lines),
    )
    return saved, changed


def _saved_line(saved: Subscription, line: SubscriptionLineItem) -> SubscriptionLineItem:
    return next((stored for stored in saved.line_items if stored.id == line.id), line)
