"""Line item routes over HTTP, on every store: ``POST /v1/subscriptions/{id}/lineitems``,
``PUT|DELETE /v1/subscriptions/lineitems/{id}``, ``POST /v1/subscriptions/lineitems/search``, and
``line_items``, ``override_line_items`` and ``override_entitlements`` on ``POST /v1/subscriptions``.

The clock stands at 2026-05-01 09:30 UTC; subscriptions here start then (period to 1 Jun 09:30).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

SETUP_FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "50",
    "billing_period": "ONETIME",
    "invoice_cadence": "ADVANCE",
    "price_unit_type": "FIAT",
    "display_name": "Setup",
}


def ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, Any]:
    """Plan Pro (49.00 a month in advance) with a metered feature entitled 100 calls, customer acme
    subscribed to it with an overridden fee, a one-time setup fee and a raised allowance."""
    meter = ok(
        client.post(
            "/v1/meters",
            json={"name": "Calls", "event_name": "api", "aggregation": {"type": "COUNT"}},
            headers=test_key,
        ),
        201,
    )
    feature = ok(
        client.post(
            "/v1/features", json={"name": "API", "type": "metered", "meter_id": meter["id"]}, headers=test_key
        ),
        201,
    )
    fee = {
        **SETUP_FEE,
        "amount": "49.00",
        "billing_period": "MONTHLY",
        "currency": "usd",
        "display_name": "Fee",
    }
    fee.pop("price_unit_type")
    plan = ok(
        client.post(
            "/v1/plans",
            json={
                "name": "Pro",
                "prices": [fee],
                "entitlements": [{"feature_id": feature["id"], "usage_limit": 100}],
            },
            headers=test_key,
        ),
        201,
    )
    entitlement_id = plan["entitlements"][0]["id"]
    customer = ok(
        client.post("/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key), 201
    )
    sub = ok(
        client.post(
            "/v1/subscriptions",
            json={
                "customer_id": customer["id"],
                "plan_id": plan["id"],
                "currency": "USD",
                "billing_period": "MONTHLY",
                "override_line_items": [{"price_id": plan["prices"][0]["id"], "amount": "39.00"}],
                "line_items": [{"price": SETUP_FEE}],
                "override_entitlements": [{"entitlement_id": entitlement_id, "usage_limit": 1000}],
            },
            headers=test_key,
        ),
        201,
    )
    return {"sub": sub, "plan": plan, "meter": meter, "entitlement_id": entitlement_id}


def test_create_takes_extra_lines_overrides_and_entitlement_overrides(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    sub = world["sub"]
    fee, setup = sub["line_items"]
    assert (fee["entity_type"], setup["entity_type"], setup["entity_id"]) == (
        "plan",
        "subscription",
        sub["id"],
    )
    assert (setup["billing_period"], setup["quantity"], setup["display_name"]) == ("ONETIME", "1", "Setup")
    assert fee["price_id"] != world["plan"]["prices"][0]["id"]  # the subscription's own price
    invoices = ok(client.post("/v1/invoices/search", json={"subscription_id": sub["id"]}, headers=test_key))
    (opening,) = invoices["items"]
    assert (opening["amount_due"], [ln["amount"] for ln in opening["line_items"]]) == (
        "89.00",
        ["39.00", "50.00"],
    )
    found = ok(client.post("/v1/entitlements/search", json={"entity_type": "SUBSCRIPTION"}, headers=test_key))
    (override,) = found["items"]
    assert (override["entity_id"], override["parent_entitlement_id"], override["usage_limit"]) == (
        sub["id"],
        world["entitlement_id"],
        1000,
    )


def test_add_update_and_delete_a_line(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    sub = world["sub"]
    added = ok(
        client.post(
            f"/v1/subscriptions/{sub['id']}/lineitems",
            json={
                "price": {**SETUP_FEE, "billing_period": "MONTHLY", "amount": "10", "display_name": "Seat"},
                "quantity": 2,  # a JSON number, as the reference's SDK sends it
                "metadata": {"seat": "a"},
            },
            headers=test_key,
        ),
        201,
    )
    assert (added["subscription_id"], added["quantity"], added["metadata"], added["start_date"]) == (
        sub["id"],
        "2",
        {"seat": "a"},
        "2026-05-01T09:30:00Z",
    )
    assert (added["tenant_id"], added["status"]) == (sub["tenant_id"], "published")
    changed = ok(
        client.put(
            f"/v1/subscriptions/lineitems/{added['id']}",
            json={"amount": "12", "effective_from": "2026-05-11T09:30:00Z"},
            headers=test_key,
        )
    )
    assert changed["id"] != added["id"] and changed["start_date"] == "2026-05-11T09:30:00Z"
    price = ok(client.get(f"/v1/prices/{changed['price_id']}", headers=test_key))
    assert (price["amount"], price["entity_type"], price["parent_price_id"]) == (
        "12",
        "SUBSCRIPTION",
        added["price_id"],
    )
    ended = ok(
        client.request(
            "DELETE",
            f"/v1/subscriptions/lineitems/{changed['id']}",
            json={"effective_from": "2026-05-21T09:30:00Z"},
            headers=test_key,
        )
    )
    assert ended["end_date"] == "2026-05-21T09:30:00Z"
    again = client.request(
        "DELETE",
        f"/v1/subscriptions/lineitems/{changed['id']}",
        json={"effective_from": "2026-05-22T00:00:00Z"},
        headers=test_key,
    )
    assert "ended at" in assert_error(again, 400, "invalid_operation")["message"]
    moved = ok(
        client.put(
            f"/v1/subscriptions/lineitems/{changed['id']}",
            json={"end_date": "2026-05-25T00:00:00Z"},
            headers=test_key,
        )
    )
    assert moved["end_date"] == "2026-05-25T00:00:00Z"
    current = ok(client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key))
    assert current["version"] == sub["version"] + 4
    assert [li["end_date"] for li in current["line_items"][2:]] == [
        "2026-05-11T09:30:00Z",
        "2026-05-25T00:00:00Z",
    ]
    # No body at all: the line ends now (here its start, so it is never billed).
    fee = ok(client.delete(f"/v1/subscriptions/lineitems/{sub['line_items'][0]['id']}", headers=test_key))
    assert fee["end_date"] == fee["start_date"] == "2026-05-01T09:30:00Z"


def test_refusals_name_the_field_and_write_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    sub = world["sub"]
    path = f"/v1/subscriptions/{sub['id']}/lineitems"
    both = client.post(
        path, json={"price_id": world["plan"]["prices"][0]["id"], "price": SETUP_FEE}, headers=test_key
    )
    assert assert_error(both, 400, "validation_error")["details"]["field"] == "price_id"
    usage_once = client.post(path, json={"price": {**SETUP_FEE, "type": "USAGE"}}, headers=test_key)
    assert assert_error(usage_once, 400, "validation_error")["details"]["field"] == "price.meter_id"
    unknown = client.post(path, json={"price": SETUP_FEE, "seats": 3}, headers=test_key)
    assert assert_error(unknown, 400, "validation_error")["details"]["field"] == "seats"
    assert ok(client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key))["version"] == sub["version"]
    assert_error(
        client.post("/v1/subscriptions/subs_x/lineitems", json={"price": SETUP_FEE}, headers=test_key),
        404,
        "not_found",
    )
    setup = sub["line_items"][1]
    backdated = client.put(
        f"/v1/subscriptions/lineitems/{setup['id']}",
        json={"end_date": "2026-05-01T09:30:00Z"},
        headers=test_key,
    )
    body = assert_error(backdated, 400, "validation_error")
    assert body["details"]["field"] == "end_date" and "backdating" in body["message"]
    assert_error(
        client.put("/v1/subscriptions/lineitems/subs_line_x", json={}, headers=test_key), 404, "not_found"
    )
    bucket = client.put(
        f"/v1/subscriptions/lineitems/{setup['id']}", json={"bucket_size": "DAY"}, headers=test_key
    )
    assert assert_error(bucket, 400, "validation_error")["details"]["field"] == "bucket_size"


def test_search_line_items(client: TestClient, test_key: dict[str, str], world: dict[str, Any]) -> None:
    sub = world["sub"]
    found = ok(
        client.post(
            "/v1/subscriptions/lineitems/search",
            json={"subscription_ids": [sub["id"]], "entity_type": "subscription", "expand": "prices"},
            headers=test_key,
        )
    )
    assert found["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    (setup,) = found["items"]
    assert setup["id"] == sub["line_items"][1]["id"] and setup["price"]["billing_cadence"] == "ONETIME"
    usage = {**SETUP_FEE, "type": "USAGE", "billing_period": "MONTHLY", "invoice_cadence": "ARREAR"}
    metered = ok(
        client.post(
            f"/v1/subscriptions/{sub['id']}/lineitems",
            json={"price": {**usage, "amount": "0.01", "meter_id": world["meter"]["id"]}},
            headers=test_key,
        ),
        201,
    )
    with_meter = ok(
        client.post(
            "/v1/subscriptions/lineitems/search",
            json={"meter_ids": [world["meter"]["id"]], "expand": "meters"},
            headers=test_key,
        )
    )
    assert [(li["id"], li["meter"]["id"]) for li in with_meter["items"]] == [
        (metered["id"], world["meter"]["id"])
    ]
    plain = ok(
        client.post("/v1/subscriptions/lineitems/search", json={"entity_type": "plan"}, headers=test_key)
    )
    assert [li["id"] for li in plain["items"]] == [sub["line_items"][0]["id"]]
    assert "price" not in plain["items"][0]
    refused = client.post(
        "/v1/subscriptions/lineitems/search",
        json={"filters": [{"field": "price_id", "operator": "eq", "value": {"string": "x"}}]},
        headers=test_key,
    )
    assert assert_error(refused, 400, "validation_error")["details"]["field"] == "filters"


def test_a_reader_cannot_change_line_items(
    client: TestClient, reader_key: dict[str, str], world: dict[str, Any]
) -> None:
    sub = world["sub"]
    denied = client.post(
        f"/v1/subscriptions/{sub['id']}/lineitems", json={"price": SETUP_FEE}, headers=reader_key
    )
    assert_error(denied, 403, "permission_denied")
    assert (
        ok(client.post("/v1/subscriptions/lineitems/search", json={}, headers=reader_key))["pagination"][
            "total"
        ]
        == 2
    )
