"""``/v1/plans`` and ``/v1/addons`` over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

FLAT = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "49.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}
PLAN = {
    "name": "Pro",
    "description": "Teams",
    "lookup_key": "pro",
    "display_order": 2,
    "metadata": {"a": "b"},
}


def _create(client: TestClient, headers: dict[str, str], path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, json=body, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def test_plan_routes(client: TestClient, test_key: dict[str, str]) -> None:
    plan = _create(client, test_key, "/v1/plans", {**PLAN, "prices": [FLAT]})
    for field, value in PLAN.items():
        assert plan[field] == value
    assert [p["amount"] for p in plan["prices"]] == ["49.00"] and plan["entitlements"] == []
    pid = plan["id"]
    assert client.get(f"/v1/plans/{pid}", headers=test_key).json() == plan

    updated = client.put(f"/v1/plans/{pid}", json={"name": "Pro+", "description": None}, headers=test_key)
    assert updated.status_code == 200
    assert (updated.json()["name"], updated.json()["description"], updated.json()["lookup_key"]) == (
        "Pro+",
        None,
        "pro",
    )

    listed = client.get("/v1/plans", params={"expand": "prices"}, headers=test_key).json()
    assert [(p["id"], len(p["prices"])) for p in listed["items"]] == [(pid, 1)]
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    searched = client.post(
        "/v1/plans/search", json={"lookup_key": "pro", "limit": 5}, headers=test_key
    ).json()
    assert [p["id"] for p in searched["items"]] == [pid] and searched["pagination"]["limit"] == 5

    clone = client.post(
        f"/v1/plans/{pid}/clone", json={"name": "Pro annual", "lookup_key": "pro-annual"}, headers=test_key
    )
    assert clone.status_code == 201, clone.text
    assert (
        clone.json()["prices"][0]["amount"] == "49.00"
        and clone.json()["prices"][0]["entity_id"] == clone.json()["id"]
    )
    assert client.get(f"/v1/plans/{pid}/entitlements", headers=test_key).json() == {
        "items": [],
        "pagination": {"limit": 0, "offset": 0, "total": 0},
    }
    assert client.get(f"/v1/plans/{pid}/creditgrants", headers=test_key).json()["items"] == []

    deleted = client.delete(f"/v1/plans/{pid}", headers=test_key)
    assert deleted.status_code == 200 and deleted.json() == {"message": "plan deleted successfully"}
    assert_error(client.get(f"/v1/plans/{pid}", headers=test_key), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"description": "no name"}, "name"),
        ({"name": "P", "prices": [{**FLAT, "amount": "-1"}]}, "prices[0].amount"),
        (
            {"name": "P", "prices": [{**FLAT, "type": "USAGE", "invoice_cadence": "ARREAR"}]},
            "prices[0].meter_id",
        ),
        ({"name": "P", "prices": [{**FLAT, "billing_period": "FORTNIGHTLY"}]}, "prices[0].billing_period"),
        ({"name": "P", "entitlements": [{"feature_id": "feat_nope"}]}, "entitlements[0].feature_id"),
        # Integers beyond what a database integer column holds are refused up front, not a 500.
        ({"name": "P", "display_order": 2**40}, "display_order"),
        (
            {"name": "P", "prices": [{**FLAT, "billing_period_count": 2**40}]},
            "prices[0].billing_period_count",
        ),
        ({"name": "P", "prices": [{**FLAT, "trial_period_days": 2**40}]}, "prices[0].trial_period_days"),
        ({"name": "x" * 256}, "name"),
    ],
)
def test_plan_create_400_names_the_field(
    client: TestClient, test_key: dict[str, str], body: dict[str, Any], field: str
) -> None:
    error = assert_error(client.post("/v1/plans", json=body, headers=test_key), 400, "validation_error")
    assert error["details"]["field"] == field
    assert (
        client.get("/v1/plans", params={"status": "archived"}, headers=test_key).json()["pagination"]["total"]
        == 0
    )
    assert client.get("/v1/plans", headers=test_key).json()["pagination"]["total"] == 0


def test_plan_clone_and_lookup_conflicts(client: TestClient, test_key: dict[str, str]) -> None:
    pid = _create(client, test_key, "/v1/plans", PLAN)["id"]
    assert_error(client.post("/v1/plans", json=PLAN, headers=test_key), 409, "already_exists")
    error = assert_error(
        client.post(f"/v1/plans/{pid}/clone", json={"name": "Pro", "lookup_key": "x"}, headers=test_key),
        400,
        "validation_error",
    )
    assert error["details"]["field"] == "name"
    assert_error(
        client.post(f"/v1/plans/{pid}/clone", json={"name": "Other", "lookup_key": "pro"}, headers=test_key),
        409,
        "already_exists",
    )


def test_other_environment_and_reader(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], reader_key: dict[str, str]
) -> None:
    pid = _create(client, test_key, "/v1/plans", PLAN)["id"]
    aid = _create(client, test_key, "/v1/addons", {"name": "Support", "lookup_key": "support"})["id"]
    for path in (
        f"/v1/plans/{pid}",
        f"/v1/plans/{pid}/entitlements",
        f"/v1/addons/{aid}",
        "/v1/addons/lookup/support",
    ):
        assert_error(client.get(path, headers=prod_key), 404, "not_found")
        assert client.get(path, headers=reader_key).status_code == 200
    assert_error(client.put(f"/v1/plans/{pid}", json={"name": "x"}, headers=prod_key), 404, "not_found")
    assert_error(client.post("/v1/plans", json={"name": "R"}, headers=reader_key), 403, "permission_denied")
    assert_error(client.delete(f"/v1/addons/{aid}", headers=reader_key), 403, "permission_denied")
    assert_error(
        client.post(f"/v1/plans/{pid}/clone", json={"name": "c", "lookup_key": "c"}, headers=reader_key),
        403,
        "permission_denied",
    )


def test_addon_routes(client: TestClient, test_key: dict[str, str]) -> None:
    addon = _create(
        client,
        test_key,
        "/v1/addons",
        {
            "name": "Support",
            "lookup_key": "support",
            "description": "4h",
            "metadata": {"sla": "4h"},
            "prices": [FLAT],
        },
    )
    assert (addon["name"], addon["lookup_key"], addon["metadata"]) == ("Support", "support", {"sla": "4h"})
    assert addon["prices"][0]["entity_type"] == "ADDON"
    aid = addon["id"]
    assert client.get(f"/v1/addons/{aid}", headers=test_key).json() == addon
    assert client.get("/v1/addons/lookup/support", headers=test_key).json()["id"] == aid
    assert (
        client.put(f"/v1/addons/{aid}", json={"name": "Premium"}, headers=test_key).json()["name"]
        == "Premium"
    )
    found = client.post(
        "/v1/addons/search", json={"lookup_keys": ["support"], "expand": "prices"}, headers=test_key
    )
    assert [(a["id"], len(a["prices"])) for a in found.json()["items"]] == [(aid, 1)]
    assert (
        client.get("/v1/addons", params={"lookup_keys": "support,other"}, headers=test_key).json()[
            "pagination"
        ]["total"]
        == 1
    )
    assert client.get(f"/v1/addons/{aid}/entitlements", headers=test_key).json()["items"] == []
    assert client.get(f"/v1/addons/{aid}/creditgrants", headers=test_key).json()["items"] == []
    error = assert_error(
        client.post("/v1/addons", json={"name": "No key"}, headers=test_key), 400, "validation_error"
    )
    assert error["details"]["field"] == "lookup_key"
    assert client.delete(f"/v1/addons/{aid}", headers=test_key).json() == {
        "message": "add-on deleted successfully"
    }
    assert_error(client.get(f"/v1/addons/{aid}", headers=test_key), 404, "not_found")
