"""Issue 18's create terms over HTTP, on every store: ``auto_invoice_threshold``, ``checkout`` and
``gateway_payment_method_id`` on ``POST /v1/subscriptions``, and ``POST
/v1/plans/{id}/sync/subscriptions``. The clock stands at 2026-05-01 09:30 UTC."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error, service_key
from tests.http.test_subscriptions_http import FIXED, created, make_world, sub_body, totals, usage_price


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    data = make_world(client, test_key)
    metered = created(
        client.post(
            "/v1/plans", json={"name": "Metered", "prices": [usage_price(data["meter_id"])]}, headers=test_key
        )
    )
    return {**data, "metered_plan_id": metered["id"]}


def test_a_threshold_is_stored_and_shown(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    body = sub_body(world, plan_id=world["metered_plan_id"], auto_invoice_threshold="50.00")
    sub = created(client.post("/v1/subscriptions", json=body, headers=test_key))
    assert sub["auto_invoice_threshold"] == "50.00"
    read = client.get(f"/v1/subscriptions/{sub['id']}/v2", headers=test_key).json()
    assert read["auto_invoice_threshold"] == "50.00"
    assert "next_run_at" not in read


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"auto_invoice_threshold": "0"}, "auto_invoice_threshold"),
        ({"auto_invoice_threshold": "fifty"}, "auto_invoice_threshold"),
        ({"auto_invoice_threshold": "50", "plan": "mixed"}, "auto_invoice_threshold"),
        ({"auto_invoice_threshold": "50", "proration_behavior": "create_prorations"}, "proration_behavior"),
        ({"checkout": {"payment_provider": "razorpay"}}, "payment_provider"),
    ],
)
def test_refusals_name_the_field_and_write_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], fields: dict[str, Any], field: str
) -> None:
    fields = dict(fields)  # the parameter is shared by the stores' runs
    plan = world["plan_id"] if fields.pop("plan", None) == "mixed" else world["metered_plan_id"]
    before = totals(client, test_key)
    response = client.post(
        "/v1/subscriptions", json=sub_body(world, plan_id=plan, **fields), headers=test_key
    )
    error = assert_error(response, 400, "validation_error")
    assert error["details"]["field"] == field
    assert "not supported by this version" not in error["message"]
    assert totals(client, test_key) == before


def test_checkout_says_which_provider_is_missing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    body = sub_body(world, checkout={"payment_provider": "razorpay", "success_url": "https://shop.test/ok"})
    error = assert_error(
        client.post("/v1/subscriptions", json=body, headers=test_key), 400, "validation_error"
    )
    assert "razorpay is not configured for this environment" in error["message"]


def test_gateway_payment_method_is_charged_by_a_card_payment(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = created(
        client.post(
            "/v1/subscriptions", json=sub_body(world, gateway_payment_method_id="pm_visa"), headers=test_key
        )
    )
    assert sub["gateway_payment_method_id"] == "pm_visa"
    invoices = client.post(
        "/v1/invoices/search", json={"subscription_id": sub["id"]}, headers=test_key
    ).json()
    (opening,) = invoices["items"]
    payment = client.post(
        "/v1/payments",
        json={
            "amount": opening["amount_due"],
            "currency": "usd",
            "destination_id": opening["id"],
            "destination_type": "INVOICE",
            "payment_method_type": "CARD",
        },
        headers=test_key,
    )
    assert payment.status_code == 201, payment.text
    assert (payment.json()["payment_method_id"], payment.json()["payment_status"]) == ("pm_visa", "SUCCEEDED")


def test_plan_price_sync(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    sub = created(client.post("/v1/subscriptions", json=sub_body(world), headers=test_key))
    added = created(
        client.post(
            "/v1/prices",
            json={
                **FIXED,
                "amount": "5.00",
                "display_name": "Support",
                "entity_type": "PLAN",
                "entity_id": world["plan_id"],
            },
            headers=test_key,
        )
    )
    before = client.get(f"/v1/subscriptions/{sub['id']}/v2", headers=test_key).json()
    assert before["plan_prices_out_of_sync"] is True

    response = client.post(f"/v1/plans/{world['plan_id']}/sync/subscriptions", headers=test_key)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["workflow_id"] == f"plan_price_sync_{world['plan_id']}"
    assert body["run_id"].startswith("sync_")
    assert {
        k: body[k] for k in ("plan_id", "price_sequence", "subscriptions_checked", "subscriptions_updated")
    } == {
        "plan_id": world["plan_id"],
        "price_sequence": added["sequence"],
        "subscriptions_checked": 1,
        "subscriptions_updated": 1,
    }
    assert (body["line_items_added"], body["line_items_ended"]) == (1, 0)
    assert "1 of 1 subscriptions updated" in body["message"]
    after = client.get(
        f"/v1/subscriptions/{sub['id']}/v2?expand=subscription_line_items", headers=test_key
    ).json()
    assert after["plan_prices_out_of_sync"] is False
    assert after["synced_price_sequence"] == added["sequence"]
    assert added["id"] in {line["price_id"] for line in after["line_items"]}


def test_plan_price_sync_errors(client: TestClient, test_key: dict[str, str], world: dict[str, str]) -> None:
    assert_error(client.post("/v1/plans/plan_missing/sync/subscriptions", headers=test_key), 404, "not_found")
    reader = service_key(client, test_key, ["all_reader"])
    assert_error(
        client.post(f"/v1/plans/{world['plan_id']}/sync/subscriptions", headers=reader),
        403,
        "permission_denied",
    )
    assert_error(client.post(f"/v1/plans/{world['plan_id']}/sync/subscriptions"), 401, "unauthorized")
