"""``/v1/features`` over HTTP."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

METER: dict[str, Any] = {"name": "Calls", "event_name": "api_call", "aggregation": {"type": "COUNT"}}
FEATURE: dict[str, Any] = {
    "name": "API calls",
    "type": "metered",
    "description": "Calls",
    "lookup_key": "api-calls",
    "meter": METER,
    "metadata": {"a": "b"},
    "unit_singular": "call",
    "unit_plural": "calls",
    "reporting_unit": {"unit_singular": "kcall", "unit_plural": "kcalls", "conversion_rate": "0.001"},
    "alert_settings": {
        "alert_enabled": True,
        "critical": {"threshold": "100", "condition": "above"},
        "warning": {"threshold": "80", "condition": "above"},
        "info": None,
    },
}


def test_round_trip(client: TestClient, test_key: dict[str, str]) -> None:
    gid = client.post(
        "/v1/groups", json={"name": "G", "lookup_key": "g", "entity_type": "feature"}, headers=test_key
    ).json()["id"]
    created = client.post("/v1/features", json={**FEATURE, "group_id": gid}, headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    for field in ("name", "type", "description", "lookup_key", "metadata", "unit_singular", "unit_plural"):
        assert body[field] == FEATURE[field]
    assert body["reporting_unit"] == FEATURE["reporting_unit"]
    assert body["alert_settings"] == FEATURE["alert_settings"]
    assert (body["group_id"], body["status"], body["id"][:5]) == (gid, "published", "feat_")
    fid, mid = body["id"], body["meter_id"]
    meter = client.get(f"/v1/meters/{mid}", headers=test_key).json()
    assert (meter["name"], meter["event_name"]) == ("Calls", "api_call")

    got = client.get(f"/v1/features/{fid}", headers=test_key).json()
    assert got == {**body, "meter": meter}
    with_group = client.get(f"/v1/features/{fid}", params={"expand": "groups"}, headers=test_key).json()
    assert with_group["group"]["id"] == gid and with_group["group"]["entity_ids"] == [fid]

    updated = client.put(
        f"/v1/features/{fid}",
        json={"name": "Calls", "group_id": "", "filters": [{"key": "region", "values": ["eu"]}]},
        headers=test_key,
    )
    assert updated.status_code == 200, updated.text
    assert (updated.json()["name"], updated.json()["group_id"]) == ("Calls", None)
    assert client.get(f"/v1/meters/{mid}", headers=test_key).json()["filters"] == [
        {"key": "region", "values": ["eu"]}
    ]

    clone = client.post(
        f"/v1/features/{fid}/clone", json={"name": "Calls 2", "lookup_key": "c2"}, headers=test_key
    )
    assert clone.status_code == 201, clone.text
    assert (clone.json()["meter_id"], clone.json()["lookup_key"]) == (mid, "c2")

    listed = client.get(
        "/v1/features", params={"lookup_keys": "api-calls,c2", "order": "asc"}, headers=test_key
    )
    assert [f["id"] for f in listed.json()["items"]] == [fid, clone.json()["id"]]
    assert "meter" not in listed.json()["items"][0]
    expanded = client.get("/v1/features", params={"expand": "meters", "name_contains": "2"}, headers=test_key)
    assert [f["meter"]["id"] for f in expanded.json()["items"]] == [mid]
    searched = client.post(
        "/v1/features/search",
        json={"meter_ids": [mid], "feature_ids": [fid], "expand": "meters"},
        headers=test_key,
    ).json()
    assert [f["id"] for f in searched["items"]] == [fid] and searched["items"][0]["meter"]["id"] == mid
    assert searched["pagination"] == {"limit": 50, "offset": 0, "total": 1}

    deleted = client.delete(f"/v1/features/{fid}", headers=test_key)
    assert deleted.status_code == 200 and deleted.json() == {"message": "feature deleted successfully"}
    assert_error(client.get(f"/v1/features/{fid}", headers=test_key), 404, "not_found")


def test_bad_input_is_400_naming_the_field(client: TestClient, test_key: dict[str, str]) -> None:
    for patch, field in (
        ({"type": "usage"}, "type"),
        ({"meter": None}, "meter_id"),
        ({"meter": None, "meter_id": "meter_missing"}, "meter_id"),
        ({"meter": {**METER, "aggregation": {"type": "SUM"}}}, "meter.aggregation.field"),
        (
            {"reporting_unit": {"unit_singular": "a", "unit_plural": "b", "conversion_rate": 0}},
            "reporting_unit.conversion_rate",
        ),
        ({"alert_settings": {"critical": {"threshold": 1.5}}}, "alert_settings.critical.threshold"),
        ({"group_id": "group_missing"}, "group_id"),
    ):
        body = assert_error(
            client.post("/v1/features", json={**FEATURE, **patch}, headers=test_key), 400, "validation_error"
        )
        assert body["details"]["field"] == field
    assert client.get("/v1/features", headers=test_key).json()["pagination"]["total"] == 0
    assert client.get("/v1/meters", headers=test_key).json()["pagination"]["total"] == 0

    fid = client.post("/v1/features", json=FEATURE, headers=test_key).json()["id"]
    assert_error(client.post("/v1/features", json=FEATURE, headers=test_key), 409, "already_exists")
    body = assert_error(
        client.put(f"/v1/features/{fid}", json={"name": None}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "name"
    body = assert_error(
        client.post(
            f"/v1/features/{fid}/clone", json={"name": "API calls", "lookup_key": "x"}, headers=test_key
        ),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == "name"
    assert_error(
        client.post(
            f"/v1/features/{fid}/clone", json={"name": "Other", "lookup_key": "api-calls"}, headers=test_key
        ),
        409,
        "already_exists",
    )


def test_other_environment_is_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str]
) -> None:
    fid = client.post("/v1/features", json=FEATURE, headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/features/{fid}", headers=prod_key), 404, "not_found")
    assert_error(client.put(f"/v1/features/{fid}", json={"name": "x"}, headers=prod_key), 404, "not_found")
    assert_error(client.delete(f"/v1/features/{fid}", headers=prod_key), 404, "not_found")
    assert_error(
        client.post(f"/v1/features/{fid}/clone", json={"name": "x", "lookup_key": "x"}, headers=prod_key),
        404,
        "not_found",
    )


def test_reader_can_read_not_write(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str]
) -> None:
    fid = client.post("/v1/features", json=FEATURE, headers=test_key).json()["id"]
    assert client.get(f"/v1/features/{fid}", headers=reader_key).status_code == 200
    assert client.get("/v1/features", headers=reader_key).json()["pagination"]["total"] == 1
    assert client.post("/v1/features/search", json={}, headers=reader_key).status_code == 200
    assert_error(client.post("/v1/features", json=FEATURE, headers=reader_key), 403, "permission_denied")
    assert_error(
        client.put(f"/v1/features/{fid}", json={"name": "x"}, headers=reader_key), 403, "permission_denied"
    )
    assert_error(client.delete(f"/v1/features/{fid}", headers=reader_key), 403, "permission_denied")
    assert_error(
        client.post(f"/v1/features/{fid}/clone", json={"name": "x", "lookup_key": "x"}, headers=reader_key),
        403,
        "permission_denied",
    )
