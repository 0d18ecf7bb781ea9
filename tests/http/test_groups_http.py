"""``/v1/groups`` over HTTP."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

GROUP = {"name": "AI", "lookup_key": "ai", "entity_type": "feature", "metadata": {"a": "b"}}


def test_round_trip(client: TestClient, test_key: dict[str, str]) -> None:
    fid = client.post("/v1/features", json={"name": "SSO", "type": "boolean"}, headers=test_key).json()["id"]
    created = client.post("/v1/groups", json={**GROUP, "entity_ids": [fid]}, headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    for field, value in GROUP.items():
        assert body[field] == value
    assert (body["entity_ids"], body["status"]) == ([fid], "published")
    gid = body["id"]
    assert gid.startswith("group_")
    assert client.get(f"/v1/groups/{gid}", headers=test_key).json() == body
    assert client.get("/v1/groups", headers=test_key).json() == {
        "items": [body],
        "pagination": {"limit": 50, "offset": 0, "total": 1},
    }
    assert client.get("/v1/groups", params={"entity_type": "price"}, headers=test_key).json()["items"] == []
    found = client.post("/v1/groups/search", json={"lookup_key": "ai", "name": "A"}, headers=test_key).json()
    assert [g["id"] for g in found["items"]] == [gid]
    assert (
        client.post("/v1/groups/search", json={"group_ids": ["group_x"]}, headers=test_key).json()["items"]
        == []
    )

    deleted = client.delete(f"/v1/groups/{gid}", headers=test_key)
    assert deleted.status_code == 204 and deleted.content == b""
    assert_error(client.get(f"/v1/groups/{gid}", headers=test_key), 404, "not_found")
    assert client.get(f"/v1/features/{fid}", headers=test_key).json()["group_id"] is None


def test_bad_input_is_400_naming_the_field(client: TestClient, test_key: dict[str, str]) -> None:
    for patch, field in (
        ({"entity_type": "plan"}, "entity_type"),
        ({"lookup_key": None}, "lookup_key"),
        ({"entity_ids": ["feat_missing"]}, "entity_ids[0]"),
    ):
        body = assert_error(
            client.post("/v1/groups", json={**GROUP, **patch}, headers=test_key), 400, "validation_error"
        )
        assert body["details"]["field"] == field
    assert client.get("/v1/groups", headers=test_key).json()["pagination"]["total"] == 0
    client.post("/v1/groups", json=GROUP, headers=test_key)
    assert_error(client.post("/v1/groups", json=GROUP, headers=test_key), 409, "already_exists")


def test_other_environment_is_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str]
) -> None:
    gid = client.post("/v1/groups", json=GROUP, headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/groups/{gid}", headers=prod_key), 404, "not_found")
    assert_error(client.delete(f"/v1/groups/{gid}", headers=prod_key), 404, "not_found")


def test_reader_can_read_not_write(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str]
) -> None:
    gid = client.post("/v1/groups", json=GROUP, headers=test_key).json()["id"]
    assert client.get(f"/v1/groups/{gid}", headers=reader_key).status_code == 200
    assert client.post("/v1/groups/search", json={}, headers=reader_key).json()["pagination"]["total"] == 1
    assert_error(client.post("/v1/groups", json=GROUP, headers=reader_key), 403, "permission_denied")
    assert_error(client.delete(f"/v1/groups/{gid}", headers=reader_key), 403, "permission_denied")
