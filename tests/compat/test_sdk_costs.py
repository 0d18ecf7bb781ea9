"""Cost sheets and cost analytics through the official SDK."""

from __future__ import annotations

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
