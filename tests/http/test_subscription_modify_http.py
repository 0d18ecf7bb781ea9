"""``POST /v1/subscriptions/{id}/modify/execute`` and ``/modify/preview`` for ``quantity_change``
and ``trial_end`` over HTTP, on every store: the reference's answer shape, the preview writing
nothing, retries, refusals (400 naming the field, nothing written), scope.

The clock stands at 2026-05-01 09:30 UTC: the period is [1 May 09:30, 1 Jun 09:30) (31 days).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from tests.http.conftest import assert_error
from tests.store_rows import every_row

SEAT = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "10.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
    "display_name": "Seat",
}


@pytest.fixture
def subscribe(client: TestClient, test_key: dict[str, str]) -> Any:
    plan = client.post("/v1/plans", json={"name": "Seats", "prices": [SEAT]}, headers=test_key).json()
    price_id = plan["prices"][0]["id"] if plan.get("prices") else None
    if price_id is None:
        found = client.get(f"/v1/prices?plan_ids={plan['id']}", headers=test_key).json()
        price_id = found["items"][0]["id"]
    customer = client.post(
        "/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key
    ).json()

    def make(quantity: int = 5, **fields: Any) -> dict[str, Any]:
        body = {
            "customer_id": customer["id"],
            "plan_id": plan["id"],
            "currency": "usd",
            "billing_period": "MONTHLY",
            "override_line_items": [{"price_id": price_id, "quantity": str(quantity)}],
        }
        response = client.post("/v1/subscriptions", json={**body, **fields}, headers=test_key)
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    return make


def _post(client: TestClient, key: dict[str, str], sub_id: str, verb: str, body: dict[str, Any]) -> Any:
    return client.post(f"/v1/subscriptions/{sub_id}/modify/{verb}", json=body, headers=key)


def _quantity(line_id: str, quantity: str) -> dict[str, Any]:
    return {
        "type": "quantity_change",
        "quantity_change_params": {"line_items": [{"id": line_id, "quantity": quantity}]},
    }


def test_quantity_change_preview_then_execute(
    client: TestClient, test_key: dict[str, str], subscribe: Any, clock: TestClock, billing: Billing
) -> None:
    sub = subscribe(5)
    line_id = sub["line_items"][0]["id"]
    clock.advance(timedelta(days=11))  # 20 of 31 days left
    before = every_row(billing.storage)
    preview = _post(client, test_key, sub["id"], "preview", _quantity(line_id, "8"))
    assert preview.status_code == 200, preview.text
    assert every_row(billing.storage) == before
    shown = preview.json()["changed_resources"]
    (invoice,) = shown["invoices"]
    assert (invoice["action"], invoice["status"], invoice["invoice"]["invoice_number"]) == (
        "created",
        "preview",
        None,
    )
    # charge 80.00 x 20/31 = 51.61, credit 50.00 x 20/31 = 32.26, net 19.35
    assert [line["amount"] for line in invoice["invoice"]["line_items"]] == ["51.61", "-32.26"]
    assert invoice["invoice"]["total"] == "19.35"

    done = _post(client, test_key, sub["id"], "execute", _quantity(line_id, "8"))
    assert done.status_code == 200, done.text
    body = done.json()
    (issued,) = body["changed_resources"]["invoices"]
    assert (issued["action"], issued["status"], issued["invoice"]["total"]) == ("created", "issued", "19.35")
    assert issued["invoice"]["billing_reason"] == "SUBSCRIPTION_UPDATE"
    changed = body["changed_resources"]["line_items"]
    assert [(line["change_action"], line["quantity"]) for line in changed] == [
        ("ended", "5"),
        ("created", "8"),
    ]
    assert changed[0]["id"] == line_id and changed[0]["end_date"] == changed[1]["start_date"]
    assert [line["quantity"] for line in body["subscription"]["line_items"] if line["end_date"] is None] == [
        "8"
    ]

    again = _post(client, test_key, sub["id"], "execute", _quantity(line_id, "8"))
    assert again.status_code == 200, again.text
    assert again.json()["changed_resources"]["invoices"][0]["id"] == issued["id"]  # no second invoice
    found = client.post("/v1/invoices/search", json={"subscription_id": sub["id"]}, headers=test_key)
    invoices = found.json()["items"]
    assert sorted(i["total"] for i in invoices) == ["19.35", "50.00"]


def test_a_net_credit_answers_the_wallet_transaction(
    client: TestClient, test_key: dict[str, str], subscribe: Any, clock: TestClock
) -> None:
    sub = subscribe(8)
    clock.advance(timedelta(days=11))
    done = _post(client, test_key, sub["id"], "execute", _quantity(sub["line_items"][0]["id"], "5"))
    assert done.status_code == 200, done.text
    (credit,) = done.json()["changed_resources"]["invoices"]
    assert (credit["action"], credit["status"]) == ("wallet_credit", "issued")
    # credit 80.00 x 20/31 = 51.61, charge 50.00 x 20/31 = 32.26: 19.35 into the wallet
    assert credit["wallet_transaction"]["credit_amount"] == "19.35"
    assert credit["wallet_transaction"]["transaction_reason"] == "SUBSCRIPTION_CREDIT_GRANT"


def test_trial_end_immediate_and_scheduled(
    client: TestClient, test_key: dict[str, str], subscribe: Any, clock: TestClock
) -> None:
    first = subscribe(1, trial_period_days=14)
    second = subscribe(1, trial_period_days=14)
    assert first["subscription_status"] == "trialing"
    clock.advance(timedelta(days=2))
    done = _post(
        client,
        test_key,
        first["id"],
        "execute",
        {"type": "trial_end", "trial_end_params": {"action": "immediate"}},
    )
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["subscription"]["subscription_status"] == "active"
    assert body["subscription"]["current_period_start"] == "2026-05-03T09:30:00Z"
    (invoice,) = body["changed_resources"]["invoices"]
    assert (invoice["invoice"]["billing_reason"], invoice["invoice"]["total"]) == (
        "SUBSCRIPTION_TRIAL_END",
        "10.00",
    )

    moved = _post(
        client,
        test_key,
        second["id"],
        "execute",
        {
            "type": "trial_end",
            "trial_end_params": {"action": "scheduled_date", "new_trial_end": "2026-05-20T00:00:00Z"},
        },
    )
    assert moved.status_code == 200, moved.text
    sub = moved.json()["subscription"]
    assert (sub["trial_end"], sub["current_period_end"], sub["subscription_status"]) == (
        "2026-05-20T00:00:00Z",
        "2026-05-20T00:00:00Z",
        "trialing",
    )


def test_refusals_name_the_field_and_write_nothing(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str], subscribe: Any, billing: Billing
) -> None:
    sub = subscribe(5)
    line_id = sub["line_items"][0]["id"]
    before = every_row(billing.storage)
    for body, field in (
        (_quantity(line_id, "5"), "quantity_change_params.line_items[0].quantity"),
        (_quantity(line_id, "abc"), "quantity_change_params.line_items[0].quantity"),
        (_quantity("subs_line_none", "2"), "quantity_change_params.line_items[0].id"),
        (
            {"type": "quantity_change", "quantity_change_params": {"line_items": [{"quantity": "2"}]}},
            "quantity_change_params.line_items[0].id",
        ),
        (
            {"type": "trial_end", "trial_end_params": {"action": "scheduled_date"}},
            "trial_end_params.new_trial_end",
        ),
        ({"type": "addon", "addon_params": {}}, "type"),
    ):
        for verb in ("preview", "execute"):
            error = assert_error(_post(client, test_key, sub["id"], verb, body), 400, "validation_error")
            assert error["details"]["field"] == field, body
    trial = {"type": "trial_end", "trial_end_params": {"action": "immediate"}}
    assert_error(_post(client, test_key, sub["id"], "preview", trial), 400, "invalid_operation")
    assert_error(_post(client, test_key, "subs_none", "preview", _quantity(line_id, "2")), 404, "not_found")
    # a preview runs the change: it takes the same write permission
    assert_error(
        _post(client, reader_key, sub["id"], "preview", _quantity(line_id, "2")), 403, "permission_denied"
    )
    assert every_row(billing.storage) == before
