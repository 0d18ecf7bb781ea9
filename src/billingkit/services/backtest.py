"""Pricing backtest: what past billing periods would have cost under a candidate plan or prices.

For each selected subscription and each of its completed billing periods:

* **billed** is what its live invoices (draft or finalized) charged for that period: the sum of
  the amounts of their lines whose service period lies inside it, whether billed in advance (the
  period's fee, on the previous invoice) or in arrear (its usage, on the period's closing invoice);
* **candidate** is what the candidate charges for the same period, computed by the billing core
  itself (:func:`~billingkit.services.invoicing.compute_invoices`): the subscription's plan lines
  are replaced by lines of the candidate's prices (add-on lines stay), the usage of the period is
  measured from the stored events, and the period's charges, in advance and in arrear, are
  assembled as one closing invoice of the period (the same windows, allowances, proration of a
  first stub, tiers, packages and line commitments as the billing run);
* **difference** is ``candidate - billed``.

Both are line amounts before discounts, taxes and prepaid credits: what the price list decides.
Example: a period billed 49.00 + 160.44 whose usage costs 172.00 under a candidate usage price
with the same fee shows billed 209.44, candidate 221.00, difference 11.56.

Nothing is written. The usage of all selected periods is read in one batch (the usage store runs
one grouped statement per meter), so 10,000 customer-months take a few seconds on SQLite.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Self

from pydantic import Field, ModelWrapValidatorHandler, model_validator

from billingkit.domain.access import Action
from billingkit.domain.catalog import Meter, Plan, Price, PriceEntityType
from billingkit.domain.customers import Customer
from billingkit.domain.input_rules import prefixed, validate_naming_items
from billingkit.domain.invoices import BillingReason, InvoiceStatus
from billingkit.domain.money import ZERO
from billingkit.domain.periods import InvoiceCadence, Period
from billingkit.domain.queries import Filter, Op
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.validation import InputModel, UtcDatetime
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.invoicing import Charge, compute_invoices, load_snapshot
from billingkit.services.owned_prices import prepare_price, prices_of
from billingkit.services.prices import PriceInput
from billingkit.services.records import get_live, list_where_in
from billingkit.services.subscription_setup import matching_prices, plan_line_items

if TYPE_CHECKING:
    import pandas

__all__ = ["Backtest", "BacktestRequest", "BacktestRow", "BacktestSummary", "backtest"]

#: Subscriptions that have billed periods (a draft has none yet).
_BILLED_STATUSES = [s.value for s in SubscriptionStatus if s is not SubscriptionStatus.DRAFT]
_LIVE_INVOICES = Filter("invoice_status", Op.IN, [InvoiceStatus.DRAFT.value, InvoiceStatus.FINALIZED.value])


class BacktestRequest(InputModel):
    """What to re-price and under what.

    * ``plan_id``: a stored plan whose prices (and metered entitlements) are the candidate; or
    * ``prices``: candidate prices in the shape ``plans.create(prices=[...])`` takes, not stored;
      they replace the plan's prices and the subscribed plan's entitlements still apply.
    * ``customer_ids``: the customers to re-price (default: every customer with a subscription);
    * ``subscribed_plan_id``: only subscriptions to this plan (default: all);
    * ``since`` / ``until``: only periods starting at or after ``since`` and ending at or before
      ``until``; ``periods``: then only the last ``periods`` of each subscription.
    """

    plan_id: Annotated[str, Field(max_length=64)] | None = None
    prices: list[PriceInput] | None = None
    customer_ids: list[Annotated[str, Field(max_length=64)]] | None = None
    subscribed_plan_id: Annotated[str, Field(max_length=64)] | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    periods: Annotated[int, Field(ge=1, le=1200)] | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_price(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """A price that breaks one of its own rules is named ``prices[i].<field>``."""
        return validate_naming_items(data, handler, field="prices", item_model=PriceInput)


@dataclass(frozen=True, slots=True)
class BacktestRow:
    """One customer-period: what was billed, what the candidate charges, and the difference
    (``candidate - billed``), all exact in ``currency``."""

    customer_id: str
    external_customer_id: str
    subscription_id: str
    plan_id: str
    currency: str
    period_start: datetime
    period_end: datetime
    billed: Decimal
    candidate: Decimal
    difference: Decimal


@dataclass(frozen=True, slots=True)
class BacktestSummary:
    """Totals of a backtest: ``revenue_change`` per currency (Σ difference), and how many
    customers pay more (``worse_off``), less (``better_off``) or the same (``unchanged``) in total
    over their periods."""

    customer_periods: int
    customers: int
    billed: dict[str, Decimal]
    candidate: dict[str, Decimal]
    revenue_change: dict[str, Decimal]
    better_off: int
    worse_off: int
    unchanged: int


@dataclass(frozen=True, slots=True)
class Backtest:
    """The result of :func:`backtest`: one :class:`BacktestRow` per customer-period, ordered by
    customer, subscription and period."""

    rows: tuple[BacktestRow, ...]

    def summary(self) -> BacktestSummary:
        """Revenue change per currency and customers better or worse off (see
        :class:`BacktestSummary`)."""
        billed: dict[str, Decimal] = defaultdict(lambda: ZERO)
        candidate: dict[str, Decimal] = defaultdict(lambda: ZERO)
        per_customer: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
        for row in self.rows:
            billed[row.currency] += row.billed
            candidate[row.currency] += row.candidate
            per_customer[(row.customer_id, row.currency)] += row.difference
        changes = list(per_customer.values())
        return BacktestSummary(
            customer_periods=len(self.rows),
            customers=len({row.customer_id for row in self.rows}),
            billed=dict(billed),
            candidate=dict(candidate),
            revenue_change={c: candidate[c] - billed[c] for c in billed},
            better_off=sum(1 for d in changes if d < ZERO),
            worse_off=sum(1 for d in changes if d > ZERO),
            unchanged=sum(1 for d in changes if d == ZERO),
        )

    def to_pandas(self, *, money: str = "decimal") -> pandas.DataFrame:
        """The rows as a DataFrame (one row per customer-period; ``billed``, ``candidate`` and
        ``difference`` as ``Decimal``, or ``float`` with ``money="float"``). Needs the
        ``notebook`` extra."""
        from billingkit.simulation.frames import backtest_frame

        return backtest_frame(self, money=money)

    def __repr__(self) -> str:
        summary = self.summary()
        change = ", ".join(f"{c} {v:+}" for c, v in sorted(summary.revenue_change.items())) or "none"
        return (
            f"<Backtest {summary.customer_periods} customer-periods, {summary.customers} customers, "
            f"revenue change {change}, {summary.better_off} better off, {summary.worse_off} worse off>"
        )


def backtest(uow: UnitOfWork, ctx: Context, *, request: BacktestRequest) -> Backtest:
    """Re-price the completed periods of the selected subscriptions under the candidate (see the
    module docstring). Writes nothing.

    Raises ``PermissionDenied`` unless the actor may read subscriptions, invoices and events;
    ``ValidationError`` when neither or both of ``plan_id`` and ``prices`` are given, when
    a candidate price is invalid (field ``prices[i].<field>``), or when the candidate has no
    prices in a subscription's currency and billing period; ``NotFound`` for an unknown plan.
    """
    for entity in ("subscription", "invoice", "event"):  # what it reads, beside the catalogue
        ctx.require(entity, Action.READ)
    if (request.plan_id is None) == (request.prices is None):
        raise ValidationError("give the candidate as plan_id or as prices (one of them)", field="plan_id")
    candidate_plan, candidate_prices = _candidate(uow, ctx, request)
    subs = _subscriptions(uow, request)
    ends = {sub.id: _completed_until(sub, ctx.now) for sub in subs}
    chosen_subs = [(sub, periods) for sub in subs if (periods := _periods(sub, ends[sub.id], request))]
    owners: dict[str, Plan] = {}
    if candidate_plan is None:  # bare prices stand in for each subscription's own plan
        owners = {p.id: p for p in uow.plans.find_many({sub.plan_id for sub, _ in chosen_subs})}
    meters = {m.id: m for m in uow.meters.find_many({p.meter_id for p in candidate_prices if p.meter_id})}
    customers = {c.id: c for c in uow.customers.find_many({sub.customer_id for sub, _ in chosen_subs})}
    swapped: list[Subscription] = []
    chosen: list[tuple[Subscription, list[Period]]] = []
    subscribed = {sub.id: sub.plan_id for sub in subs}
    for sub, periods in chosen_subs:
        plan = candidate_plan or owners.get(sub.plan_id)
        if plan is None:
            raise ValidationError(f"plan {sub.plan_id} of subscription {sub.id} is missing", field="plan_id")
        twin = _with_candidate(uow, ctx, sub, plan, candidate_prices, meters, customers[sub.customer_id])
        swapped.append(twin)
        chosen.append((twin, periods))
    if not chosen:
        return Backtest(())
    snapshot = load_snapshot(uow, swapped, at=ctx.now, credits=False)
    snapshot.prices.update((p.id, p) for p in candidate_prices)
    # A cumulative commitment counts the usage of the window's earlier periods: the backtest
    # counts its own, in period order, instead of what was billed under the old prices.
    snapshot.committed_usage = {sub_id: [] for sub_id in snapshot.committed_usage}
    reason = BillingReason.SUBSCRIPTION_CYCLE
    charges = [Charge(twin, reason, "period_end", period) for twin, periods in chosen for period in periods]
    computed = compute_invoices(uow, charges, snapshot, as_of=ctx.now)
    billed = _billed(uow, [sub for sub, _ in chosen])
    rows: list[BacktestRow] = []
    for done in computed:
        sub, period = done.charge.subscription, done.charge.period
        customer = snapshot.customers[sub.customer_id]
        was = _billed_in(billed.get(sub.id, ()), period)
        now = done.draft.subtotal
        rows.append(
            BacktestRow(
                customer_id=sub.customer_id,
                external_customer_id=customer.external_id,
                subscription_id=sub.id,
                plan_id=subscribed[sub.id],
                currency=sub.currency,
                period_start=period.start,
                period_end=period.end,
                billed=was,
                candidate=now,
                difference=now - was,
            )
        )
    rows.sort(key=lambda r: (r.external_customer_id, r.subscription_id, r.period_start))
    return Backtest(tuple(rows))


def _candidate(uow: UnitOfWork, ctx: Context, request: BacktestRequest) -> tuple[Plan | None, list[Price]]:
    """The candidate plan (None for bare prices) and its live prices."""
    if request.plan_id is not None:
        plan = get_live(uow.plans, "plan", request.plan_id)
        return plan, prices_of(uow, PriceEntityType.PLAN, plan.id)
    prices: list[Price] = []
    for i, data in enumerate(request.prices or ()):
        try:
            prices.append(
                prepare_price(uow, ctx, data, entity_type=PriceEntityType.PLAN, entity_id="plan_candidate")
            )
        except ValidationError as exc:
            raise prefixed(exc, f"prices[{i}].") from None
    if not prices:
        raise ValidationError("the candidate needs at least one price", field="prices")
    return None, prices


def _subscriptions(uow: UnitOfWork, request: BacktestRequest) -> list[Subscription]:
    also = [Filter("subscription_status", Op.IN, _BILLED_STATUSES)]
    if request.subscribed_plan_id is not None:
        also.append(Filter("plan_id", Op.EQ, request.subscribed_plan_id))
    if request.customer_ids is not None:
        return list_where_in(uow.subscriptions, "customer_id", request.customer_ids, *also)
    return list_where_in(uow.subscriptions, "subscription_status", _BILLED_STATUSES, *also[1:])


def _completed_until(sub: Subscription, now: datetime) -> datetime:
    """Where ``sub``'s completed periods end: its current period's start (or its end, once
    ended), never after ``now``."""
    if sub.subscription_status is SubscriptionStatus.CANCELLED:
        end = sub.end_date or sub.cancelled_at or sub.current_period_start
        return min(end, now)
    return min(sub.current_period_start, now)


def _periods(sub: Subscription, until: datetime, request: BacktestRequest) -> list[Period]:
    """``sub``'s completed periods in the request's range. A period cut short by the end of a
    cancelled subscription is left out: billing charged it through the cancellation's proration
    and credit note, which a period's charges do not reproduce."""
    schedule = sub.schedule()
    periods = [
        p
        for p in schedule.periods(sub.start_date, until, end_date=sub.end_date)
        if p.end <= until
        and (sub.end_date is None or p.end < sub.end_date or schedule.period_containing(p.start).end == p.end)
        and (request.since is None or p.start >= request.since)
        and (request.until is None or p.end <= request.until)
    ]
    if request.periods is not None:
        periods = periods[-request.periods :]
    return periods


def _with_candidate(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    plan: Plan,
    prices: Sequence[Price],
    meters: Mapping[str, Meter],
    customer: Customer,
) -> Subscription:
    """``sub`` subscribed to ``plan`` at ``prices``: its plan lines replaced by the lines
    subscription creation makes (:func:`plan_line_items`) of the prices that match its currency
    and billing period; its add-on lines stay."""
    matching = matching_prices(
        prices,
        plan.id,
        currency=sub.currency,
        billing_period=sub.billing_period,
        billing_period_count=sub.billing_period_count,
        start=sub.start_date,
    )
    made = plan_line_items(
        uow,
        ctx,
        sub_id=sub.id,
        customer=customer,
        plan=plan,
        prices=matching,
        start=sub.start_date,
        meters=meters,
    )
    kept = [line for line in sub.line_items if line.entity_type != "plan"]
    # Each period is assembled as one closing charge (``period_end``, no next period): an ADVANCE
    # line is charged there as ARREAR, for the same window and with the same proration, so the
    # core prices it as the billing run did on the invoice before (half the assemblies).
    in_arrear = [
        line.model_copy(update={"invoice_cadence": InvoiceCadence.ARREAR})
        if line.invoice_cadence is InvoiceCadence.ADVANCE
        else line
        for line in (*kept, *made)
    ]
    return sub.model_copy(update={"plan_id": plan.id, "line_items": tuple(in_arrear)})


def _billed(
    uow: UnitOfWork, subs: Iterable[Subscription]
) -> dict[str, list[tuple[datetime, datetime, Decimal]]]:
    """Subscription id -> (start, end, amount) of every line of its live invoices."""
    found: dict[str, list[tuple[datetime, datetime, Decimal]]] = defaultdict(list)
    for invoice in list_where_in(uow.invoices, "subscription_id", [s.id for s in subs], _LIVE_INVOICES):
        assert invoice.subscription_id is not None
        own = found[invoice.subscription_id]
        for line in invoice.line_items:
            if line.subscription_id is None or line.subscription_id == invoice.subscription_id:
                own.append((line.period_start, line.period_end, line.amount))
    return found


def _billed_in(lines: Iterable[tuple[datetime, datetime, Decimal]], period: Period) -> Decimal:
    return sum((amount for start, end, amount in lines if start >= period.start and end <= period.end), ZERO)
