"""Cost sheets, cost analytics and usage analytics through the official SDK."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit.errors import NotFound
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code

COST = {
    "billing_model": "FLAT_FEE",
    "billing_period": "MONTHLY",
    "currency": "usd",
    "invoice_cadence": "ARREAR",
    "type_": "USAGE",
    "price_unit_type": "FIAT",
}


def test_costsheet_round_trip(sdk: Flexprice, env: Scoped) -> None:
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    created = known(
        sdk.costs.create_costsheet(
            name="Infra", lookup_key="infra", description="Servers", metadata={"a": "b"}
        )
    )
    assert isinstance(created, models.CreateCostsheetResponse)
    sheet = created.costsheet
    assert sheet is not None and sheet.id is not None
    assert (sheet.name, sheet.lookup_key, sheet.description, sheet.metadata, sheet.prices) == (
        "Infra",
        "infra",
        "Servers",
        {"a": "b"},
        [],
    )
    price = sdk.prices.create_price(
        **COST, entity_type="COSTSHEET", entity_id=sheet.id, meter_id=calls.id, amount="0.002"
    )
    assert (price.entity_type, price.entity_id) == ("COSTSHEET", sheet.id)

    got = known(sdk.costs.get_costsheet(id=sheet.id, expand="prices")).costsheet
    assert got is not None and got.prices is not None
    assert [(p.id, p.amount, p.meter_id) for p in got.prices] == [(price.id, "0.002", calls.id)]

    updated = known(sdk.costs.update_costsheet(id=sheet.id, name="Infra 2026", metadata={"c": "d"})).costsheet
    assert updated is not None
    assert (updated.name, updated.lookup_key, updated.metadata) == ("Infra 2026", "infra", {"c": "d"})

    second = sdk.costs.create_costsheet(name="Later").costsheet
    assert second is not None
    active = known(sdk.costs.get_active_costsheet())
    assert isinstance(active, models.CostsheetResponse)
    assert active.id == second.id  # the live sheet created last is the active one

    found = known(sdk.costs.query_costsheet(lookup_key="infra"))
    assert [item.id for item in found.items or []] == [sheet.id]
    assert found.pagination is not None and found.pagination.total == 1
    paged = sdk.costs.query_costsheet(query_filter={"limit": 1, "offset": 1, "order": "desc"})
    assert [item.id for item in paged.items or []] == [sheet.id]

    with pytest.raises(errors.FlexpriceError) as taken:
        sdk.costs.create_costsheet(name="Copy", lookup_key="infra")
    assert status_and_code(taken.value) == (409, "already_exists")

    deleted = sdk.costs.delete_costsheet(id=second.id)
    assert (deleted.id, deleted.message) == (second.id, "costsheet deleted successfully")
    assert sdk.costs.get_active_costsheet().id == sheet.id
    sdk.costs.delete_costsheet(id=sheet.id)
    with pytest.raises(NotFound):
        env.prices.get(price.id)  # the sheet's prices ended with it
    with pytest.raises(errors.FlexpriceError) as none:
        sdk.costs.get_active_costsheet()
    assert status_and_code(none.value) == (404, "not_found")
    with pytest.raises(errors.FlexpriceError) as gone:
        sdk.costs.get_costsheet(id=sheet.id)
    assert status_and_code(gone.value) == (404, "not_found")


def test_usage_and_cost_analytics_round_trip(sdk: Flexprice, env: Scoped) -> None:
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    feature = env.features.create(name="API", type="metered", meter_id=calls.id)
    plan = sdk.plans.create_plan(name="Pro")
    sdk.prices.create_price(**COST, entity_type="PLAN", entity_id=plan.id, meter_id=calls.id, amount="0.10")
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    env.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    start = env.subscriptions.list(customer_id=customer.id).items[0].current_period_start
    sdk.events.ingest_events_bulk(
        events=[
            {
                "event_id": f"call-{i}",
                "event_name": "api.call",
                "external_customer_id": "cust-ada",
                "source": "api" if i % 3 else "batch",
                "timestamp": (start + timedelta(hours=i * 6)).isoformat(),
            }
            for i in range(10)
        ]
    )
    window = {"start_time": start, "end_time": start + timedelta(days=3)}

    usage = known(
        sdk.events.get_usage_analytics(
            external_customer_id="cust-ada", window_size="DAY", group_by=["feature_id", "source"], **window
        )
    )
    assert isinstance(usage, models.GetUsageAnalyticsResponse)
    assert (usage.currency, usage.total_cost) == ("usd", "1.00")
    items = usage.items or []
    assert [(i.feature_id, i.source, i.total_usage, i.total_cost, i.event_count) for i in items] == [
        (feature.id, "api", "6", "0.60", 6),
        (feature.id, "batch", "4", "0.40", 4),
    ]
    points = items[0].points or []
    assert [(p.usage, p.cost, p.event_count) for p in points][:1] == [("2", "0.20", 2)]
    assert sum(Decimal(p.cost or "0") for p in points) == Decimal("0.60")
    assert items[0].window_size == "DAY" and items[0].aggregation_type == "COUNT"

    sheet = sdk.costs.create_costsheet(name="Infra").costsheet
    assert sheet is not None and sheet.id is not None
    sdk.prices.create_price(
        **COST, entity_type="COSTSHEET", entity_id=sheet.id, meter_id=calls.id, amount="0.04"
    )
    costs = known(sdk.costs.get_detailed_cost_analytics(external_customer_id="cust-ada", **window))
    assert isinstance(costs, models.GetDetailedCostAnalyticsResponse)
    assert (costs.total_cost, costs.total_revenue, costs.margin, costs.margin_percent) == (
        "0.40",
        "1.00",
        "0.60",
        "60.00",
    )
    assert (costs.roi, costs.roi_percent, costs.currency) == ("1.5000", "150.00", "usd")
    (item,) = costs.cost_analytics or []
    assert (item.customer_id, item.meter_id, item.costsheet_id, item.total_quantity, item.total_events) == (
        customer.id,
        calls.id,
        sheet.id,
        "10",
        10,
    )
    assert len(item.cost_by_period or []) == 4  # 09:30 on day 1 to 09:30 on day 4: four UTC days

    with pytest.raises(errors.FlexpriceError) as refused:
        sdk.events.get_usage_analytics(group_by=["customer_id"], **window)
    assert status_and_code(refused.value) == (400, "validation_error")
