"""The pay-first quantity change over HTTP, on every store: ``POST
/v1/subscriptions/{id}/modify/execute`` with ``checkout`` answers the subscription unchanged and
its ``modify_subscription`` session, the sandbox page's Pay applies it, and refusals are 400s that
write nothing. The clock stands at 2026-05-01 09:30 UTC, the start of the subscription's period:
2 -> 4 seats at 30.00 charges 120.00 and credits the 60.00 paid, so the session's invoice is 60.00.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.checkout_world import PRICE

from .conftest import assert_error


def _subscription(client: TestClient, key: dict[str, str]) -> dict[str, Any]:
    plan = client.post("/v1/plans", json={"name": "Pro", "prices": [PRICE]}, headers=key).json()
    client.post("/v1/customers", json={"external_id": "c1", "name": "Ada"}, headers=key)
    price = client.get(f"/v1/plans/{plan['id']}", headers=key).json()["prices"][0]
    body = {
        "external_customer_id": "c1",
        "plan_id": plan["id"],
        "currency": "usd",
        "billing_period": "MONTHLY",
        "override_line_items": [{"price_id": price["id"], "quantity": "2"}],
    }
    created = client.post("/v1/subscriptions", json=body, headers=key)
    assert created.status_code == 201, created.text
    return dict(created.json())


def _change(line_id: str, quantity: str, **more: Any) -> dict[str, Any]:
    return {
        "type": "quantity_change",
        "quantity_change_params": {"line_items": [{"id": line_id, "quantity": quantity}]},
        **more,
    }


def _quantities(client: TestClient, key: dict[str, str], sub_id: str) -> list[tuple[str, str | None]]:
    sub = client.get(f"/v1/subscriptions/{sub_id}", headers=key).json()
    return [(line["quantity"], line.get("end_date")) for line in sub["line_items"]]


def test_a_quantity_change_with_checkout_applies_once_paid(
    client: TestClient, test_key: dict[str, str]
) -> None:
    sub = _subscription(client, test_key)
    line_id = sub["line_items"][0]["id"]
    path = f"/v1/subscriptions/{sub['id']}/modify/execute"
    checkout = {"payment_provider": "sandbox", "success_url": "https://shop.test/ok"}

    answered = client.post(path, json=_change(line_id, "4", checkout=checkout), headers=test_key)

    assert answered.status_code == 200, answered.text
    body = answered.json()
    session = body["checkout_session"]
    assert (session["action"], session["checkout_status"]) == ("modify_subscription", "pending")
    modification = session["configuration"]["modify_subscription_params"]["line_item_modifications"]
    assert modification == [
        {"line_item_id": line_id, "quantity": "4", "effective_date": "2026-05-01T09:30:00Z"}
    ]
    assert "changed_resources" not in body
    assert _quantities(client, test_key, sub["id"]) == [("2", None)]

    paid = client.post(session["payment_action"]["url"].replace("?", "/pay?", 1), follow_redirects=False)
    assert (paid.status_code, paid.headers["location"]) == (303, "https://shop.test/ok")

    done = client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json()
    assert done["checkout_status"] == "completed"
    invoice = client.get(f"/v1/invoices/{done['checkout_invoice_id']}", headers=test_key).json()
    assert (invoice["billing_reason"], invoice["amount_paid"], invoice["payment_status"]) == (
        "SUBSCRIPTION_UPDATE",
        "60.00",
        "SUCCEEDED",
    )
    assert _quantities(client, test_key, sub["id"]) == [("2", "2026-05-01T09:30:00Z"), ("4", None)]


def test_refused_pay_first_changes_write_nothing(client: TestClient, test_key: dict[str, str]) -> None:
    sub = _subscription(client, test_key)
    line_id = sub["line_items"][0]["id"]
    path = f"/v1/subscriptions/{sub['id']}/modify/execute"
    checkout = {"payment_provider": "sandbox"}

    assert_error(
        client.post(path, json=_change(line_id, "1", checkout=checkout), headers=test_key),
        400,
        "invalid_operation",
    )
    trial = {"type": "trial_end", "trial_end_params": {"action": "immediate"}, "checkout": checkout}
    assert_error(client.post(path, json=trial, headers=test_key), 400, "validation_error")
    unknown = _change(line_id, "4", checkout={"payment_provider": "sandbox", "colour": "red"})
    assert_error(client.post(path, json=unknown, headers=test_key), 400, "validation_error")

    sessions = client.post(path, json=_change(line_id, "4", checkout={}), headers=test_key)
    assert "checkout_session" not in sessions.json()  # checkout {} is no checkout: applied at once
    assert [q for q, _end in _quantities(client, test_key, sub["id"])] == ["2", "4"]


def test_a_pay_first_addon_over_http_is_pending_until_paid(
    client: TestClient, test_key: dict[str, str]
) -> None:
    sub = _subscription(client, test_key)
    addon = client.post(
        "/v1/addons",
        json={"name": "Boost", "lookup_key": "boost", "prices": [{**PRICE, "amount": "20"}]},
        headers=test_key,
    )
    assert addon.status_code == 201, addon.text
    body = {
        "subscription_id": sub["id"],
        "addon_id": addon.json()["id"],
        "cadence": "onetime",
        "checkout": {"payment_provider": "sandbox"},
    }

    added = client.post("/v1/subscriptions/addon", json=body, headers=test_key)

    assert added.status_code == 200, added.text
    association = added.json()
    assert (association["addon_status"], association["checkout_session"]["action"]) == (
        "pending",
        "add_addon",
    )
    assert "invoice" not in association
    session = association["checkout_session"]
    client.post(session["payment_action"]["url"].replace("?", "/pay?", 1), follow_redirects=False)
    listed = client.get(f"/v1/subscriptions/{sub['id']}/addons/associations", headers=test_key).json()
    assert [(a["id"], a["addon_status"]) for a in listed["items"]] == [(association["id"], "active")]
    done = client.get(f"/v1/checkout/sessions/{session['id']}", headers=test_key).json()
    invoice = client.get(f"/v1/invoices/{done['checkout_invoice_id']}", headers=test_key).json()
    assert (invoice["amount_paid"], invoice["payment_status"]) == ("20.00", "SUCCEEDED")  # onetime: in full

    again = client.post("/v1/subscriptions/addon", json={**body, "cadence": "recurring"}, headers=test_key)
    assert_error(again, 400, "invalid_operation")  # no proration: nothing due now
