"""The customer and subscription views over HTTP: routing (``/customers/usage`` is no customer
id), bad input as 400 (never 422) with nothing written, 401, 404 and 409. The success shapes are
checked by the answer models (tests/http/conftest.py) and the SDK round trips (tests/compat)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import MemoryStorage
from tests.http.conftest import assert_error, service_key

FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "20",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}


@pytest.fixture
def storage() -> Iterator[Any]:
    """Memory only: the routes only parse, call the library and render."""
    store = MemoryStorage()
    yield store
    store.close()


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, Any]:
    plan = client.post("/v1/plans", json={"name": "Pro", "prices": [FEE]}, headers=test_key).json()
    customer = client.post(
        "/v1/customers", json={"external_id": "ada", "name": "Ada"}, headers=test_key
    ).json()
    sub = client.post(
        "/v1/subscriptions",
        json={
            "customer_id": customer["id"],
            "plan_id": plan["id"],
            "currency": "usd",
            "billing_period": "MONTHLY",
        },
        headers=test_key,
    ).json()
    return {"customer": customer, "sub": sub, "plan": plan}


def test_the_usage_summary_route(client: TestClient, test_key: dict[str, str], world: dict[str, Any]) -> None:
    customer = world["customer"]
    ok = client.get("/v1/customers/usage", params={"customer_lookup_key": "ada"}, headers=test_key)
    assert ok.status_code == 200, ok.text
    assert ok.json()["customer_id"] == customer["id"]
    assert ok.json()["features"] == [] and ok.json()["period"]["period"] == "monthly"
    listed = client.get(
        "/v1/customers/usage",
        params={"customer_id": customer["id"], "feature_ids": "feat_a,feat_b", "subscription_ids": "x"},
        headers=test_key,
    )
    assert listed.status_code == 200 and listed.json()["period"] is None
    assert_error(client.get("/v1/customers/usage", headers=test_key), 400, "validation_error")
    missing = client.get("/v1/customers/usage", params={"customer_id": "cust_missing"}, headers=test_key)
    assert_error(missing, 404, "not_found")
    assert_error(client.get("/v1/customers/usage", params={"customer_id": "c"}), 401, "unauthorized")


def test_the_invoice_summary_route(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    customer = world["customer"]
    ok = client.get(f"/v1/customers/{customer['id']}/invoices/summary", headers=test_key)
    assert ok.status_code == 200, ok.text
    assert ok.json() == {
        "customer_id": customer["id"],
        "default_currency": "usd",
        "summaries": [
            {
                "customer_id": customer["id"],
                "currency": "usd",
                "total_invoice_count": 1,
                "total_revenue_amount": "20.00",
                "unpaid_invoice_count": 1,
                "total_unpaid_amount": "20.00",
                "overdue_invoice_count": 0,
                "total_overdue_amount": "0",
                "unpaid_usage_charges": "0",
                "unpaid_fixed_charges": "20.00",
            }
        ],
    }
    assert_error(
        client.get("/v1/customers/cust_missing/invoices/summary", headers=test_key), 404, "not_found"
    )


def test_subscription_usage_and_update_routes(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    sub = world["sub"]
    usage = client.post("/v1/subscriptions/usage", json={"subscription_id": sub["id"]}, headers=test_key)
    assert usage.status_code == 200, usage.text
    assert (usage.json()["amount"], usage.json()["charges"]) == ("0", [])
    assert_error(client.post("/v1/subscriptions/usage", json={}, headers=test_key), 400, "validation_error")
    bad_time = {"subscription_id": sub["id"], "start_time": "yesterday"}
    assert_error(
        client.post("/v1/subscriptions/usage", json=bad_time, headers=test_key), 400, "validation_error"
    )

    path = f"/v1/subscriptions/{sub['id']}"
    assert_error(client.put(path, json={"status": "bogus"}, headers=test_key), 400, "validation_error")
    assert_error(
        client.put(path, json={"cancel_at_period_end": "maybe"}, headers=test_key), 400, "validation_error"
    )
    stale = client.put(
        path, json={"cancel_at_period_end": True, "version": sub["version"] + 3}, headers=test_key
    )
    assert_error(stale, 409, "version_conflict")
    assert client.get(path, headers=test_key).json() == sub  # nothing written
    updated = client.put(
        path, json={"cancel_at_period_end": True, "version": sub["version"]}, headers=test_key
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["cancel_at_period_end"] is True
    assert updated.json()["version"] > sub["version"]
    assert_error(client.put("/v1/subscriptions/subs_missing", json={}, headers=test_key), 404, "not_found")
    reader = service_key(client, test_key, ["all_reader"])
    denied = client.put(path, json={"cancel_at_period_end": False}, headers=reader)
    assert_error(denied, 403, "permission_denied")


def test_usage_records_and_recalculation_routes(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    empty = client.post("/v1/usage-records/search", json={}, headers=test_key)
    assert empty.status_code == 200, empty.text
    assert empty.json() == {"items": [], "pagination": {"limit": 50, "offset": 0, "total": 0}}
    for body in ({"limit": 0}, {"sort": [{"field": "nope"}]}, {"synced": "perhaps"}, {"unknown": 1}):
        response = client.post("/v1/usage-records/search", json=body, headers=test_key)
        assert_error(response, 400, "validation_error")

    (opening,) = client.post("/v1/invoices/search", json={}, headers=test_key).json()["items"]
    refused = client.post(f"/v1/invoices/{opening['id']}/recalculate-v2", headers=test_key)
    assert_error(refused, 400, "invalid_operation")
    assert_error(
        client.post(f"/v1/invoices/{opening['id']}/recalculate", headers=test_key), 400, "invalid_operation"
    )
    bad = client.post(
        f"/v1/invoices/{opening['id']}/recalculate-v2", params={"finalize": "maybe"}, headers=test_key
    )
    assert_error(bad, 400, "validation_error")
    assert_error(client.post("/v1/invoices/inv_missing/recalculate-v2", headers=test_key), 404, "not_found")
    assert client.get(f"/v1/invoices/{opening['id']}", headers=test_key).json() == opening
