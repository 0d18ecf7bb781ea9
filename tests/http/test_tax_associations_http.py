"""``/v1/taxes/associations`` over HTTP, and the tax records of an invoice, on every store."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "200",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    customer = client.post("/v1/customers", json={"external_id": "c1", "name": "Ada"}, headers=test_key)
    assert customer.status_code == 201, customer.text
    rate = client.post(
        "/v1/taxes/rates", json={"name": "VAT", "code": "VAT20", "percentage_value": "20"}, headers=test_key
    )
    assert rate.status_code == 201, rate.text
    return {"customer_id": customer.json()["id"], "tax_rate_id": rate.json()["id"]}


def test_round_trip(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    body = {
        "tax_rate_code": "VAT20",
        "entity_type": "customer",
        "entity_id": world["customer_id"],
        "priority": 2,
        "auto_apply": True,
        "currency": "USD",
        "start_date": "2020-01-01T00:00:00Z",
        "end_date": "2040-01-01T00:00:00Z",
        "metadata": {"a": "b"},
    }
    created = client.post("/v1/taxes/associations", json=body, headers=test_key)
    assert created.status_code == 200, created.text  # the reference's status
    answer = created.json()
    assert {k: answer[k] for k in ("entity_type", "entity_id", "priority", "currency", "start_date")} == {
        "entity_type": "customer",
        "entity_id": world["customer_id"],
        "priority": 2,
        "currency": "usd",
        "start_date": "2020-01-01T00:00:00Z",
    }
    assert answer["tax_rate_id"] == world["tax_rate_id"] and answer["tax_rate"]["code"] == "VAT20"
    aid = answer["id"]
    assert client.get(f"/v1/taxes/associations/{aid}", headers=test_key).json() == answer

    updated = client.put(
        f"/v1/taxes/associations/{aid}", json={"priority": 7, "auto_apply": False}, headers=test_key
    )
    assert updated.status_code == 200, updated.text
    assert (updated.json()["priority"], updated.json()["auto_apply"]) == (7, False)

    tenant = client.post(
        "/v1/taxes/associations", json={"tax_rate_code": "VAT20", "entity_type": "tenant"}, headers=test_key
    ).json()
    listed = client.get("/v1/taxes/associations", params={"external_customer_id": "c1"}, headers=test_key)
    assert [a["id"] for a in listed.json()["items"]] == [aid]
    assert listed.json()["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    by_type = client.get("/v1/taxes/associations", params={"entity_type": "tenant"}, headers=test_key).json()
    assert [a["id"] for a in by_type["items"]] == [tenant["id"]]
    by_rate = client.get(
        "/v1/taxes/associations", params={"tax_rate_id": world["tax_rate_id"], "limit": 1}, headers=test_key
    ).json()
    assert (len(by_rate["items"]), by_rate["pagination"]["total"]) == (1, 2)

    deleted = client.delete(f"/v1/taxes/associations/{aid}", headers=test_key)
    assert deleted.status_code == 200 and deleted.json()["status"] == "archived"
    assert_error(client.get(f"/v1/taxes/associations/{aid}", headers=test_key), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tax_rate_code": "NOPE", "entity_type": "tenant"}, "tax_rate_code"),
        ({"entity_type": "tenant"}, "tax_rate_code"),
        ({"tax_rate_code": "VAT20", "entity_type": "customer", "entity_id": "cust_x"}, "entity_id"),
        ({"tax_rate_code": "VAT20", "external_customer_id": "nobody"}, "external_customer_id"),
        ({"tax_rate_code": "VAT20", "entity_type": "planet"}, "entity_type"),
        ({"tax_rate_code": "VAT20", "entity_type": "tenant", "priority": "high"}, "priority"),
        ({"tax_rate_code": "VAT20", "entity_type": "tenant", "extra": 1}, "extra"),
    ],
)
def test_bad_input_is_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], body: dict[str, Any], field: str
) -> None:
    error = assert_error(
        client.post("/v1/taxes/associations", json=body, headers=test_key), 400, "validation_error"
    )
    assert error["details"]["field"] == field
    assert client.get("/v1/taxes/associations", headers=test_key).json()["items"] == []


def test_an_inactive_rate_is_400(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    client.put(
        f"/v1/taxes/rates/{world['tax_rate_id']}", json={"tax_rate_status": "INACTIVE"}, headers=test_key
    )
    error = assert_error(
        client.post(
            "/v1/taxes/associations",
            json={"tax_rate_code": "VAT20", "entity_type": "tenant"},
            headers=test_key,
        ),
        400,
        "validation_error",
    )
    assert error["details"]["field"] == "tax_rate_code"


def test_update_refuses_other_fields_and_another_environment_sees_nothing(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], world: dict[str, str]
) -> None:
    made = client.post(
        "/v1/taxes/associations", json={"tax_rate_code": "VAT20", "entity_type": "tenant"}, headers=test_key
    ).json()
    error = assert_error(
        client.put(f"/v1/taxes/associations/{made['id']}", json={"currency": "eur"}, headers=test_key),
        400,
        "validation_error",
    )
    assert error["details"]["field"] == "currency"
    assert_error(client.get(f"/v1/taxes/associations/{made['id']}", headers=prod_key), 404, "not_found")
    assert_error(client.delete(f"/v1/taxes/associations/{made['id']}", headers=prod_key), 404, "not_found")


def test_invoice_taxes_and_overrides_on_subscription_create(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    plan = client.post("/v1/plans", json={"name": "Pro", "prices": [FEE]}, headers=test_key).json()
    base = {
        "customer_id": world["customer_id"],
        "plan_id": plan["id"],
        "currency": "usd",
        "billing_period": "MONTHLY",
    }
    refused = client.post(
        "/v1/subscriptions",
        json={**base, "tax_rate_overrides": [{"tax_rate_code": "VAT20", "currency": "eur"}]},
        headers=test_key,
    )
    assert (
        assert_error(refused, 400, "validation_error")["details"]["field"] == "tax_rate_overrides[0].currency"
    )
    sub = client.post(
        "/v1/subscriptions",
        json={**base, "tax_rate_overrides": [{"tax_rate_code": "VAT20", "currency": "usd", "priority": 1}]},
        headers=test_key,
    )
    assert sub.status_code == 201, sub.text
    invoices = client.post(
        "/v1/invoices/search", json={"subscription_id": sub.json()["id"]}, headers=test_key
    )
    (invoice,) = invoices.json()["items"]
    assert client.get(f"/v1/invoices/{invoice['id']}", headers=test_key).json()["taxes"] == invoice["taxes"]
    # 200.00 x 20 / 100 = 40.00; 200.00 + 40.00 = 240.00
    assert (invoice["subtotal"], invoice["total_tax"], invoice["total"]) == ("200.00", "40.00", "240.00")
    (tax,) = invoice["taxes"]
    assert (tax["taxable_amount"], tax["tax_amount"], tax["tax_rate"]["code"]) == ("200.00", "40.00", "VAT20")
    (association,) = client.get(
        "/v1/taxes/associations", params={"entity_id": sub.json()["id"]}, headers=test_key
    ).json()["items"]
    assert tax["tax_association_id"] == association["id"] and association["entity_type"] == "subscription"
