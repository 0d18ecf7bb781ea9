"""``POST|DELETE /v1/subscriptions/addon`` and ``GET /v1/subscriptions/{id}/addons/associations``
over HTTP, on every store.

The clock fixture stands at 2026-05-01 09:30 UTC: a subscription created then has the period
2026-05-01 09:30 .. 2026-06-01 09:30 (31 days).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import TestClock
from tests.http.conftest import assert_error
from tests.http.test_subscriptions_http import FIXED, created, invoices_of, make_world, subscribe

PERIOD_END = "2026-06-01T09:30:00Z"
ADDON_FEE = {**FIXED, "amount": "31.00", "display_name": "Extra fee"}


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    """The subscriptions world (plan Pro 49.00/month + 0.025 a call) and add-on Extra: 31.00 a
    month in advance."""
    world = make_world(client, test_key)
    addon = created(
        client.post(
            "/v1/addons",
            json={"name": "Extra", "lookup_key": "extra", "prices": [ADDON_FEE]},
            headers=test_key,
        )
    )
    return {**world, "addon_id": addon["id"], "addon_price_id": addon["prices"][0]["id"]}


def associations(client: TestClient, headers: dict[str, str], sub_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/subscriptions/{sub_id}/addons/associations", headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["pagination"] == {"limit": len(body["items"]), "offset": 0, "total": len(body["items"])}
    return body["items"]  # type: ignore[no-any-return]


def test_add_list_and_remove_an_addon(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], clock: TestClock
) -> None:
    sub = subscribe(client, test_key, world)
    clock.advance(days=10)  # 2026-05-11 09:30: 21 of the period's 31 days left
    response = client.post(
        "/v1/subscriptions/addon",
        json={
            "subscription_id": sub["id"],
            "addon_id": world["addon_id"],
            "proration_behavior": "create_prorations",
            "override_line_items": [{"price_id": world["addon_price_id"], "amount": "62.00"}],
            "metadata": {"ticket": "42"},
        },
        headers=test_key,
    )
    assert response.status_code == 200, response.text
    added = response.json()
    assert {k: added[k] for k in ("addon_id", "entity_id", "entity_type", "addon_status", "cadence")} == {
        "addon_id": world["addon_id"],
        "entity_id": sub["id"],
        "entity_type": "subscription",
        "addon_status": "active",
        "cadence": "recurring",
    }
    assert (added["start_date"], added["end_date"], added["metadata"]) == (
        "2026-05-11T09:30:00Z",
        None,
        {"ticket": "42"},
    )
    # At the override: 62.00 x 21/31 = 42.00, on an update invoice for the rest of the period.
    invoice = added["invoice"]
    assert (invoice["billing_reason"], invoice["total"], invoice["period_start"], invoice["period_end"]) == (
        "SUBSCRIPTION_UPDATE",
        "42.00",
        "2026-05-11T09:30:00Z",
        PERIOD_END,
    )
    assert [(li["entity_type"], li["amount"]) for li in invoice["line_items"]] == [("addon", "42.00")]
    assert invoice["id"] in [i["id"] for i in invoices_of(client, test_key, sub["id"])["items"]]
    lines = client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()["line_items"]
    assert [li["addon_association_id"] for li in lines] == [None, None, added["id"]]

    (listed,) = associations(client, test_key, sub["id"])
    assert listed == {k: v for k, v in added.items() if k != "invoice"}

    removed = client.request(
        "DELETE",
        "/v1/subscriptions/addon",
        json={"addon_association_id": added["id"], "reason": "not needed"},
        headers=test_key,
    )
    assert removed.status_code == 200, removed.text
    assert removed.json() == {"message": "addon removed from subscription successfully"}
    (listed,) = associations(client, test_key, sub["id"])  # in force until the period end
    assert (listed["addon_status"], listed["end_date"], listed["cancellation_reason"]) == (
        "cancelled",
        PERIOD_END,
        "not needed",
    )
    again = client.request(
        "DELETE", "/v1/subscriptions/addon", json={"addon_association_id": added["id"]}, headers=test_key
    )
    assert "already removed" in assert_error(again, 400, "invalid_operation")["message"]


def test_addons_on_create_are_billed_on_the_opening_invoice(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world, addons=[{"addon_id": world["addon_id"]}])
    (opening,) = invoices_of(client, test_key, sub["id"])["items"]
    assert [(li["display_name"], li["amount"]) for li in opening["line_items"]] == [
        ("Platform fee", "49.00"),
        ("Extra fee", "31.00"),
    ]
    (association,) = associations(client, test_key, sub["id"])
    assert association["start_date"] == sub["start_date"]
    body = {"addons": [{"addon_id": world["addon_id"], "start_date": "2026-04-01T00:00:00Z"}]}
    response = client.post("/v1/subscriptions", json={**sub_body_of(world), **body}, headers=test_key)
    assert assert_error(response, 400, "validation_error")["details"]["field"] == "addons[0].start_date"


def sub_body_of(world: dict[str, str]) -> dict[str, Any]:
    return {
        "customer_id": world["customer_id"],
        "plan_id": world["plan_id"],
        "currency": "usd",
        "billing_period": "MONTHLY",
    }


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_bad_requests_name_the_field_and_write_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world)
    base = {"subscription_id": sub["id"], "addon_id": world["addon_id"]}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"subscription_id": sub["id"]}, "addon_id"),
        ({**base, "addon_id": "addon_missing"}, "addon_id"),
        # Razorpay is not configured for this environment.
        ({**base, "checkout": {"payment_provider": "razorpay"}}, "payment_provider"),
        ({**base, "cadence": "weekly"}, "cadence"),
        ({**base, "start_date": "2026-05-01T09:29:59Z"}, "start_date"),
        (
            {**base, "override_line_items": [{"price_id": "price_nope", "amount": "1"}]},
            "override_line_items[0].price_id",
        ),
        ({**base, "quantity": 2}, "quantity"),
    ]
    for body, field in cases:
        response = client.post("/v1/subscriptions/addon", json=body, headers=test_key)
        assert assert_error(response, 400, "validation_error")["details"]["field"] == field, body
    assert associations(client, test_key, sub["id"]) == []
    assert len(invoices_of(client, test_key, sub["id"])["items"]) == 1  # the opening invoice only

    missing = client.post(
        "/v1/subscriptions/addon", json={**base, "subscription_id": "subs_nope"}, headers=test_key
    )
    assert_error(missing, 404, "not_found")
    assert_error(
        client.get("/v1/subscriptions/subs_nope/addons/associations", headers=test_key), 404, "not_found"
    )
    gone = client.request(
        "DELETE", "/v1/subscriptions/addon", json={"addon_association_id": "x"}, headers=test_key
    )
    assert_error(gone, 404, "not_found")
    bad_date = client.request(
        "DELETE",
        "/v1/subscriptions/addon",
        json={"addon_association_id": "x", "effective_date": "soon"},
        headers=test_key,
    )
    assert assert_error(bad_date, 400, "validation_error")["details"]["field"] == "effective_date"


@pytest.mark.parametrize("storage", ["memory"], indirect=True)
def test_readers_list_but_cannot_change_addons(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world, addons=[{"addon_id": world["addon_id"]}])
    (association,) = associations(client, reader_key, sub["id"])
    body = {"subscription_id": sub["id"], "addon_id": world["addon_id"]}
    assert_error(
        client.post("/v1/subscriptions/addon", json=body, headers=reader_key), 403, "permission_denied"
    )
    remove = {"addon_association_id": association["id"]}
    response = client.request("DELETE", "/v1/subscriptions/addon", json=remove, headers=reader_key)
    assert_error(response, 403, "permission_denied")
    assert_error(client.post("/v1/subscriptions/addon", json=body), 401, "unauthorized")
    assert associations(client, test_key, sub["id"]) == [association]
