"""``POST /v1/subscriptions/{id}/change/preview`` and ``/change/execute`` over HTTP, on every
store: the reference's answer shapes with exact figures, the preview writing nothing, the
end-of-period schedule, and refusals (400 naming the field or the reason, nothing written).

The clock stands at 2026-05-01 09:30 UTC: a monthly subscription made then has the period
[1 May 09:30, 1 Jun 09:30) (31 days); 11 days later 20 days are unused.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import TestClock
from billingkit.ports import Storage
from tests.http.conftest import assert_error
from tests.store_rows import every_row


def _fee(amount: str, name: str) -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "display_name": name,
    }


BODY = {"billing_cadence": "RECURRING", "billing_cycle": "anniversary", "billing_period": "MONTHLY"}


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    """A subscription on Pro (31.00 a month in advance) and the plan Max (93.00)."""
    pro = client.post("/v1/plans", json={"name": "Pro", "prices": [_fee("31.00", "Pro")]}, headers=test_key)
    top = client.post("/v1/plans", json={"name": "Max", "prices": [_fee("93.00", "Max")]}, headers=test_key)
    customer = client.post("/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key)
    sub = client.post(
        "/v1/subscriptions",
        json={
            "customer_id": customer.json()["id"],
            "plan_id": pro.json()["id"],
            "currency": "usd",
            "billing_period": "MONTHLY",
        },
        headers=test_key,
    )
    assert sub.status_code == 201, sub.text
    return {"sub": sub.json()["id"], "pro": pro.json()["id"], "max": top.json()["id"]}


def _post(client: TestClient, key: dict[str, str], sub_id: str, action: str, **body: Any) -> Any:
    return client.post(f"/v1/subscriptions/{sub_id}/change/{action}", json=body, headers=key)


def test_preview_then_execute(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], clock: TestClock, storage: Storage
) -> None:
    clock.advance(timedelta(days=11))
    before = every_row(storage)
    preview = _post(client, test_key, world["sub"], "preview", target_plan_id=world["max"], **BODY)
    assert preview.status_code == 200, preview.text
    assert every_row(storage) == before
    body = preview.json()
    assert (body["subscription_id"], body["change_type"]) == (world["sub"], "upgrade")
    assert (body["current_plan"]["name"], body["target_plan"]["name"]) == ("Pro", "Max")
    details = body["proration_details"]
    # 31.00 x 20/31 = 20.00 unused; the new first period 93.00; 73.00 net.
    assert (details["credit_amount"], details["charge_amount"], details["net_amount"]) == (
        "20.00",
        "93.00",
        "73.00",
    )
    assert (details["days_used"], details["days_remaining"], details["currency"]) == (11, 20, "usd")
    assert body["next_invoice_preview"]["total"] == "73.00"
    assert body["new_billing_cycle"]["period_start"] == "2026-05-12T09:30:00Z"
    assert body["new_billing_cycle"]["period_end"] == "2026-06-12T09:30:00Z"
    assert body["effective_date"] == "2026-05-12T09:30:00Z"

    response = _post(
        client,
        test_key,
        world["sub"],
        "execute",
        target_plan_id=world["max"],
        **BODY,
        metadata={"by": "sales"},
    )
    assert response.status_code == 200, response.text
    done = response.json()
    assert (done["old_subscription"]["id"], done["old_subscription"]["status"]) == (world["sub"], "cancelled")
    assert done["old_subscription"]["archived_at"] == "2026-05-12T09:30:00Z"
    new = done["new_subscription"]
    assert new["id"] != world["sub"] and (new["plan_id"], new["status"]) == (world["max"], "active")
    assert done["proration_applied"] == details
    assert (done["invoice"]["billing_reason"], done["invoice"]["total"]) == ("SUBSCRIPTION_UPDATE", "73.00")
    assert (done["is_scheduled"], done["schedule_id"], done["metadata"]) == (False, None, {"by": "sales"})
    stored = client.get(f"/v1/subscriptions/{new['id']}", headers=test_key).json()
    assert stored["metadata"]["by"] == "sales"


def test_end_of_period_answers_the_schedule(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    response = _post(
        client,
        test_key,
        world["sub"],
        "execute",
        target_plan_id=world["max"],
        change_at="end_of_period",
        **BODY,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["is_scheduled"], body["new_subscription"], body["invoice"]) == (True, None, None)
    assert body["scheduled_at"] == body["effective_date"] == "2026-06-01T09:30:00Z"
    schedules = client.get(f"/v1/subscriptions/{world['sub']}/schedules", headers=test_key).json()
    (schedule,) = schedules["schedules"]
    assert (schedule["id"], schedule["schedule_type"], schedule["status"]) == (
        body["schedule_id"],
        "plan_change",
        "pending",
    )
    again = _post(
        client,
        test_key,
        world["sub"],
        "execute",
        target_plan_id=world["max"],
        change_at="end_of_period",
        **BODY,
    )
    assert "pending plan change" in assert_error(again, 400, "invalid_operation")["message"]


@pytest.mark.parametrize("action", ["preview", "execute"])
def test_refusals_name_the_field_or_the_reason_and_write_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], storage: Storage, action: str
) -> None:
    before = every_row(storage)
    missing = _post(client, test_key, world["sub"], action, **BODY)
    assert assert_error(missing, 400, "validation_error")["details"]["field"] == "target_plan_id"
    no_cycle = _post(
        client, test_key, world["sub"], action, target_plan_id=world["max"], billing_period="MONTHLY"
    )
    assert assert_error(no_cycle, 400, "validation_error")["details"]["field"] in (
        "billing_cadence",
        "billing_cycle",
    )
    unknown = _post(client, test_key, world["sub"], action, target_plan_id="plan_nope", **BODY)
    assert assert_error(unknown, 400, "validation_error")["details"]["field"] == "target_plan_id"
    annual = _post(
        client,
        test_key,
        world["sub"],
        action,
        target_plan_id=world["max"],
        **{**BODY, "billing_period": "ANNUAL"},
    )
    assert assert_error(annual, 400, "validation_error")["details"]["field"] == "billing_period"
    same = _post(client, test_key, world["sub"], action, target_plan_id=world["pro"], **BODY)
    assert "already on plan" in assert_error(same, 400, "invalid_operation")["message"]
    assert_error(
        _post(client, test_key, "subs_nope", action, target_plan_id=world["max"], **BODY), 404, "not_found"
    )
    assert every_row(storage) == before
