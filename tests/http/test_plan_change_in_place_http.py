"""``POST /v1/subscriptions/{id}/change/v2/preview`` and ``/change/v2/execute`` over HTTP, on every
store: the reference's answer shape, an idempotent retry, a preview that writes nothing, an
end-of-period schedule, and refusals (400 naming the field or the reason, 404, 409).

The clock stands at 2026-05-01 09:30 UTC: the monthly period is [1 May 09:30, 1 Jun 09:30), 31
days; eleven days later 20 of them are left.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from tests.http.conftest import assert_error
from tests.store_rows import every_row

FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "31.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
    "display_name": "Base",
}


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, Any]:
    def plan(name: str, amount: str) -> str:
        body = {"name": name, "lookup_key": name.lower(), "prices": [{**FEE, "amount": amount}]}
        response = client.post("/v1/plans", json=body, headers=test_key)
        assert response.status_code == 201, response.text
        return response.json()["id"]  # type: ignore[no-any-return]

    pro, cheap, big = plan("Pro", "31.00"), plan("Lite", "15.50"), plan("Max", "93.00")
    customer = client.post("/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key)
    body = {
        "customer_id": customer.json()["id"],
        "plan_id": pro,
        "currency": "usd",
        "billing_period": "MONTHLY",
    }
    sub = client.post("/v1/subscriptions", json=body, headers=test_key)
    assert sub.status_code == 201, sub.text
    return {"sub": sub.json(), "pro": pro, "lite": cheap, "max": big}


def change(client: TestClient, key: dict[str, str], sub_id: str, what: str = "execute", **body: Any) -> Any:
    return client.post(f"/v1/subscriptions/{sub_id}/change/v2/{what}", json=body, headers=key)


def test_execute_answers_the_reference_shape_and_a_retry_the_same(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any], clock: TestClock
) -> None:
    clock.advance(timedelta(days=11))
    sub_id = world["sub"]["id"]
    request = {
        "target_plan_id": world["max"],
        "proration_behavior": "create_prorations",
        "idempotency_key": "u1",
    }
    response = change(client, test_key, sub_id, **request, metadata={"reason": "growth"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == [
        "change_type",
        "changed_resources",
        "effective_at",
        "entity_changes",
        "from_plan",
        "is_scheduled",
        "metadata",
        "schedule_id",
        "scheduled_at",
        "subscription",
        "to_plan",
        "warnings",
    ]
    assert (body["change_type"], body["is_scheduled"], body["metadata"]) == (
        "upgrade",
        False,
        {"reason": "growth"},
    )
    assert body["from_plan"] == {"description": None, "id": world["pro"], "lookup_key": "pro", "name": "Pro"}
    assert (body["subscription"]["id"], body["subscription"]["plan_id"]) == (sub_id, world["max"])
    assert body["subscription"]["version"] == world["sub"]["version"] + 1
    (invoice,) = body["changed_resources"]["invoices"]
    # credit 31.00 x 20/31 = 20.00, charge 93.00 x 20/31 = 60.00: 40.00 net
    assert (invoice["action"], invoice["status"], invoice["invoice"]["total"]) == (
        "created",
        "issued",
        "40.00",
    )
    assert [ln["amount"] for ln in invoice["invoice"]["line_items"]] == ["60.00", "-20.00"]
    assert [c["change_action"] for c in body["changed_resources"]["line_items"]] == ["ended", "created"]
    assert body["changed_resources"]["subscriptions"][0]["action"] == "updated"

    again = change(client, test_key, sub_id, **request, metadata={"reason": "growth"})
    assert again.status_code == 200 and again.json() == body
    listed = client.post("/v1/invoices/search", json={"subscription_id": sub_id}, headers=test_key).json()[
        "items"
    ]
    assert [i["billing_reason"] for i in listed].count("SUBSCRIPTION_UPDATE") == 1
    other = change(client, test_key, sub_id, **{**request, "proration_behavior": "none"})
    assert assert_error(other, 409, "idempotency_conflict")["details"]["field"] == "idempotency_key"


def test_preview_of_a_downgrade_shows_the_wallet_credit_and_writes_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any], clock: TestClock, billing: Billing
) -> None:
    clock.advance(timedelta(days=11))
    before = every_row(billing.storage)
    response = change(
        client,
        test_key,
        world["sub"]["id"],
        "preview",
        target_plan_id=world["lite"],
        proration_behavior="create_prorations",
    )
    assert response.status_code == 200, response.text
    assert every_row(billing.storage) == before
    body = response.json()
    assert body["change_type"] == "downgrade"
    (credit,) = body["changed_resources"]["invoices"]
    # credit 20.00, charge 15.50 x 20/31 = 10.00: 10.00 to the wallet
    assert (credit["action"], credit["status"], credit["wallet_transaction"]["credit_amount"]) == (
        "wallet_credit",
        "preview",
        "10.00",
    )
    assert body["subscription"]["plan_id"] == world["lite"]  # as it would be
    assert (
        client.get(f"/v1/subscriptions/{world['sub']['id']}", headers=test_key).json()["plan_id"]
        == world["pro"]
    )


def test_end_of_period_is_a_pending_schedule(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    sub_id = world["sub"]["id"]
    response = change(
        client,
        test_key,
        sub_id,
        target_plan_id=world["max"],
        proration_behavior="create_prorations",
        change_at="end_of_period",
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["is_scheduled"], body["scheduled_at"]) == (True, world["sub"]["current_period_end"])
    assert body["changed_resources"] == {"invoices": [], "line_items": [], "subscriptions": []}
    (schedule,) = client.get(f"/v1/subscriptions/{sub_id}/schedules", headers=test_key).json()["schedules"]
    assert (schedule["id"], schedule["schedule_type"], schedule["status"]) == (
        body["schedule_id"],
        "plan_change",
        "pending",
    )


def test_refusals(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any], billing: Billing
) -> None:
    sub_id = world["sub"]["id"]
    before = every_row(billing.storage)
    unknown = change(client, test_key, sub_id, target_plan_id="plan_nope", proration_behavior="none")
    assert assert_error(unknown, 400, "validation_error")["details"]["field"] == "target_plan_id"
    missing = change(client, test_key, sub_id, target_plan_id=world["max"])
    assert assert_error(missing, 400, "validation_error")["details"]["field"] == "proration_behavior"
    bad = change(
        client, test_key, sub_id, target_plan_id=world["max"], proration_behavior="none", change_at="later"
    )
    assert assert_error(bad, 400, "validation_error")["details"]["field"] == "change_at"
    assert_error(
        change(client, test_key, "subs_nope", target_plan_id=world["max"], proration_behavior="none"),
        404,
        "not_found",
    )
    assert every_row(billing.storage) == before
    cancelled = client.post(
        f"/v1/subscriptions/{sub_id}/cancel", json={"cancellation_type": "end_of_period"}, headers=test_key
    )
    assert cancelled.status_code == 200
    pending = change(
        client, test_key, sub_id, "preview", target_plan_id=world["max"], proration_behavior="none"
    )
    assert "pending cancellation" in assert_error(pending, 400, "invalid_operation")["message"]
