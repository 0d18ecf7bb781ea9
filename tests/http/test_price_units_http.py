"""``/v1/prices/units`` over HTTP."""

from __future__ import annotations

from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.services.access import BootstrapResult
from billingkit.testing.contracts.storage import sample
from tests.http.conftest import assert_error

CREDITS = {
    "code": "credits",
    "name": "Credits",
    "symbol": "CR",
    "base_currency": "USD",
    "conversion_rate": "0.01",
}


def test_round_trip(client: TestClient, test_key: dict[str, str]) -> None:
    created = client.post("/v1/prices/units", json={**CREDITS, "metadata": {"a": "b"}}, headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["code"], body["name"], body["symbol"], body["base_currency"], body["conversion_rate"]) == (
        "credits",
        "Credits",
        "CR",
        "usd",
        "0.01",
    )
    assert (body["metadata"], body["status"]) == ({"a": "b"}, "published") and body["id"].startswith(
        "priceunit_"
    )
    uid = body["id"]
    assert client.get(f"/v1/prices/units/{uid}", headers=test_key).json() == body
    assert client.get("/v1/prices/units/code/credits", headers=test_key).json() == body
    listed = client.get("/v1/prices/units", headers=test_key).json()
    assert [u["id"] for u in listed["items"]] == [uid] and listed["pagination"]["total"] == 1
    searched = client.post("/v1/prices/units/search", json={"price_unit_ids": [uid]}, headers=test_key).json()
    assert [u["id"] for u in searched["items"]] == [uid]
    updated = client.put(f"/v1/prices/units/{uid}", json={"name": "Tokens"}, headers=test_key)
    assert updated.status_code == 200 and updated.json()["name"] == "Tokens"
    deleted = client.delete(f"/v1/prices/units/{uid}", headers=test_key)
    assert deleted.status_code == 200 and deleted.json() == {"message": "price unit deleted successfully"}
    assert_error(client.get(f"/v1/prices/units/{uid}", headers=test_key), 404, "not_found")
    assert_error(client.get("/v1/prices/units/code/credits", headers=test_key), 404, "not_found")


def test_bad_input_and_conflicts(
    client: TestClient, test_key: dict[str, str], billing: Billing, setup: BootstrapResult
) -> None:
    for patch, field in (
        ({"conversion_rate": "0"}, "conversion_rate"),
        ({"conversion_rate": 0.1}, "conversion_rate"),
        ({"base_currency": "usdollar"}, "base_currency"),
        ({"code": " "}, "code"),
        ({"symbol": None}, "symbol"),
    ):
        body = assert_error(
            client.post("/v1/prices/units", json={**CREDITS, **patch}, headers=test_key),
            400,
            "validation_error",
        )
        assert body["details"]["field"] == field
    assert client.get("/v1/prices/units", headers=test_key).json()["pagination"]["total"] == 0
    uid = client.post("/v1/prices/units", json=CREDITS, headers=test_key).json()["id"]
    assert_error(client.post("/v1/prices/units", json=CREDITS, headers=test_key), 409, "already_exists")

    tenant_id, env_id = setup.tenant.id, setup.environments[0][0].id
    plan = sample("plans", tenant_id, env_id)
    with billing.storage.unit_of_work(tenant_id, env_id) as uow:
        uow.plans.add(plan)
        uow.commit()
    price = client.post(
        "/v1/prices",
        json={
            "entity_type": "PLAN",
            "entity_id": plan.id,
            "currency": "USD",
            "type": "FIXED",
            "billing_model": "FLAT_FEE",
            "billing_period": "MONTHLY",
            "invoice_cadence": "ADVANCE",
            "price_unit_type": "CUSTOM",
            "price_unit_config": {"price_unit": "credits", "amount": "250"},
        },
        headers=test_key,
    )
    assert price.status_code == 201, price.text
    assert (
        price.json()["amount"],
        price.json()["price_unit_id"],
        price.json()["display_price_unit_amount"],
    ) == (
        "2.50",
        uid,
        "250 credits",
    )
    assert (
        client.get(f"/v1/prices/{price.json()['id']}", headers=test_key).json()["pricing_unit"]["id"] == uid
    )
    assert_error(client.delete(f"/v1/prices/units/{uid}", headers=test_key), 400, "invalid_operation")


def test_other_environment_and_reader(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], reader_key: dict[str, str]
) -> None:
    uid = client.post("/v1/prices/units", json=CREDITS, headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/prices/units/{uid}", headers=prod_key), 404, "not_found")
    assert_error(
        client.put(f"/v1/prices/units/{uid}", json={"name": "x"}, headers=prod_key), 404, "not_found"
    )
    assert client.get(f"/v1/prices/units/{uid}", headers=reader_key).status_code == 200
    assert_error(
        client.post("/v1/prices/units", json={**CREDITS, "code": "x"}, headers=reader_key),
        403,
        "permission_denied",
    )
    assert_error(client.delete(f"/v1/prices/units/{uid}", headers=reader_key), 403, "permission_denied")
