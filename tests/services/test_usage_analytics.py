"""``scoped.usage.analytics`` (``POST /events/analytics``): usage over time per feature and group,
and its cost under the customer's subscription line.

Two customers on "Pro" (API calls on SLAB tiers in arrear) send calls through two sources and two
regions during their first month; the month is billed, then analysed. The ``clock`` fixture
starts at 2026-05-01 09:30 UTC. Logic runs on memory; the invoice agreement on every store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from billingkit import Billing, InvalidOperation, Scoped, TestClock, ValidationError
from billingkit.domain.subscriptions import Subscription
from tests.conftest import make_storage

TIERS = [{"up_to": 1000, "unit_amount": "0.02"}, {"up_to": None, "unit_amount": "0.01", "flat_amount": "5"}]
USAGE = {
    "currency": "usd",
    "billing_period": "MONTHLY",
    "type": "USAGE",
    "invoice_cadence": "ARREAR",
    "billing_model": "TIERED",
    "tier_mode": "SLAB",
    "tiers": TIERS,
}
# (day of the period, calls, source, region) per customer
SENT = {
    "c-a": [(0, 400, "api", "eu"), (3, 500, "batch", "us"), (3, 300, "api", "eu"), (20, 900, "api", "us")],
    "c-b": [(1, 250, "api", "eu"), (29, 50, "batch", "eu")],
}


@dataclass
class World:
    s: Scoped
    feature_id: str
    meter_id: str
    subs: dict[str, Subscription]


def _world(billing: Billing, s: Scoped, clock: TestClock) -> World:
    meter = s.meters.create(
        name="API calls", event_name="api.request", aggregation={"type": "SUM", "field": "calls"}
    )
    feature = s.features.create(name="API", type="metered", meter_id=meter.id, lookup_key="api")
    plan = s.plans.create(name="Pro", prices=[{**USAGE, "meter_id": meter.id, "display_name": "API calls"}])
    subs = {}
    for ext in SENT:
        customer = s.customers.create(external_id=ext, name=ext)
        subs[ext] = s.subscriptions.create(
            customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
        )
    start = subs["c-a"].current_period_start
    s.events.ingest_bulk(
        [
            {
                "event_id": f"{ext}-{n}",
                "event_name": "api.request",
                "external_customer_id": ext,
                "source": source,
                "timestamp": (start + timedelta(days=day, hours=1)).isoformat(),
                "properties": {"calls": calls, "region": region},
            }
            for ext, sent in SENT.items()
            for n, (day, calls, source, region) in enumerate(sent)
        ]
    )
    return World(s, feature.id, meter.id, subs)


@pytest.fixture
def storage(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Memory (the analytics logic), unless a test names a store: the invoice agreement runs on
    every store."""
    store = make_storage(getattr(request, "param", "memory"), request, tmp_path)
    yield store
    store.close()


@pytest.fixture
def world(billing: Billing, test_env: Scoped, clock: TestClock) -> World:
    return _world(billing, test_env, clock)


def _period(world: World) -> dict[str, object]:
    sub = world.subs["c-a"]
    return {"start_time": sub.current_period_start, "end_time": sub.current_period_end}


def test_windows_add_up_to_the_totals(world: World) -> None:
    got = world.s.usage.analytics(external_customer_id="c-a", window_size="DAY", **_period(world))
    (item,) = got.items
    assert (item.feature.id, item.meter.id, item.total_usage, item.event_count) == (
        world.feature_id,
        world.meter_id,
        Decimal(2100),
        4,
    )
    # 1,000 calls at 0.02, then 1,100 at 0.01 plus the tier's 5.00 flat fee
    assert item.total_cost == Decimal("36.00") == got.total_cost
    assert got.currency == "usd" and item.currency == "usd"
    assert len(item.points) == 32  # 09:30 to 09:30 a month later: 31 days cut in 32 UTC windows
    assert sum(p.usage for p in item.points) == item.total_usage
    assert sum(p.cost for p in item.points) == item.total_cost
    assert sum(p.event_count for p in item.points) == 4
    busy = {p.timestamp.day: (p.usage, p.cost) for p in item.points if p.usage}
    # Day 3 crosses the first tier: 600 calls at 0.02, 200 at 0.01, and the 5.00 flat fee.
    assert busy == {
        1: (Decimal(400), Decimal("8.00")),
        4: (Decimal(800), Decimal("19.00")),
        21: (Decimal(900), Decimal("9.00")),
    }
    assert item.price_id is not None and item.subscription_id == world.subs["c-a"].id


def test_totals_agree_with_the_invoice(billing: Billing, world: World, clock: TestClock) -> None:
    _agrees_with_the_invoice(billing, world, clock)


@pytest.mark.parametrize("storage", ["sqlite", "postgres"], indirect=True)
def test_totals_agree_with_the_invoice_on_sql(billing: Billing, test_env: Scoped, clock: TestClock) -> None:
    _agrees_with_the_invoice(billing, _world(billing, test_env, clock), clock)


def _agrees_with_the_invoice(billing: Billing, world: World, clock: TestClock) -> None:
    period = _period(world)
    clock.set(world.subs["c-a"].current_period_end + timedelta(hours=1))
    billing.run_due()
    for ext, sub in world.subs.items():
        (invoice,) = world.s.invoices.list(subscription_id=sub.id).items
        (line,) = [line for line in invoice.line_items if line.meter_id == world.meter_id]
        (item,) = world.s.usage.analytics(external_customer_id=ext, **period).items
        assert (item.total_usage, item.total_cost) == (line.quantity, line.amount), ext
    every = world.s.usage.analytics(**period)
    assert every.total_cost == Decimal("36.00") + Decimal("6.00")  # c-b: 300 calls at 0.02
    assert every.items[0].total_usage == 2400 and every.items[0].price_id is None  # two lines


def test_group_by_source_and_property_filters(world: World) -> None:
    period = _period(world)
    by_source = world.s.usage.analytics(group_by=["feature_id", "source"], window_size="WEEK", **period)
    assert [(i.source, i.total_usage, i.event_count) for i in by_source.items] == [
        ("api", Decimal(1850), 4),
        ("batch", Decimal(550), 2),
    ]
    # Each group is priced alone per customer: api = c-a 1,600 (20.00 + 6.00 + 5.00) + c-b 250
    assert [i.total_cost for i in by_source.items] == [Decimal("31.00") + Decimal("5.00"), Decimal("11.00")]
    for item in by_source.items:
        assert sum(p.cost for p in item.points) == item.total_cost
    eu_api = world.s.usage.analytics(
        external_customer_id="c-a", sources=["api"], property_filters={"region": ["eu"]}, **period
    )
    assert [(i.total_usage, i.total_cost) for i in eu_api.items] == [(Decimal(700), Decimal("14.00"))]
    regions = world.s.usage.analytics(external_customer_id="c-b", group_by=["properties.region"], **period)
    assert [(i.properties, i.total_usage) for i in regions.items] == [({"region": "eu"}, Decimal(300))]
    assert regions.items[0].points == ()


def test_month_windows_follow_the_calendar(world: World) -> None:
    period = _period(world)
    got = world.s.usage.analytics(external_customer_id="c-b", window_size="MONTH", **period)
    (item,) = got.items
    assert [(p.timestamp.isoformat(), p.usage) for p in item.points] == [
        ("2026-05-01T09:30:00+00:00", Decimal(300)),
        ("2026-06-01T00:00:00+00:00", Decimal(0)),
    ]


def test_bad_requests_are_refused(world: World) -> None:
    period = _period(world)
    cases = [
        ({"group_by": ["customer"]}, "group_by"),
        ({"group_by": ["source", "properties.region"]}, "group_by"),
        ({"external_customer_id": "nobody"}, "external_customer_id"),
        ({"feature_ids": ["feat_missing"]}, "feature_ids"),
        ({"window_size": "MINUTE"}, "window_size"),  # a month of minutes is too many windows
        ({"include_children": True}, "include_children"),
        ({"start_time": period["end_time"], "end_time": period["start_time"]}, "end_time"),
    ]
    for fields, field in cases:
        with pytest.raises(ValidationError) as caught:
            world.s.usage.analytics(**{**period, **fields})
        assert caught.value.field == field, fields


def test_costs_in_several_currencies_are_refused(world: World) -> None:
    eur = world.s.plans.create(name="Euro", prices=[{**USAGE, "currency": "eur", "meter_id": world.meter_id}])
    customer = world.s.customers.create(external_id="c-eur", name="E")
    world.s.subscriptions.create(
        customer_id=customer.id, plan_id=eur.id, currency="eur", billing_period="MONTHLY"
    )
    with pytest.raises(InvalidOperation):
        world.s.usage.analytics(**_period(world))
    assert world.s.usage.analytics(external_customer_id="c-eur", **_period(world)).currency == "eur"


# -- cost analytics (POST /costs/analytics) over the same month --------------------------------


def _cost_sheet(world: World, amount: str = "0.002") -> str:
    sheet = world.s.costs.create(name="Infra", lookup_key="infra")
    world.s.prices.create(
        entity_type="COSTSHEET",
        entity_id=sheet.costsheet.id,
        type="USAGE",
        billing_model="FLAT_FEE",
        billing_period="MONTHLY",
        invoice_cadence="ARREAR",
        currency="usd",
        meter_id=world.meter_id,
        amount=amount,
    )
    return sheet.costsheet.id


def test_cost_against_revenue_per_customer_and_meter(world: World) -> None:
    sheet_id = _cost_sheet(world)
    got = world.s.costs.analytics(**_period(world))
    rows = [
        (i.customer.external_id, i.total_quantity, i.total_events, i.total_cost, i.total_revenue)
        for i in got.items
    ]
    assert sorted(rows) == [
        ("c-a", Decimal(2100), 4, Decimal("4.20"), Decimal("36.00")),
        ("c-b", Decimal(300), 2, Decimal("0.60"), Decimal("6.00")),
    ]
    assert {i.costsheet_id for i in got.items} == {sheet_id}
    for item in got.items:
        assert len(item.points) == 32  # daily points over the month
        assert sum(p.cost for p in item.points) == item.total_cost
        assert sum(p.quantity for p in item.points) == item.total_quantity
    wire = got.to_dict()
    assert (wire["total_cost"], wire["total_revenue"], wire["margin"], wire["currency"]) == (
        "4.80",
        "42.00",
        "37.20",
        "usd",
    )
    # 37.20 / 42.00 = 88.571...%; 37.20 / 4.80 = 7.75
    assert (wire["margin_percent"], wire["roi"], wire["roi_percent"]) == ("88.57", "7.7500", "775.00")
    one = world.s.costs.analytics(
        external_customer_id="c-b", feature_ids=[world.feature_id], **_period(world)
    )
    assert [i.customer.external_id for i in one.items] == ["c-b"]
    paged = world.s.costs.analytics(limit=1, offset=0, **_period(world))
    assert len({i.customer.id for i in paged.items}) == 1


def test_ratios_without_a_divisor_are_null(world: World) -> None:
    _cost_sheet(world, amount="0")
    wire = world.s.costs.analytics(external_customer_id="c-a", **_period(world)).to_dict()
    assert (wire["total_cost"], wire["roi"], wire["roi_percent"], wire["margin_percent"]) == (
        "0.00",
        None,
        None,
        "100.00",
    )
    quiet = world.s.costs.analytics(
        external_customer_id="c-a",
        start_time=world.subs["c-a"].current_period_end + timedelta(days=40),
        end_time=world.subs["c-a"].current_period_end + timedelta(days=41),
    ).to_dict()
    assert (quiet["cost_analytics"], quiet["margin_percent"], quiet["roi"]) == ([], None, None)


def test_cost_analytics_needs_an_active_costsheet(world: World) -> None:
    with pytest.raises(InvalidOperation):
        world.s.costs.analytics(**_period(world))


def test_a_costsheet_takes_usage_prices_only(world: World) -> None:
    sheet = world.s.costs.create(name="Infra").costsheet
    fixed = {"billing_model": "FLAT_FEE", "billing_period": "MONTHLY", "currency": "usd", "amount": "10"}
    with pytest.raises(ValidationError) as caught:
        world.s.prices.create(
            entity_type="COSTSHEET", entity_id=sheet.id, type="FIXED", invoice_cadence="ADVANCE", **fixed
        )
    assert caught.value.field == "type"
    with pytest.raises(ValidationError) as missing:
        world.s.prices.create(
            entity_type="COSTSHEET",
            entity_id="costsheet_missing",
            type="USAGE",
            invoice_cadence="ARREAR",
            meter_id=world.meter_id,
            **fixed,
        )
    assert missing.value.field == "entity_id"
    assert world.s.costs.get(sheet.id).prices == ()
