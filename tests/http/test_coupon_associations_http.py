"""Coupons on subscriptions over HTTP, on every store: ``subscription_coupons`` on create, the
``/v1/coupons/associations`` reads, the v2 read's expansion, ``modify/execute`` and the invoice's
coupon applications.

The clock stands at 2026-05-01 09:30 UTC: a subscription created now starts then.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error
from tests.http.test_subscriptions_http import created, make_world, sub_body

NOW = "2026-05-01T09:30:00Z"


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    """Plan Pro (49.00 a month in advance plus usage) and coupons TEN (10 % forever) and FIVE
    (5.00 once, usd)."""
    made = make_world(client, test_key)
    for body in (
        {
            "name": "Ten",
            "coupon_code": "TEN",
            "type": "percentage",
            "cadence": "forever",
            "percentage_off": "10",
        },
        {
            "name": "Five",
            "coupon_code": "FIVE",
            "type": "fixed",
            "cadence": "once",
            "amount_off": "5",
            "currency": "usd",
            "max_redemptions": 1,
        },
    ):
        made[body["coupon_code"]] = created(client.post("/v1/coupons", json=body, headers=test_key))["id"]
    return made


def subscribe(
    client: TestClient, key: dict[str, str], world: dict[str, str], **fields: Any
) -> dict[str, Any]:
    return created(client.post("/v1/subscriptions", json=sub_body(world, **fields), headers=key))


def associations(client: TestClient, key: dict[str, str], **params: Any) -> dict[str, Any]:
    response = client.get("/v1/coupons/associations", params=params, headers=key)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_create_with_coupons_reads_and_invoice(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(
        client,
        test_key,
        world,
        subscription_coupons=[
            {"coupon_code": "TEN"},
            {"coupon_code": "FIVE", "price_id": world["fixed_price_id"]},
        ],
    )
    page = associations(client, test_key, subscription_ids=sub["id"], expand="coupon,subscription_line_items")
    assert page["pagination"] == {"limit": 50, "offset": 0, "total": 2}
    by_code = {item["coupon"]["coupon_code"]: item for item in page["items"]}
    assert (
        by_code["TEN"]["subscription_line_item_id"] is None and "subscription_line_item" not in by_code["TEN"]
    )
    assert by_code["FIVE"]["subscription_line_item"]["price_id"] == world["fixed_price_id"]
    assert by_code["TEN"]["start_date"] == NOW and by_code["TEN"]["end_date"] is None
    assert "applications" not in by_code["TEN"]
    plain = associations(client, test_key, coupon_ids=world["TEN"])
    assert [item["id"] for item in plain["items"]] == [by_code["TEN"]["id"]] and "coupon" not in plain[
        "items"
    ][0]

    one = client.get(f"/v1/coupons/associations/{by_code['FIVE']['id']}", headers=test_key)
    assert one.status_code == 200, one.text
    assert one.json()["coupon"]["id"] == world["FIVE"]
    assert one.json()["subscription_line_item"]["id"] == by_code["FIVE"]["subscription_line_item_id"]

    v2 = client.get(
        f"/v1/subscriptions/{sub['id']}/v2", params={"expand": "coupon_associations"}, headers=test_key
    )
    assert sorted(a["id"] for a in v2.json()["coupon_associations"]) == sorted(
        by_code[c]["id"] for c in by_code
    )

    search = client.post("/v1/invoices/search", json={"subscription_id": sub["id"]}, headers=test_key)
    (invoice,) = search.json()["items"]
    # 49.00 - 5.00 (FIVE on the fee line) = 44.00; then 10 % of 44.00 = 4.40 -> 39.60
    assert (invoice["total_discount"], invoice["total"]) == ("9.40", "39.60")
    applied = {app["coupon_id"]: app for app in invoice["coupon_applications"]}
    assert (applied[world["FIVE"]]["discounted_amount"], applied[world["FIVE"]]["final_price"]) == (
        "5.00",
        "44.00",
    )
    assert applied[world["TEN"]]["discount_percentage"] == "10"
    assert applied[world["TEN"]]["invoice_line_item_id"] is None
    coupon = client.get(f"/v1/coupons/{world['FIVE']}", headers=test_key).json()
    assert coupon["total_redemptions"] == 1


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        (
            {"subscription_coupons": [{"coupon_code": "TEN"}, {"coupon_code": "TEN", "price_id": "price_x"}]},
            "subscription_coupons[1].price_id",
        ),
        ({"subscription_coupons": [{"coupon_code": "NOPE"}]}, "subscription_coupons[0].coupon_code"),
        ({"subscription_coupons": [{"price_id": "price_x"}]}, "subscription_coupons[0].coupon_code"),
        ({"line_item_coupons": {"price_x": ["coupon_x"]}}, "line_item_coupons.price_x[0]"),
    ],
)
def test_bad_coupons_are_400_and_write_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], fields: dict[str, Any], field: str
) -> None:
    error = assert_error(
        client.post("/v1/subscriptions", json=sub_body(world, **fields), headers=test_key),
        400,
        "validation_error",
    )
    assert error["details"]["field"] == field
    assert (
        client.post("/v1/subscriptions/search", json={}, headers=test_key).json()["pagination"]["total"] == 0
    )
    assert associations(client, test_key)["items"] == []


def test_redemption_limit_over_http(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    subscribe(client, test_key, world, coupons=[world["FIVE"]])
    error = assert_error(
        client.post("/v1/subscriptions", json=sub_body(world, coupons=[world["FIVE"]]), headers=test_key),
        400,
        "validation_error",
    )
    assert error["details"]["field"] == "coupons[0]"
    assert "max_redemptions" in error["message"]


def test_modify_execute(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    sub = subscribe(client, test_key, world)
    path = f"/v1/subscriptions/{sub['id']}/modify/execute"
    add = {"type": "coupon", "coupon_params": {"action": "add", "coupon_code": "TEN"}}
    response = client.post(path, json=add, headers=test_key)
    assert response.status_code == 200, response.text
    assert response.json()["subscription"]["id"] == sub["id"]
    assert response.json()["subscription"]["version"] == sub["version"] + 1
    (item,) = associations(client, test_key)["items"]
    assert item["start_date"] == NOW
    remove = {"type": "coupon", "coupon_params": {"action": "remove", "coupon_association_id": item["id"]}}
    assert client.post(path, json=remove, headers=test_key).status_code == 200
    assert associations(client, test_key)["items"] == []
    assert_error(client.get(f"/v1/coupons/associations/{item['id']}", headers=test_key), 404, "not_found")
    again = assert_error(client.post(path, json=remove, headers=test_key), 400, "validation_error")
    assert again["details"]["field"] == "coupon_params.coupon_association_id"
    for body, field in (
        ({"type": "tax", "tax_params": {}}, "type"),
        ({"type": "coupon"}, "coupon_params"),
        ({"type": "coupon", "coupon_params": {"action": "add"}}, "coupon_params.coupon_code"),
        (
            {
                "type": "coupon",
                "coupon_params": {
                    "action": "add",
                    "coupon_code": "TEN",
                    "subscription_line_item_id": "subs_line_x",
                },
            },
            "coupon_params.subscription_line_item_id",
        ),
    ):
        error = assert_error(client.post(path, json=body, headers=test_key), 400, "validation_error")
        assert error["details"]["field"] == field, body
    assert_error(
        client.post("/v1/subscriptions/subs_none/modify/execute", json=add, headers=test_key),
        404,
        "not_found",
    )


def test_association_reads_are_scoped_and_checked(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], world: dict[str, str]
) -> None:
    subscribe(client, test_key, world, subscription_coupons=[{"coupon_code": "TEN"}])
    (item,) = associations(client, test_key, active_only=True)["items"]
    assert associations(client, prod_key)["items"] == []
    assert_error(client.get(f"/v1/coupons/associations/{item['id']}", headers=prod_key), 404, "not_found")
    error = assert_error(
        client.get("/v1/coupons/associations", params={"expand": "prices"}, headers=test_key),
        400,
        "validation_error",
    )
    assert error["details"]["field"] == "expand"
