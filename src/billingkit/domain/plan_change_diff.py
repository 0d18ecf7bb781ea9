"""Which lines a plan change in place keeps, ends and starts (reference notes §3.4): pure.

A subscription moving from plan A to plan B at instant ``effective`` keeps its id, anchor and
period; its plan lines in force at ``effective`` are compared with B's prices:

* a line whose price is **identical in billing terms** to a B price (:func:`billing_terms`: the
  same type, billing model, cadences, period and count, currency, meter, pricing unit, and the
  same amount, tiers, tier mode, package transform and minimum quantity) is **carried**: the same
  line (same id, quantity, dates) re-pointed at the B price. It moves no money: it bills what it
  billed before.
* every other plan line is **closing**: it ends at ``effective`` (or at its own start when it had
  not started then: it never bills).
* every B price no line was matched with is **opening**: a new line from ``effective``.

Each B price carries at most one line, each line is carried by at most one price, first come
first served in the order of the lines and of the prices. Example: A = {base 30.00 ADVANCE,
calls 0.10 ARREAR}, B = {base 90.00 ADVANCE, calls 0.10 ARREAR}: the calls line is carried, the
base line closes and a 90.00 base line opens.

**Quantities.** A carried line keeps its quantity. An opening USAGE line starts at 0 (the meter
measures it). An opening FIXED line starts at its price's ``min_quantity``, else 1, except when
the change replaces exactly one recurring FIXED line by exactly one recurring FIXED price: the
seat count then carries over (raised to the new price's ``min_quantity``). Example: 5 seats at
10.00 -> a plan with one 20.00 seat price: 5 seats at 20.00. When FIXED lines with another
quantity than 1 close and the replacement is ambiguous, :attr:`PlanDiff.warnings` says so.

Lines of add-ons, of phases and lines added to the subscription itself are not plan lines and are
not compared here (add-ons follow the request's entity policy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.catalog import Price
from billingkit.domain.catalog.prices import BillingCadence, PriceType
from billingkit.domain.subscriptions import SubscriptionLineItem

__all__ = ["PlanDiff", "billing_terms", "closing_end", "diff_plan_lines", "is_plan_line", "opening_quantity"]

_ONE = Decimal(1)


def billing_terms(price: Price) -> tuple[Any, ...]:
    """What ``price`` bills and how, without what names or dates it: two prices with equal terms
    charge the same money for the same quantity over the same period. The catalogue fields
    (id, owner, display name, lookup key, description, trial days, dates) are left out."""
    return (
        price.type,
        price.billing_model,
        price.billing_cadence,
        price.billing_period,
        price.billing_period_count,
        price.invoice_cadence,
        price.currency,
        price.meter_id,
        price.price_unit_type,
        price.price_unit_id,
        price.to_spec(),
    )


def is_plan_line(line: SubscriptionLineItem) -> bool:
    """A line copied from the subscription's plan (not an add-on's, a phase's, or an extra line)."""
    return (
        line.entity_type == "plan"
        and line.addon_association_id is None
        and line.subscription_phase_id is None
    )


def closing_end(line: SubscriptionLineItem, effective: datetime) -> datetime:
    """The end a closing line gets: ``effective``, or its own start when that is later."""
    start = line.start_date or effective
    return max(effective, start)


def _recurring_fixed_price(price: Price) -> bool:
    return price.type is PriceType.FIXED and price.billing_cadence is BillingCadence.RECURRING


def opening_quantity(price: Price, carried_over: Decimal | None = None) -> Decimal:
    """The quantity an opening line of ``price`` starts at (see the module doc): USAGE 0; FIXED
    ``carried_over`` (a replaced line's seats) or 1, never below the price's ``min_quantity``."""
    if price.type is not PriceType.FIXED:
        return Decimal(0)
    quantity = carried_over if carried_over is not None else _ONE
    if price.min_quantity is not None and quantity < price.min_quantity:
        return price.min_quantity
    return quantity


@dataclass(frozen=True, slots=True)
class PlanDiff:
    """The diff of a plan change (see the module doc). ``carried``: (line as it was, the target
    price it is re-pointed at); ``closing``: lines as they were (the caller ends them);
    ``opening``: (target price, the quantity its new line starts at); ``warnings``: what the
    caller should tell the user."""

    carried: tuple[tuple[SubscriptionLineItem, Price], ...]
    closing: tuple[SubscriptionLineItem, ...]
    opening: tuple[tuple[Price, Decimal], ...]
    warnings: tuple[str, ...] = ()


def diff_plan_lines(
    lines: Sequence[SubscriptionLineItem],
    prices: Mapping[str, Price],
    targets: Sequence[Price],
    effective: datetime,
) -> PlanDiff:
    """Compare the plan lines of ``lines`` in force at ``effective`` (not ended by then) with the
    target plan's prices ``targets``; ``prices`` holds every line's price by id. Other lines are
    ignored. Raises ``KeyError`` for a line whose price is missing from ``prices``."""
    live = [
        line for line in lines if is_plan_line(line) and (line.end_date is None or line.end_date > effective)
    ]
    free = list(targets)
    carried: list[tuple[SubscriptionLineItem, Price]] = []
    closing: list[SubscriptionLineItem] = []
    for line in live:
        terms = billing_terms(prices[line.price_id])
        match = next((price for price in free if billing_terms(price) == terms), None)
        if match is None:
            closing.append(line)
        else:
            free.remove(match)
            carried.append((line, match))
    closed_fixed = [
        line
        for line in closing
        if line.price_type is PriceType.FIXED and _recurring_fixed_price(prices[line.price_id])
    ]
    opened_fixed = [price for price in free if _recurring_fixed_price(price)]
    seats = closed_fixed[0].quantity if len(closed_fixed) == 1 and len(opened_fixed) == 1 else None
    warnings: list[str] = []
    if seats is None and opened_fixed and any(line.quantity != _ONE for line in closed_fixed):
        warnings.append(
            "the quantities of the closing fixed line items were not carried over (no one-to-one "
            "replacement); the new fixed line items start at their prices' minimum quantity or 1"
        )
    opening = tuple(
        (price, opening_quantity(price, seats if _recurring_fixed_price(price) else None)) for price in free
    )
    return PlanDiff(tuple(carried), tuple(closing), opening, tuple(warnings))
