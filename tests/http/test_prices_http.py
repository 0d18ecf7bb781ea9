"""``/v1/prices`` over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from billingkit.services.access import BootstrapResult
from billingkit.testing.contracts.storage import sample
from tests.http.conftest import assert_error


def stored(billing: Billing, setup: BootstrapResult, kind: str, env: int = 0, **fields: Any) -> str:
    """A live resource written straight to storage (plans and meters have their own routes)."""
    tenant_id, env_id = setup.tenant.id, setup.environments[env][0].id
    item = sample(kind, tenant_id, env_id, **fields)
    with billing.storage.unit_of_work(tenant_id, env_id) as uow:
        getattr(uow, kind).add(item)
        uow.commit()
    return str(item.id)


@pytest.fixture
def plan_id(billing: Billing, setup: BootstrapResult) -> str:
    return stored(billing, setup, "plans")


@pytest.fixture
def meter_id(billing: Billing, setup: BootstrapResult) -> str:
    return stored(billing, setup, "meters")


def usage_price(plan_id: str, meter_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "entity_type": "PLAN",
        "entity_id": plan_id,
        "currency": "USD",
        "type": "USAGE",
        "billing_model": "TIERED",
        "tier_mode": "SLAB",
        "billing_period": "MONTHLY",
        "billing_period_count": 1,
        "billing_cadence": "RECURRING",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "tiers": [{"up_to": 1000, "unit_amount": "0.02", "flat_amount": "1.5"}, {"unit_amount": "0.01"}],
        "price_unit_type": "FIAT",
        "lookup_key": "api-calls",
        "display_name": "API calls",
        "description": "per call",
        "min_quantity": 0,
        "metadata": {"a": "b"},
        **fields,
    }


def fixed_price(plan_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "entity_type": "PLAN",
        "entity_id": plan_id,
        "currency": "usd",
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "price_unit_type": "FIAT",
        "amount": "20",
        **fields,
    }


def test_round_trip(client: TestClient, test_key: dict[str, str], plan_id: str, meter_id: str) -> None:
    sent = usage_price(plan_id, meter_id)
    created = client.post("/v1/prices", json=sent, headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    for field in ("entity_type", "entity_id", "type", "billing_model", "tier_mode", "billing_period"):
        assert body[field] == sent[field]
    assert (body["currency"], body["amount"], body["display_amount"], body["min_quantity"]) == (
        "usd",
        "0",
        "$0.00",
        "0",
    )
    assert body["tiers"] == [
        {"up_to": 1000, "unit_amount": "0.02", "flat_amount": "1.5"},
        {"up_to": None, "unit_amount": "0.01", "flat_amount": None},
    ]
    assert (body["sequence"], body["status"], body["lookup_key"], body["metadata"]) == (
        1,
        "published",
        "api-calls",
        {"a": "b"},
    )
    assert body["id"].startswith("price_") and "meter" not in body
    price_id = body["id"]

    got = client.get(f"/v1/prices/{price_id}", headers=test_key).json()
    assert got["meter"]["id"] == meter_id and got["pricing_unit"] is None
    assert {k: v for k, v in got.items() if k not in ("meter", "pricing_unit")} == body
    by_key = client.get("/v1/prices/lookup/api-calls", headers=test_key)
    assert by_key.status_code == 200 and by_key.json()["id"] == price_id
    expanded = client.get(f"/v1/prices/{price_id}", params={"expand": "plan"}, headers=test_key).json()
    assert expanded["plan"]["id"] == plan_id

    listed = client.get(
        "/v1/prices", params={"plan_ids": plan_id, "expand": "meters"}, headers=test_key
    ).json()
    assert [p["id"] for p in listed["items"]] == [price_id] and listed["items"][0]["meter"]["id"] == meter_id
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    assert (
        client.get("/v1/prices", params={"billing_periods": "ANNUAL"}, headers=test_key).json()["items"] == []
    )
    searched = client.post(
        "/v1/prices/search",
        json={"meter_ids": [meter_id], "entity_type": "PLAN", "limit": 10},
        headers=test_key,
    ).json()
    assert [p["id"] for p in searched["items"]] == [price_id]

    updated = client.put(f"/v1/prices/{price_id}", json={"description": "changed"}, headers=test_key)
    assert updated.status_code == 200 and updated.json()["description"] == "changed"
    assert updated.json()["id"] == price_id and updated.json()["sequence"] == 1

    deleted = client.delete(f"/v1/prices/{price_id}", headers=test_key)
    assert deleted.status_code == 200 and deleted.json() == {"message": "price deleted successfully"}
    assert_error(client.get(f"/v1/prices/{price_id}", headers=test_key), 404, "not_found")
    assert_error(client.get("/v1/prices/lookup/api-calls", headers=test_key), 404, "not_found")


def test_versioning_and_future_end(
    client: TestClient, test_key: dict[str, str], clock: TestClock, plan_id: str
) -> None:
    price = client.post("/v1/prices", json=fixed_price(plan_id, lookup_key="base"), headers=test_key).json()
    effective = "2026-06-01T00:00:00Z"
    successor = client.put(
        f"/v1/prices/{price['id']}", json={"amount": "25", "effective_from": effective}, headers=test_key
    )
    assert successor.status_code == 200, successor.text
    new = successor.json()
    assert (new["amount"], new["start_date"], new["parent_price_id"], new["sequence"], new["lookup_key"]) == (
        "25",
        effective,
        price["id"],
        2,
        "base",
    )
    old = client.get(f"/v1/prices/{price['id']}", headers=test_key).json()
    assert (old["end_date"], old["lookup_key"], old["sequence"], old["amount"]) == (effective, None, 2, "20")
    bad = client.put(
        f"/v1/prices/{new['id']}",
        json={"amount": "30", "effective_from": "2020-01-01T00:00:00Z"},
        headers=test_key,
    )
    assert assert_error(bad, 400, "validation_error")["details"]["field"] == "effective_from"

    ending = client.request(
        "DELETE", f"/v1/prices/{new['id']}", json={"end_date": "2026-07-01T00:00:00Z"}, headers=test_key
    )
    assert ending.status_code == 200, ending.text
    still = client.get(f"/v1/prices/{new['id']}", headers=test_key).json()
    assert (still["status"], still["end_date"], still["sequence"]) == ("published", "2026-07-01T00:00:00Z", 3)
    clock.set(clock.now().replace(month=7, day=2))
    assert client.get("/v1/prices", headers=test_key).json()["pagination"]["total"] == 0
    everything = client.get("/v1/prices", params={"allow_expired_prices": "true"}, headers=test_key).json()
    assert everything["pagination"]["total"] == 2


def test_bulk(client: TestClient, test_key: dict[str, str], plan_id: str, meter_id: str) -> None:
    items = [fixed_price(plan_id), usage_price(plan_id, meter_id, invoice_cadence="ADVANCE")]
    bad = assert_error(
        client.post("/v1/prices/bulk", json={"items": items}, headers=test_key), 400, "validation_error"
    )
    assert bad["details"]["field"] == "items[1].invoice_cadence"
    bad = assert_error(
        client.post(
            "/v1/prices/bulk", json={"items": [items[0], {**items[0], "type": "X"}]}, headers=test_key
        ),
        400,
        "validation_error",
    )
    assert bad["details"]["field"] == "items[1].type"
    assert client.get("/v1/prices", params={"status": "published"}, headers=test_key).json()["items"] == []
    created = client.post(
        "/v1/prices/bulk", json={"items": [items[0], usage_price(plan_id, meter_id)]}, headers=test_key
    )
    assert created.status_code == 201, created.text
    assert [p["sequence"] for p in created.json()["items"]] == [1, 2]
    assert client.get("/v1/prices", headers=test_key).json()["pagination"]["total"] == 2


def test_decreasing_tiers_are_400_naming_the_tier(
    client: TestClient, test_key: dict[str, str], plan_id: str, meter_id: str
) -> None:
    tiers = [{"up_to": 100, "unit_amount": "1"}, {"up_to": 50, "unit_amount": "1"}]
    response = client.post("/v1/prices", json=usage_price(plan_id, meter_id, tiers=tiers), headers=test_key)
    body = assert_error(response, 400, "validation_error")
    assert body["details"]["field"] == "tiers[1].up_to"
    assert body["message"] == "tiers[1].up_to must be greater than tiers[0].up_to (50 <= 100)"


def test_bad_input_is_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], plan_id: str, meter_id: str
) -> None:
    for patch, field in (
        ({"meter_id": None}, "meter_id"),
        ({"invoice_cadence": "ADVANCE"}, "invoice_cadence"),
        ({"tiers": None}, "tiers"),
        (
            {
                "tiers": [
                    {"up_to": 10, "unit_amount": "1"},
                    {"up_to": 5, "unit_amount": "1"},
                    {"unit_amount": "1"},
                ]
            },
            "tiers[1].up_to",
        ),
        (
            {"billing_model": "PACKAGE", "tier_mode": None, "tiers": None, "amount": "1"},
            "transform_quantity.divide_by",
        ),
        ({"billing_model": "FLAT_FEE", "tier_mode": None, "tiers": None, "amount": "-1"}, "amount"),
        ({"tier_mode": "STEPPED"}, "tier_mode"),
        ({"entity_type": "SUBSCRIPTION"}, "entity_type"),
        ({"entity_id": "plan_nope"}, "entity_id"),
        ({"currency": 5}, "currency"),
    ):
        body = assert_error(
            client.post("/v1/prices", json={**usage_price(plan_id, meter_id), **patch}, headers=test_key),
            400,
            "validation_error",
        )
        assert body["details"]["field"] == field, body
    assert (
        client.get("/v1/prices", params={"allow_expired_prices": True}, headers=test_key).json()["items"]
        == []
    )
    assert_error(
        client.get("/v1/prices", params={"billing_periods": "FORTNIGHTLY"}, headers=test_key),
        400,
        "validation_error",
    )
    client.post("/v1/prices", json=usage_price(plan_id, meter_id), headers=test_key)
    assert_error(
        client.post("/v1/prices", json=usage_price(plan_id, meter_id), headers=test_key),
        409,
        "already_exists",
    )


def test_other_environment_is_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], plan_id: str
) -> None:
    pid = client.post("/v1/prices", json=fixed_price(plan_id), headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/prices/{pid}", headers=prod_key), 404, "not_found")
    assert_error(
        client.put(f"/v1/prices/{pid}", json={"description": "x"}, headers=prod_key), 404, "not_found"
    )
    assert_error(client.delete(f"/v1/prices/{pid}", headers=prod_key), 404, "not_found")


def test_reader_can_read_not_write(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str], plan_id: str
) -> None:
    pid = client.post("/v1/prices", json=fixed_price(plan_id), headers=test_key).json()["id"]
    assert client.get(f"/v1/prices/{pid}", headers=reader_key).status_code == 200
    assert client.get("/v1/prices", headers=reader_key).json()["pagination"]["total"] == 1
    assert_error(
        client.post("/v1/prices", json=fixed_price(plan_id), headers=reader_key), 403, "permission_denied"
    )
    assert_error(
        client.put(f"/v1/prices/{pid}", json={"amount": "1"}, headers=reader_key), 403, "permission_denied"
    )
    assert_error(client.delete(f"/v1/prices/{pid}", headers=reader_key), 403, "permission_denied")
