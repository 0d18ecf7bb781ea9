"""Usage priced for analytics: which prices apply to whose usage and when (:class:`Charge`), and
their cost per group and window, computed from the usage store's answers in one batch.

Revenue side: :func:`subscription_charges` finds the USAGE lines of customers' subscriptions
(published subscriptions that are not drafts or incomplete), each over the part of the range
where both the line and its subscription run. Cost side: a cost sheet's price applies to a
customer's usage over the whole range. :func:`price_usage` asks the store, for every charge, the
usage from the charge's start to each window's end, and turns those into costs with
:mod:`billingkit.domain.usage_analytics` (window costs are increments that add up exactly).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from billingkit.domain.catalog import Price, PriceType
from billingkit.domain.customers import Customer
from billingkit.domain.money import ZERO
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.usage import MeterSpec, UsageQuery, UsageResult
from billingkit.domain.usage_analytics import Window, usage_cost
from billingkit.ports import UnitOfWork

__all__ = ["Charge", "PricedUsage", "price_usage", "subscription_charges"]

_BILLED = frozenset(
    {
        SubscriptionStatus.ACTIVE,
        SubscriptionStatus.TRIALING,
        SubscriptionStatus.PAUSED,
        SubscriptionStatus.CANCELLED,
    }
)


@dataclass(frozen=True)
class Charge:
    """``price`` applied to the usage of customer ``external_customer_id`` over ``[start, end)``."""

    customer_id: str
    external_customer_id: str
    price: Price
    start: datetime
    end: datetime
    subscription_id: str | None = None
    line_item_id: str | None = None


@dataclass
class PricedUsage:
    """The cost of one group: in total and per window, in ``currency`` (the charges' currency)."""

    cost: Decimal = ZERO
    points: list[Decimal] = field(default_factory=list)
    currencies: set[str] = field(default_factory=set)
    charges: list[Charge] = field(default_factory=list)


def _subscriptions(uow: UnitOfWork, customer_ids: Collection[str] | None) -> list[Subscription]:
    filters: tuple[Filter, ...] = ()
    if customer_ids is not None:
        filters = (Filter("customer_id", Op.IN, sorted(customer_ids)),)
    found: list[Subscription] = []
    offset = 0
    while True:
        page = uow.subscriptions.list(
            ListQuery(filters=filters, limit=MAX_LIMIT, offset=offset, status=Status.PUBLISHED)
        )
        found.extend(page.items)
        offset += len(page.items)
        if not page.items or offset >= page.total:
            return found


def subscription_charges(
    uow: UnitOfWork,
    customers: dict[str, Customer] | None,
    meter_ids: Collection[str],
    start: datetime,
    end: datetime,
) -> dict[str, list[Charge]]:
    """Per meter, the USAGE lines of the customers' subscriptions (``None``: every customer's)
    running in ``[start, end)``, each clipped to where its line and subscription run."""
    subs = [
        s
        for s in _subscriptions(uow, None if customers is None else customers.keys())
        if s.subscription_status in _BILLED
    ]
    lines = [
        (sub, line)
        for sub in subs
        for line in sub.line_items
        if line.price_type is PriceType.USAGE and line.meter_id in meter_ids
    ]
    if not lines:
        return {}
    if customers is None:
        customers = {c.id: c for c in uow.customers.find_many(sorted({sub.customer_id for sub, _ in lines}))}
    prices = {p.id: p for p in uow.prices.find_many(sorted({line.price_id for _, line in lines}))}
    out: dict[str, list[Charge]] = defaultdict(list)
    for sub, line in lines:
        customer = customers.get(sub.customer_id)
        price = prices.get(line.price_id)
        if customer is None or price is None or line.meter_id is None:
            continue
        begins = max(start, sub.start_date, line.start_date or sub.start_date)
        ends = min([end, *(e for e in (sub.end_date, line.end_date) if e is not None)])
        if begins < ends:
            out[line.meter_id].append(
                Charge(customer.id, customer.external_id, price, begins, ends, sub.id, line.id)
            )
    return dict(out)


def price_usage(
    uow: UnitOfWork, spec: MeterSpec, charges: Sequence[Charge], windows: Sequence[Window]
) -> dict[str | None, PricedUsage]:
    """The cost of each group of ``spec``'s usage under ``charges``, in total and per window
    (``points`` has one cost per window; empty without windows). One batch of usage questions."""
    questions: list[UsageQuery] = []
    plans: list[tuple[Charge, list[datetime]]] = []
    for charge in charges:

        def clip(instant: datetime, charge: Charge = charge) -> datetime:
            return min(max(instant, charge.start), charge.end)

        ends = sorted({clip(e) for _, e in windows} | {charge.end} - {charge.start})
        plans.append((charge, ends))
        customers = frozenset({charge.external_customer_id})
        questions += [UsageQuery(spec, charge.start, e, customers) for e in ends]
    answers = iter(uow.usage.aggregate(questions) if questions else [])
    grouped = spec.grouped
    out: dict[str | None, PricedUsage] = {}
    for charge, ends in plans:
        so_far: dict[datetime, UsageResult] = {e: next(answers) for e in ends}
        keys = {g.key for g in so_far[charge.end].groups} if grouped else {None}
        price = charge.price.to_spec()
        for key in keys:
            priced = out.setdefault(key, PricedUsage(points=[ZERO] * len(windows)))
            priced.currencies.add(charge.price.currency)
            priced.charges.append(charge)
            costs = {charge.start: ZERO}
            costs.update((e, usage_cost(price, so_far[e], key, grouped)) for e in ends)
            priced.cost += costs[charge.end]
            for index, (window_start, window_end) in enumerate(windows):
                low = min(max(window_start, charge.start), charge.end)
                high = min(max(window_end, charge.start), charge.end)
                if high > low:
                    priced.points[index] += costs[high] - costs[low]
    return out
