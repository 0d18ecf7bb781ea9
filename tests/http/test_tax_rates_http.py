"""``/v1/taxes/rates`` over HTTP."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

VAT = {
    "name": "VAT",
    "code": "VAT20",
    "tax_rate_type": "percentage",
    "percentage_value": "20",
    "metadata": {"a": "b"},
}


def test_round_trip(client: TestClient, test_key: dict[str, str]) -> None:
    created = client.post("/v1/taxes/rates", json=VAT, headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    for field, value in VAT.items():
        assert body[field] == value
    assert (body["scope"], body["tax_rate_status"], body["fixed_value"], body["status"]) == (
        "INTERNAL",
        "ACTIVE",
        None,
        "published",
    )
    rid = body["id"]
    assert client.get(f"/v1/taxes/rates/{rid}", headers=test_key).json() == body
    updated = client.put(f"/v1/taxes/rates/{rid}", json={"tax_rate_status": "INACTIVE"}, headers=test_key)
    assert updated.status_code == 200 and updated.json()["tax_rate_status"] == "INACTIVE"
    listed = client.get("/v1/taxes/rates", params={"taxrate_codes": "VAT20,OTHER"}, headers=test_key).json()
    assert [r["id"] for r in listed["items"]] == [rid]
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    assert client.delete(f"/v1/taxes/rates/{rid}", headers=test_key).status_code == 204
    assert_error(client.get(f"/v1/taxes/rates/{rid}", headers=test_key), 404, "not_found")


def test_bad_input_is_400_naming_the_field(client: TestClient, test_key: dict[str, str]) -> None:
    for patch, field in (
        ({"percentage_value": "101"}, "percentage_value"),
        ({"tax_rate_type": "weird"}, "tax_rate_type"),
        ({"code": None}, "code"),
        ({"percentage_value": 1.5}, "percentage_value"),
    ):
        body = assert_error(
            client.post("/v1/taxes/rates", json={**VAT, **patch}, headers=test_key), 400, "validation_error"
        )
        assert body["details"]["field"] == field
    assert client.get("/v1/taxes/rates", headers=test_key).json()["pagination"]["total"] == 0
    client.post("/v1/taxes/rates", json=VAT, headers=test_key)
    assert_error(client.post("/v1/taxes/rates", json=VAT, headers=test_key), 409, "already_exists")


def test_other_environment_is_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str]
) -> None:
    rid = client.post("/v1/taxes/rates", json=VAT, headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/taxes/rates/{rid}", headers=prod_key), 404, "not_found")
    assert_error(client.put(f"/v1/taxes/rates/{rid}", json={"name": "x"}, headers=prod_key), 404, "not_found")


def test_reader_can_read_not_write(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str]
) -> None:
    rid = client.post("/v1/taxes/rates", json=VAT, headers=test_key).json()["id"]
    assert client.get(f"/v1/taxes/rates/{rid}", headers=reader_key).status_code == 200
    assert client.get("/v1/taxes/rates", headers=reader_key).json()["pagination"]["total"] == 1
    assert_error(client.post("/v1/taxes/rates", json=VAT, headers=reader_key), 403, "permission_denied")
    assert_error(client.delete(f"/v1/taxes/rates/{rid}", headers=reader_key), 403, "permission_denied")
