"""``/v1/meters`` over HTTP."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

METER: dict[str, Any] = {
    "name": "Tokens",
    "event_name": "llm_call",
    "aggregation": {"type": "SUM_WITH_MULTIPLIER", "field": "tokens", "multiplier": "0.001"},
    "filters": [{"key": "model", "values": ["gpt"]}],
    "reset_usage": "NEVER",
}


def test_round_trip(client: TestClient, test_key: dict[str, str]) -> None:
    created = client.post("/v1/meters", json=METER, headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["aggregation"] == {
        "type": "SUM_WITH_MULTIPLIER",
        "field": "tokens",
        "expression": None,
        "group_by": None,
        "multiplier": "0.001",
        "bucket_size": None,
    }
    assert (body["name"], body["event_name"], body["filters"], body["reset_usage"], body["status"]) == (
        "Tokens",
        "llm_call",
        [{"key": "model", "values": ["gpt"]}],
        "NEVER",
        "published",
    )
    mid = body["id"]
    assert mid.startswith("meter_")
    assert client.get(f"/v1/meters/{mid}", headers=test_key).json() == body

    updated = client.put(
        f"/v1/meters/{mid}",
        json={"name": "LLM tokens", "filters": [{"key": "model", "values": ["o1"]}]},
        headers=test_key,
    )
    assert updated.status_code == 200, updated.text
    assert updated.json()["name"] == "LLM tokens"
    assert updated.json()["filters"] == [{"key": "model", "values": ["gpt", "o1"]}]

    other = client.post(
        "/v1/meters",
        json={"name": "Calls", "event_name": "api", "aggregation": {"type": "COUNT"}},
        headers=test_key,
    ).json()
    assert other["reset_usage"] == "BILLING_PERIOD"
    listed = client.get("/v1/meters", params={"event_name": "llm_call"}, headers=test_key).json()
    assert [m["id"] for m in listed["items"]] == [mid]
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    both = client.get("/v1/meters", params={"order": "asc", "limit": 1, "offset": 1}, headers=test_key).json()
    assert [m["id"] for m in both["items"]] == [other["id"]] and both["pagination"]["total"] == 2
    found = client.post("/v1/meters/search", json={"meter_ids": [other["id"]]}, headers=test_key).json()
    assert [m["id"] for m in found["items"]] == [other["id"]]

    assert client.delete(f"/v1/meters/{mid}", headers=test_key).status_code == 204
    assert_error(client.get(f"/v1/meters/{mid}", headers=test_key), 404, "not_found")


def test_bad_input_is_400_naming_the_field(client: TestClient, test_key: dict[str, str]) -> None:
    for patch, field in (
        ({"aggregation": {"type": "MEDIAN"}}, "aggregation.type"),
        ({"aggregation": {"type": "SUM"}}, "aggregation.field"),
        (
            {"aggregation": {"type": "SUM_WITH_MULTIPLIER", "field": "t", "multiplier": 2.5}},
            "aggregation.multiplier",
        ),
        ({"aggregation": {"type": "COUNT", "bucket_size": "DAY"}}, "aggregation.bucket_size"),
        ({"filters": [{"key": "a", "values": []}]}, "filters[0].values"),
        ({"event_name": None}, "event_name"),
    ):
        body = assert_error(
            client.post("/v1/meters", json={**METER, **patch}, headers=test_key), 400, "validation_error"
        )
        assert body["details"]["field"] == field
    assert client.get("/v1/meters", headers=test_key).json()["pagination"]["total"] == 0

    mid = client.post("/v1/meters", json=METER, headers=test_key).json()["id"]
    body = assert_error(
        client.put(f"/v1/meters/{mid}", json={"aggregation": {"type": "COUNT"}}, headers=test_key),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == "aggregation"
    body = assert_error(
        client.put(f"/v1/meters/{mid}", json={"event_name": "x"}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "event_name"


def test_delete_refused_while_in_use(client: TestClient, test_key: dict[str, str]) -> None:
    mid = client.post("/v1/meters", json=METER, headers=test_key).json()["id"]
    fid = client.post(
        "/v1/features", json={"name": "Tokens", "type": "metered", "meter_id": mid}, headers=test_key
    ).json()["id"]
    body = assert_error(client.delete(f"/v1/meters/{mid}", headers=test_key), 400, "invalid_operation")
    assert body["details"] == {"feature_id": fid}
    assert client.get(f"/v1/meters/{mid}", headers=test_key).status_code == 200


def test_other_environment_is_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str]
) -> None:
    mid = client.post("/v1/meters", json=METER, headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/meters/{mid}", headers=prod_key), 404, "not_found")
    assert_error(client.put(f"/v1/meters/{mid}", json={"name": "x"}, headers=prod_key), 404, "not_found")
    assert_error(client.delete(f"/v1/meters/{mid}", headers=prod_key), 404, "not_found")


def test_reader_can_read_not_write(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str]
) -> None:
    mid = client.post("/v1/meters", json=METER, headers=test_key).json()["id"]
    assert client.get(f"/v1/meters/{mid}", headers=reader_key).status_code == 200
    assert client.get("/v1/meters", headers=reader_key).json()["pagination"]["total"] == 1
    assert client.post("/v1/meters/search", json={}, headers=reader_key).status_code == 200
    assert_error(client.post("/v1/meters", json=METER, headers=reader_key), 403, "permission_denied")
    assert_error(
        client.put(f"/v1/meters/{mid}", json={"name": "x"}, headers=reader_key), 403, "permission_denied"
    )
    assert_error(client.delete(f"/v1/meters/{mid}", headers=reader_key), 403, "permission_denied")
