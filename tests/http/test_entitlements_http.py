"""``/v1/entitlements`` over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.services.access import BootstrapResult
from billingkit.testing.contracts.storage import sample
from tests.http.conftest import assert_error


@pytest.fixture
def ids(billing: Billing, setup: BootstrapResult) -> dict[str, str]:
    """A plan, an add-on and a metered and a boolean feature in the test environment."""
    t, env = setup.tenant.id, setup.environments[0][0].id
    plain = {"meter_id": None, "reporting_unit": None, "alert_settings": None}
    items = {
        "plan": sample("plans", t, env),
        "addon": sample("addons", t, env),
        "metered": sample("features", t, env, type="metered", meter_id="meter_1"),
        "boolean": sample("features", t, env, type="boolean", **plain),
    }
    with billing.storage.unit_of_work(t, env) as uow:
        uow.plans.add(items["plan"])
        uow.addons.add(items["addon"])
        uow.features.add(items["metered"])
        uow.features.add(items["boolean"])
        uow.commit()
    return {name: item.id for name, item in items.items()}


def _body(ids: dict[str, str], **fields: Any) -> dict[str, Any]:
    return {
        "plan_id": ids["plan"],
        "feature_id": ids["metered"],
        "feature_type": "metered",
        "usage_limit": 1000,
        "usage_reset_period": "MONTHLY",
        "grant_quota": "50",
        **fields,
    }


def test_round_trip(client: TestClient, test_key: dict[str, str], ids: dict[str, str]) -> None:
    created = client.post("/v1/entitlements", json=_body(ids), headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["id"].startswith("ent_")
    assert (body["entity_type"], body["entity_id"], body["plan_id"], body["feature_type"]) == (
        "PLAN",
        ids["plan"],
        ids["plan"],
        "metered",
    )
    assert (body["usage_limit"], body["usage_reset_period"], body["grant_quota"], body["is_enabled"]) == (
        1000,
        "MONTHLY",
        "50",
        True,
    )
    eid = body["id"]
    assert client.get(f"/v1/entitlements/{eid}", headers=test_key).json() == body
    expanded = client.get(f"/v1/entitlements/{eid}", params={"expand": "features"}, headers=test_key).json()
    assert expanded["feature"]["id"] == ids["metered"] and expanded["feature"]["type"] == "metered"

    updated = client.put(
        f"/v1/entitlements/{eid}", json={"usage_limit": 5, "clear_grant_config": True}, headers=test_key
    )
    assert updated.status_code == 200, updated.text
    assert (updated.json()["usage_limit"], updated.json()["grant_quota"]) == (5, None)

    listed = client.get(
        "/v1/entitlements", params={"plan_ids": ids["plan"], "feature_type": "metered"}, headers=test_key
    ).json()
    assert [e["id"] for e in listed["items"]] == [eid]
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    listed = client.get(
        "/v1/entitlements", params={"expand": "features", "is_enabled": "false"}, headers=test_key
    )
    assert listed.json()["pagination"]["total"] == 0
    found = client.post(
        "/v1/entitlements/search",
        json={"feature_ids": [ids["metered"]], "expand": "features"},
        headers=test_key,
    ).json()
    assert [e["feature"]["id"] for e in found["items"]] == [ids["metered"]]

    deleted = client.delete(f"/v1/entitlements/{eid}", headers=test_key)
    assert deleted.status_code == 200 and deleted.json() == {"message": "entitlement deleted successfully"}
    assert_error(client.get(f"/v1/entitlements/{eid}", headers=test_key), 404, "not_found")


def test_bulk_create_is_all_or_nothing(
    client: TestClient, test_key: dict[str, str], ids: dict[str, str]
) -> None:
    items = [
        {"plan_id": ids["plan"], "feature_id": ids["metered"], "grant_quota": "100.0", "usage_limit": 10},
        {"entity_id": ids["addon"], "entity_type": "ADDON", "feature_id": ids["boolean"]},
    ]
    bad = [items[0], {**items[1], "grant_quota": "1.5"}]
    body = assert_error(
        client.post("/v1/entitlements/bulk", json={"items": bad}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "items[1].grant_quota"
    bad = [items[0], {**items[1], "feature_id": "feat_missing"}]
    body = assert_error(
        client.post("/v1/entitlements/bulk", json={"items": bad}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "items[1].feature_id"
    assert client.get("/v1/entitlements", headers=test_key).json()["pagination"]["total"] == 0

    created = client.post("/v1/entitlements/bulk", json={"items": items}, headers=test_key)
    assert created.status_code == 201, created.text
    got = created.json()["items"]
    assert [(e["feature_id"], e["grant_quota"], e["entity_type"]) for e in got] == [
        (ids["metered"], "100", "PLAN"),
        (ids["boolean"], None, "ADDON"),
    ]
    assert_error(
        client.post("/v1/entitlements/bulk", json={"items": items}, headers=test_key), 409, "already_exists"
    )
    assert client.get("/v1/entitlements", headers=test_key).json()["pagination"]["total"] == 2


def test_bad_input_is_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], ids: dict[str, str]
) -> None:
    for patch, field in (
        ({"grant_quota": "1.5"}, "grant_quota"),
        ({"feature_type": "boolean"}, "feature_type"),
        ({"feature_id": "feat_missing"}, "feature_id"),
        ({"plan_id": "plan_missing"}, "entity_id"),
        ({"usage_reset_period": "HOURLY"}, "usage_reset_period"),
        ({"plan_id": None}, "entity_id"),
    ):
        body = assert_error(
            client.post("/v1/entitlements", json=_body(ids, **patch), headers=test_key),
            400,
            "validation_error",
        )
        assert body["details"]["field"] == field
    assert client.get("/v1/entitlements", headers=test_key).json()["pagination"]["total"] == 0
    eid = client.post("/v1/entitlements", json=_body(ids), headers=test_key).json()["id"]
    assert_error(client.post("/v1/entitlements", json=_body(ids), headers=test_key), 409, "already_exists")
    body = assert_error(
        client.put(f"/v1/entitlements/{eid}", json={"static_value": "x"}, headers=test_key),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == "static_value"


def test_other_environment_is_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], ids: dict[str, str]
) -> None:
    eid = client.post("/v1/entitlements", json=_body(ids), headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/entitlements/{eid}", headers=prod_key), 404, "not_found")
    assert_error(
        client.put(f"/v1/entitlements/{eid}", json={"usage_limit": 1}, headers=prod_key), 404, "not_found"
    )
    assert_error(client.delete(f"/v1/entitlements/{eid}", headers=prod_key), 404, "not_found")
    assert client.get("/v1/entitlements", headers=prod_key).json()["pagination"]["total"] == 0


def test_reader_can_read_not_write(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str], ids: dict[str, str]
) -> None:
    eid = client.post("/v1/entitlements", json=_body(ids), headers=test_key).json()["id"]
    assert client.get(f"/v1/entitlements/{eid}", headers=reader_key).status_code == 200
    assert (
        client.post("/v1/entitlements/search", json={}, headers=reader_key).json()["pagination"]["total"] == 1
    )
    assert_error(
        client.post("/v1/entitlements", json=_body(ids), headers=reader_key), 403, "permission_denied"
    )
    assert_error(
        client.post("/v1/entitlements/bulk", json={"items": [_body(ids)]}, headers=reader_key),
        403,
        "permission_denied",
    )
    assert_error(client.put(f"/v1/entitlements/{eid}", json={}, headers=reader_key), 403, "permission_denied")
    assert_error(client.delete(f"/v1/entitlements/{eid}", headers=reader_key), 403, "permission_denied")
