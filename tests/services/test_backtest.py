"""``scoped.backtest``: past periods re-priced under a candidate plan or prices, on every store.

Three customers on "Pro" ($49 a month in advance, API calls on SLAB tiers in arrear with the first
1,000 calls a month included) are billed for three months; then the stored usage is re-priced.
The ``clock`` fixture starts at 2026-05-01 09:30 UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import (
    Actor,
    Billing,
    NotFound,
    PermissionDenied,
    PlanDetail,
    Role,
    Scoped,
    TestClock,
    ValidationError,
)
from billingkit.domain.customers import Customer

MONTHLY = {"currency": "usd", "billing_period": "MONTHLY"}
FEE = {
    **MONTHLY,
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "49.00",
    "invoice_cadence": "ADVANCE",
}
TIERS = [
    {"up_to": 1000, "unit_amount": "0.02"},
    {"up_to": None, "unit_amount": "0.01", "flat_amount": "5"},
]
# Calls per customer and month: below, at and far above the first tier.
CALLS = {"c-low": [400, 700, 300], "c-mid": [1800, 2500, 1000], "c-high": [9000, 12000, 15000]}


@dataclass
class World:
    s: Scoped
    clock: TestClock
    billing: Billing
    plan: PlanDetail
    meter_id: str
    customers: dict[str, Customer]

    def usage_price(self, **fields: Any) -> dict[str, Any]:
        return {
            **MONTHLY,
            "type": "USAGE",
            "meter_id": self.meter_id,
            "invoice_cadence": "ARREAR",
            "billing_model": "TIERED",
            "tier_mode": "SLAB",
            "tiers": TIERS,
            **fields,
        }


def _ingest(s: Scoped, external_id: str, start: datetime, calls: int) -> None:
    # Several events a month, so SUM adds rows and the windows are checked at their edges.
    parts = [calls // 4] * 3 + [calls - 3 * (calls // 4)]
    s.events.ingest_bulk(
        [
            {
                "event_id": f"{external_id}-{start:%Y%m%d}-{i}",
                "event_name": "api.request",
                "external_customer_id": external_id,
                "timestamp": (start + timedelta(days=7 * i, minutes=1)).isoformat(),
                "properties": {"calls": part},
            }
            for i, part in enumerate(parts)
        ]
    )


@pytest.fixture
def world(billing: Billing, test_env: Scoped, clock: TestClock) -> World:
    s = test_env
    meter = s.meters.create(
        name="API calls", event_name="api.request", aggregation={"type": "SUM", "field": "calls"}
    )
    feature = s.features.create(name="API", type="metered", meter_id=meter.id, lookup_key="api")
    plan = s.plans.create(
        name="Pro",
        lookup_key="pro",
        prices=[
            {**FEE, "display_name": "Platform fee"},
            {
                **MONTHLY,
                "display_name": "API calls",
                "type": "USAGE",
                "meter_id": meter.id,
                "invoice_cadence": "ARREAR",
                "billing_model": "TIERED",
                "tier_mode": "SLAB",
                "tiers": TIERS,
            },
        ],
        entitlements=[
            {
                "feature_id": feature.id,
                "usage_limit": 1000,
                "usage_reset_period": "MONTHLY",
                "is_soft_limit": True,
            }
        ],
    )
    customers = {ext: s.customers.create(external_id=ext, name=ext) for ext in CALLS}
    subs = [
        s.subscriptions.create(customer_id=c.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY")
        for c in customers.values()
    ]
    for month in range(3):
        sub = s.subscriptions.get(subs[0].id)
        for ext, calls in CALLS.items():
            _ingest(s, ext, sub.current_period_start, calls[month])
        clock.set(sub.current_period_end + timedelta(hours=1))
        billing.run_due()
    return World(s, clock, billing, plan, meter.id, customers)


def _counts(s: Scoped) -> tuple[int, int, int]:
    return (s.invoices.list(limit=1).total, s.notifications.list(limit=1).total, s.plans.list(limit=1).total)


def test_the_billed_plan_as_candidate_differs_by_exactly_zero_everywhere(world: World) -> None:
    before = _counts(world.s)
    result = world.s.backtest(world.plan)
    assert len(result.rows) == 9  # 3 customers x 3 completed months
    assert {row.difference for row in result.rows} == {Decimal("0.00")}
    assert all(row.billed == row.candidate and row.billed > 0 for row in result.rows)
    # What was billed per period, from the invoices: c-high's first month is
    # 49 fee + usage of 9,000 calls less 1,000 included = 8,000 on SLAB tiers:
    # 1000*0.02 + 7000*0.01 + 5 flat = 20 + 70 + 5 = 95.00 -> 144.00
    high = [row for row in result.rows if row.external_customer_id == "c-high"]
    assert [row.billed for row in high] == [Decimal("144.00"), Decimal("174.00"), Decimal("204.00")]
    assert [row.period_start for row in high] == [
        datetime(2026, 5, 1, 9, 30, tzinfo=UTC),
        datetime(2026, 6, 1, 9, 30, tzinfo=UTC),
        datetime(2026, 7, 1, 9, 30, tzinfo=UTC),
    ]
    summary = result.summary()
    assert summary.revenue_change == {"usd": Decimal("0.00")}
    assert (summary.better_off, summary.worse_off, summary.unchanged) == (0, 0, 3)
    assert _counts(world.s) == before  # nothing written


def test_candidate_prices_reprice_the_stored_usage(world: World) -> None:
    cheaper_tiers = [
        {"up_to": 1000, "unit_amount": "0.02"},
        {"up_to": None, "unit_amount": "0.005", "flat_amount": "5"},
    ]
    result = world.s.backtest(
        [
            {**FEE, "amount": "59.00"},
            world.usage_price(tiers=cheaper_tiers),
        ]
    )
    rows = {(r.external_customer_id, r.period_start.month): r for r in result.rows}
    # c-low, May: 400 calls all included -> usage 0; fee 49 -> 59: +10.00
    assert (rows["c-low", 5].billed, rows["c-low", 5].candidate) == (Decimal("49.00"), Decimal("59.00"))
    # c-high, July: 14,000 billed calls: was 20 + 130 + 5 = 155 (+49 = 204);
    # now 20 + 13000*0.005 + 5 = 90 (+59 = 149): -55.00
    assert rows["c-high", 7].candidate == Decimal("149.00")
    assert rows["c-high", 7].difference == Decimal("-55.00")
    summary = result.summary()
    assert summary.revenue_change["usd"] == sum((r.difference for r in result.rows), Decimal(0))
    # Over three months: c-low pays 3 x 10.00 more in fees; c-mid too, and its June (1,500 billed
    # calls, 500 in the cheaper tier) saves 500 * 0.005 = 2.50 -> +27.50; c-high saves
    # 7000*0.005 + 10000*0.005 + 13000*0.005 = 35 + 50 + 65 = 150 in usage -> -120.00.
    per_customer = {
        ext: sum((r.difference for r in result.rows if r.external_customer_id == ext), Decimal(0))
        for ext in CALLS
    }
    assert per_customer == {
        "c-low": Decimal("30.00"),
        "c-mid": Decimal("27.50"),
        "c-high": Decimal("-120.00"),
    }
    assert (summary.better_off, summary.worse_off, summary.unchanged) == (1, 2, 0)
    assert summary.revenue_change == {"usd": Decimal("-62.50")}


def test_customers_and_periods_narrow_the_backtest(world: World) -> None:
    high = world.customers["c-high"]
    result = world.s.backtest(world.plan.id, customers=[high], periods=2)
    assert [(r.external_customer_id, r.period_start.month) for r in result.rows] == [
        ("c-high", 6),
        ("c-high", 7),
    ]
    since = world.s.backtest(world.plan.id, since=datetime(2026, 7, 1, tzinfo=UTC))
    assert {r.period_start.month for r in since.rows} == {7}
    assert world.s.backtest(world.plan.id, subscribed_plan_id="plan_other").rows == ()


def test_bad_candidates_are_refused(world: World) -> None:
    with pytest.raises(ValidationError) as bad:
        world.s.backtest([world.usage_price(tier_mode=None)])
    assert bad.value.field == "prices[0].tier_mode"
    with pytest.raises(ValidationError) as currency:
        world.s.backtest([{**FEE, "currency": "eur"}])
    assert currency.value.field == "currency"
    with pytest.raises(ValidationError) as empty:
        world.s.backtest([])
    assert empty.value.field == "prices"
    with pytest.raises(NotFound):
        world.s.backtest("plan_missing")


def test_an_actor_that_may_not_read_invoices_may_not_backtest(world: World) -> None:
    events_only = world.billing.scope(
        world.s.tenant_id, world.s.environment_id, actor=Actor("reader", (Role.EVENT_READER,))
    )
    with pytest.raises(PermissionDenied):
        events_only.backtest(world.plan.id)
    reader = world.billing.scope(
        world.s.tenant_id, world.s.environment_id, actor=Actor("r", (Role.ALL_READER,))
    )
    assert len(reader.backtest(world.plan.id).rows) == 9


def test_a_period_cut_short_by_a_cancellation_is_left_out(world: World) -> None:
    low = world.customers["c-low"]
    (sub,) = world.s.subscriptions.list(customer_id=low.id).items
    world.clock.advance(days=10)
    world.s.subscriptions.cancel(
        sub.id, cancellation_type="immediate", proration_behavior="create_prorations"
    )
    result = world.s.backtest(world.plan, customers=[low])
    # May, June and July were whole periods; August ended on the 11th with the cancellation.
    assert [r.period_start.month for r in result.rows] == [5, 6, 7]
    assert {r.difference for r in result.rows} == {Decimal("0.00")}
