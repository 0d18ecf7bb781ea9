"""``/v1/coupons`` over HTTP."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

COUPON = {
    "name": "Spring sale",
    "type": "fixed",
    "cadence": "repeated",
    "duration_in_periods": 2,
    "amount_off": "15.50",
    "currency": "usd",
    "coupon_code": "SPRING",
    "max_redemptions": 100,
    "redeem_after": "2026-03-01T00:00:00Z",
    "redeem_before": "2026-06-01T00:00:00Z",
    "rules": {"min_amount": "10"},
    "metadata": {"a": "b"},
}


def test_round_trip(client: TestClient, test_key: dict[str, str]) -> None:
    read_only = client.post("/v1/coupons", json={**COUPON, "total_redemptions": 7}, headers=test_key)
    assert assert_error(read_only, 400, "validation_error")["details"]["field"] == "total_redemptions"
    created = client.post("/v1/coupons", json=COUPON, headers=test_key)
    assert created.status_code == 201, created.text
    body = created.json()
    for field, value in COUPON.items():
        assert body[field] == value
    assert (body["percentage_off"], body["total_redemptions"], body["status"]) == (None, 0, "published")
    cid = body["id"]
    assert cid.startswith("coupon_")
    assert client.get(f"/v1/coupons/{cid}", headers=test_key).json() == body
    assert client.get("/v1/coupons/code/SPRING", headers=test_key).json() == body
    fixed = client.put(f"/v1/coupons/{cid}", json={"name": "Renamed", "amount_off": "1"}, headers=test_key)
    assert assert_error(fixed, 400, "validation_error")["details"] == {
        "accepted_fields": ["metadata", "name"],
        "field": "amount_off",
    }
    updated = client.put(f"/v1/coupons/{cid}", json={"name": "Renamed"}, headers=test_key)
    assert updated.status_code == 200, updated.text
    assert (updated.json()["name"], updated.json()["amount_off"]) == ("Renamed", "15.50")
    listed = client.get("/v1/coupons", params={"coupon_codes": "SPRING,OTHER"}, headers=test_key).json()
    assert [c["id"] for c in listed["items"]] == [cid]
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    found = client.post("/v1/coupons/search", json={"coupon_ids": [cid]}, headers=test_key).json()
    assert [c["id"] for c in found["items"]] == [cid]
    deleted = client.delete(f"/v1/coupons/{cid}", headers=test_key)
    assert deleted.status_code == 200 and deleted.json() == {"message": "coupon deleted successfully"}
    assert_error(client.get(f"/v1/coupons/{cid}", headers=test_key), 404, "not_found")
    assert_error(client.get("/v1/coupons/code/SPRING", headers=test_key), 404, "not_found")
    assert client.post("/v1/coupons", json=COUPON, headers=test_key).status_code == 201


def test_bad_input_is_400_naming_the_field(client: TestClient, test_key: dict[str, str]) -> None:
    for patch, field in (
        ({"max_redemptions": 1_000_001}, "max_redemptions"),
        ({"max_redemptions": 0}, "max_redemptions"),
        ({"amount_off": "0"}, "amount_off"),
        ({"currency": None}, "currency"),
        ({"type": "percentage", "percentage_off": "101"}, "percentage_off"),
        ({"duration_in_periods": None}, "duration_in_periods"),
        ({"cadence": "once"}, "duration_in_periods"),
        ({"redeem_before": "2026-01-01T00:00:00Z"}, "redeem_after"),
        ({"type": "bogo"}, "type"),
    ):
        body = assert_error(
            client.post("/v1/coupons", json={**COUPON, **patch}, headers=test_key), 400, "validation_error"
        )
        assert body["details"]["field"] == field
    assert client.get("/v1/coupons", headers=test_key).json()["pagination"]["total"] == 0
    cid = client.post("/v1/coupons", json=COUPON, headers=test_key).json()["id"]
    assert_error(client.post("/v1/coupons", json=COUPON, headers=test_key), 409, "already_exists")
    body = assert_error(
        client.put(f"/v1/coupons/{cid}", json={"name": None}, headers=test_key), 400, "validation_error"
    )
    assert body["details"]["field"] == "name"


def test_other_environment_is_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str]
) -> None:
    cid = client.post("/v1/coupons", json=COUPON, headers=test_key).json()["id"]
    assert_error(client.get(f"/v1/coupons/{cid}", headers=prod_key), 404, "not_found")
    assert_error(client.get("/v1/coupons/code/SPRING", headers=prod_key), 404, "not_found")
    assert_error(client.put(f"/v1/coupons/{cid}", json={"name": "x"}, headers=prod_key), 404, "not_found")
    assert_error(client.delete(f"/v1/coupons/{cid}", headers=prod_key), 404, "not_found")


def test_reader_can_read_not_write(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str]
) -> None:
    cid = client.post("/v1/coupons", json=COUPON, headers=test_key).json()["id"]
    assert client.get(f"/v1/coupons/{cid}", headers=reader_key).status_code == 200
    assert client.get("/v1/coupons", headers=reader_key).json()["pagination"]["total"] == 1
    assert client.post("/v1/coupons/search", json={}, headers=reader_key).json()["pagination"]["total"] == 1
    assert_error(client.post("/v1/coupons", json=COUPON, headers=reader_key), 403, "permission_denied")
    assert_error(
        client.put(f"/v1/coupons/{cid}", json={"name": "x"}, headers=reader_key), 403, "permission_denied"
    )
    assert_error(client.delete(f"/v1/coupons/{cid}", headers=reader_key), 403, "permission_denied")
