"""``/v1/customers`` over HTTP, on every store."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

FULL = {
    "external_id": "acme",
    "name": "Acme Corp",
    "email": "ap@acme.test",
    "contact": "+1 555 0100",
    "timezone": "Asia/Kolkata",
    "address_line1": "1 MG Road",
    "address_line2": None,
    "address_city": "Bengaluru",
    "address_state": "KA",
    "address_postal_code": "560001",
    "address_country": "IN",
    "metadata": {"crm": "42"},
}


def test_crud_round_trip(client: TestClient, test_key: dict[str, str]) -> None:
    created = client.post("/v1/customers", json=FULL, headers=test_key)
    assert created.status_code == 201
    body = created.json()
    for field, value in FULL.items():
        assert body[field] == value
    for common in (
        "id",
        "tenant_id",
        "environment_id",
        "status",
        "created_at",
        "updated_at",
        "created_by",
        "updated_by",
    ):
        assert body[common]
    assert body["status"] == "published" and body["created_at"].endswith("Z")
    cid = body["id"]
    assert client.get(f"/v1/customers/{cid}", headers=test_key).json() == body
    assert client.get("/v1/customers/external/acme", headers=test_key).json()["id"] == cid

    updated = client.put(f"/v1/customers/{cid}", json={"name": "Acme Ltd", "email": None}, headers=test_key)
    assert updated.status_code == 200
    assert (updated.json()["name"], updated.json()["email"], updated.json()["timezone"]) == (
        "Acme Ltd",
        None,
        "Asia/Kolkata",
    )
    by_query = client.put(
        "/v1/customers", params={"external_customer_id": "acme"}, json={"contact": "x"}, headers=test_key
    )
    assert by_query.json()["contact"] == "x"
    by_id = client.put("/v1/customers", params={"id": cid}, json={"contact": "y"}, headers=test_key)
    assert by_id.json()["contact"] == "y"
    assert_error(
        client.put("/v1/customers", json={"contact": "z"}, headers=test_key), 400, "validation_error"
    )

    deleted = client.delete(f"/v1/customers/{cid}", headers=test_key)
    assert deleted.status_code == 204 and deleted.content == b""
    assert_error(client.get(f"/v1/customers/{cid}", headers=test_key), 404, "not_found")
    assert_error(client.delete(f"/v1/customers/{cid}", headers=test_key), 404, "not_found")


def test_duplicate_external_id_is_409(client: TestClient, test_key: dict[str, str]) -> None:
    assert (
        client.post("/v1/customers", json={"external_id": "d", "name": "D"}, headers=test_key).status_code
        == 201
    )
    body = assert_error(
        client.post("/v1/customers", json={"external_id": "d", "name": "D2"}, headers=test_key),
        409,
        "already_exists",
    )
    assert "external_id" in body["message"]


def _count(client: TestClient, headers: dict[str, str]) -> int:
    return int(client.get("/v1/customers", headers=headers).json()["pagination"]["total"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "missing external id"}, "external_id"),
        ({"external_id": "x"}, "name"),
        ({"external_id": 12, "name": "wrong type"}, "external_id"),
        ({"external_id": "x", "name": "X", "metadata": "not an object"}, "metadata"),
        ({"external_id": "x", "name": "X", "email": "nope"}, "email"),
        ({"external_id": "x", "name": "X", "timezone": "Nowhere/City"}, "timezone"),
        ([1, 2, 3], None),
    ],
)
def test_invalid_bodies_are_400_and_write_nothing(
    client: TestClient, test_key: dict[str, str], body: object, field: str | None
) -> None:
    response = client.post("/v1/customers", json=body, headers=test_key)
    error = assert_error(response, 400, "validation_error")
    if field:
        assert error["details"]["field"] == field
        assert field in error["message"]
    assert _count(client, test_key) == 0


def test_malformed_json_is_400(client: TestClient, test_key: dict[str, str]) -> None:
    response = client.post(
        "/v1/customers",
        content=b'{"external_id": "x", "name": ',
        headers={**test_key, "content-type": "application/json"},
    )
    error = assert_error(response, 400, "validation_error")
    assert "JSON" in error["message"]
    assert _count(client, test_key) == 0


def test_unknown_enum_and_bad_parameters_are_400(client: TestClient, test_key: dict[str, str]) -> None:
    assert_error(
        client.get("/v1/customers", params={"status": "gone"}, headers=test_key), 400, "validation_error"
    )
    assert_error(client.get("/v1/customers", params={"limit": 0}, headers=test_key), 400, "validation_error")
    assert_error(
        client.get("/v1/customers", params={"limit": 1001}, headers=test_key), 400, "validation_error"
    )
    assert_error(
        client.get("/v1/customers", params={"offset": -1}, headers=test_key), 400, "validation_error"
    )
    assert_error(
        client.get("/v1/customers", params={"limit": "ten"}, headers=test_key), 400, "validation_error"
    )
    assert_error(
        client.get("/v1/customers", params={"order": "sideways"}, headers=test_key), 400, "validation_error"
    )
    assert_error(
        client.get("/v1/customers", params={"sort": "no_such"}, headers=test_key), 400, "validation_error"
    )
    bad_filter = {
        "filters": [
            {"field": "name", "operator": "resembles", "data_type": "string", "value": {"string": "x"}}
        ]
    }
    error = assert_error(
        client.post("/v1/customers/search", json=bad_filter, headers=test_key), 400, "validation_error"
    )
    assert error["details"]["field"] == "filters[0].operator"


def test_pagination_shape_and_limits(client: TestClient, test_key: dict[str, str]) -> None:
    for i in range(55):
        client.post("/v1/customers", json={"external_id": f"c{i:02d}", "name": f"C{i}"}, headers=test_key)
    default = client.get("/v1/customers", headers=test_key).json()
    assert default["pagination"] == {"limit": 50, "offset": 0, "total": 55}
    assert len(default["items"]) == 50
    tail = client.get(
        "/v1/customers", params={"limit": 10, "offset": 50, "order": "asc", "sort": "name"}, headers=test_key
    ).json()
    assert tail["pagination"] == {"limit": 10, "offset": 50, "total": 55}
    assert len(tail["items"]) == 5
    searched = client.post(
        "/v1/customers/search", json={"external_ids": ["c01", "c02", "zz"], "limit": 1}, headers=test_key
    ).json()
    assert searched["pagination"] == {"limit": 1, "offset": 0, "total": 2}
    assert client.get("/v1/customers", params={"limit": 1000}, headers=test_key).status_code == 200


def test_other_tenant_and_environment_see_404(
    client: TestClient,
    billing,
    test_key: dict[str, str],
    prod_key: dict[str, str],  # type: ignore[no-untyped-def]
) -> None:
    cid = client.post("/v1/customers", json={"external_id": "a", "name": "A"}, headers=test_key).json()["id"]
    other = billing.bootstrap(tenant_name="B", owner_email="b@b.test")
    tenant_b = {"x-api-key": other.environments[0][1].api_key}
    for headers in (prod_key, tenant_b):
        assert_error(client.get(f"/v1/customers/{cid}", headers=headers), 404, "not_found")
        assert_error(client.get("/v1/customers/external/a", headers=headers), 404, "not_found")
        assert_error(
            client.put(f"/v1/customers/{cid}", json={"name": "x"}, headers=headers), 404, "not_found"
        )
        assert_error(client.delete(f"/v1/customers/{cid}", headers=headers), 404, "not_found")
        assert _count(client, headers) == 0
    assert client.get(f"/v1/customers/{cid}", headers=test_key).json()["name"] == "A"
