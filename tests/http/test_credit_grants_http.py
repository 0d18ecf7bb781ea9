"""``/v1/creditgrants`` over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.services.access import BootstrapResult
from billingkit.testing.contracts.storage import sample
from tests.http.conftest import assert_error


@pytest.fixture
def owners(billing: Billing, setup: BootstrapResult) -> dict[str, str]:
    t, env = setup.tenant.id, setup.environments[0][0].id
    plan, addon = sample("plans", t, env), sample("addons", t, env)
    with billing.storage.unit_of_work(t, env) as uow:
        uow.plans.add(plan)
        uow.addons.add(addon)
        uow.commit()
    return {"plan": plan.id, "addon": addon.id}


def _grant(owners: dict[str, str], **fields: Any) -> dict[str, Any]:
    return {
        "name": "Welcome credits",
        "scope": "PLAN",
        "plan_id": owners["plan"],
        "credits": "500.25",
        "cadence": "RECURRING",
        "period": "MONTHLY",
        "period_count": 1,
        "expiration_type": "NEVER",
        "priority": 2,
        "conversion_rate": "1",
        "metadata": {"a": "b"},
        **fields,
    }


def test_round_trip(client: TestClient, test_key: dict[str, str], owners: dict[str, str]) -> None:
    sent = _grant(owners)
    created = client.post("/v1/creditgrants", json=sent, headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    for field, value in sent.items():
        assert body[field] == value
    assert (body["addon_id"], body["subscription_id"], body["status"]) == (None, None, "published")
    gid = body["id"]
    assert gid.startswith("cg_")
    assert client.get(f"/v1/creditgrants/{gid}", headers=test_key).json() == body
    fixed = client.put(f"/v1/creditgrants/{gid}", json={"name": "Renamed", "credits": "1"}, headers=test_key)
    assert assert_error(fixed, 400, "validation_error")["details"]["field"] == "credits"
    updated = client.put(
        f"/v1/creditgrants/{gid}",
        json={"name": "Renamed", "end_date": "2027-01-01T00:00:00Z"},
        headers=test_key,
    )
    assert updated.status_code == 200, updated.text
    assert (updated.json()["name"], updated.json()["end_date"], updated.json()["credits"]) == (
        "Renamed",
        "2027-01-01T00:00:00Z",
        "500.25",
    )
    addon = client.post(
        "/v1/creditgrants",
        json=_grant(owners, scope="ADDON", plan_id=None, addon_id=owners["addon"]),
        headers=test_key,
    )
    assert addon.status_code == 201, addon.text
    listed = client.get("/v1/creditgrants", params={"plan_ids": owners["plan"]}, headers=test_key).json()
    assert [g["id"] for g in listed["items"]] == [gid]
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    by_scope = client.get("/v1/creditgrants", params={"scope": "ADDON"}, headers=test_key).json()
    assert [g["id"] for g in by_scope["items"]] == [addon.json()["id"]]
    deleted = client.delete(f"/v1/creditgrants/{gid}", headers=test_key)
    assert deleted.status_code == 200 and deleted.json() == {"message": "credit grant deleted successfully"}
    assert_error(client.get(f"/v1/creditgrants/{gid}", headers=test_key), 404, "not_found")


def test_bad_input_is_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], owners: dict[str, str]
) -> None:
    for patch, field in (
        ({"credits": "0"}, "credits"),
        ({"credits": 1.5}, "credits"),
        ({"period": None}, "period"),
        ({"scope": "SUBSCRIPTION", "plan_id": None, "subscription_id": "subs_1"}, "scope"),
        ({"plan_id": "plan_missing"}, "plan_id"),
        ({"scope": "ADDON"}, "plan_id"),
        ({"scope": "ADDON", "plan_id": None, "addon_id": "addon_missing"}, "addon_id"),
        ({"expiration_type": "DURATION"}, "expiration_duration"),
        ({"name": None}, "name"),
    ):
        body = assert_error(
            client.post("/v1/creditgrants", json=_grant(owners, **patch), headers=test_key),
            400,
            "validation_error",
        )
        assert body["details"]["field"] == field
    assert client.get("/v1/creditgrants", headers=test_key).json()["pagination"]["total"] == 0


def test_other_environment_is_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], owners: dict[str, str]
) -> None:
    gid = client.post("/v1/creditgrants", json=_grant(owners), headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/creditgrants/{gid}", headers=prod_key), 404, "not_found")
    assert_error(
        client.put(f"/v1/creditgrants/{gid}", json={"name": "x"}, headers=prod_key), 404, "not_found"
    )
    assert_error(client.delete(f"/v1/creditgrants/{gid}", headers=prod_key), 404, "not_found")
    body = assert_error(
        client.post("/v1/creditgrants", json=_grant(owners), headers=prod_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "plan_id"


def test_reader_can_read_not_write(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str], owners: dict[str, str]
) -> None:
    gid = client.post("/v1/creditgrants", json=_grant(owners), headers=test_key).json()["id"]
    assert client.get(f"/v1/creditgrants/{gid}", headers=reader_key).status_code == 200
    assert client.get("/v1/creditgrants", headers=reader_key).json()["pagination"]["total"] == 1
    assert_error(
        client.post("/v1/creditgrants", json=_grant(owners), headers=reader_key), 403, "permission_denied"
    )
    assert_error(
        client.put(f"/v1/creditgrants/{gid}", json={"name": "x"}, headers=reader_key),
        403,
        "permission_denied",
    )
    assert_error(client.delete(f"/v1/creditgrants/{gid}", headers=reader_key), 403, "permission_denied")
