"""``/v1/subscriptions/{id}/pause``, ``/resume`` and ``/pauses`` over HTTP, on every store, and
``payment_behavior`` on ``POST /v1/subscriptions``.

The clock fixture stands at 2026-05-01 09:30 UTC: a subscription created now has the monthly
period 2026-05-01 09:30 .. 2026-06-01 09:30.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import TestClock
from billingkit.providers.sandbox import SandboxPaymentProvider
from tests.http.conftest import assert_error

PAUSE_FIELDS = [
    "id",
    "status",
    "created_at",
    "updated_at",
    "created_by",
    "updated_by",
    "tenant_id",
    "environment_id",
    "subscription_id",
    "pause_status",
    "pause_mode",
    "resume_mode",
    "pause_start",
    "pause_end",
    "resumed_at",
    "original_period_start",
    "original_period_end",
    "reason",
    "metadata",
]


def ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    customer = ok(
        client.post("/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key), 201
    )
    plan = ok(
        client.post(
            "/v1/plans",
            json={
                "name": "Pro",
                "prices": [
                    {
                        "type": "FIXED",
                        "billing_model": "FLAT_FEE",
                        "amount": "49.00",
                        "currency": "usd",
                        "billing_period": "MONTHLY",
                        "invoice_cadence": "ADVANCE",
                    }
                ],
            },
            headers=test_key,
        ),
        201,
    )
    return {"customer_id": customer["id"], "plan_id": plan["id"]}


def subscribe(
    client: TestClient, key: dict[str, str], world: dict[str, str], **fields: Any
) -> dict[str, Any]:
    body = {**world, "currency": "usd", "billing_period": "MONTHLY", **fields}
    return ok(client.post("/v1/subscriptions", json=body, headers=key), 201)


def test_pause_resume_and_list_over_http(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], clock: TestClock
) -> None:
    sub = subscribe(client, test_key, world)
    clock.advance(timedelta(days=10))  # 11 May 09:30
    paused = ok(
        client.post(
            f"/v1/subscriptions/{sub['id']}/pause",
            json={
                "pause_mode": "immediate",
                "pause_days": 10,
                "reason": "holiday",
                "metadata": {"by": "ops"},
            },
            headers=test_key,
        )
    )
    assert list(paused) == ["subscription", "pause", "billing_impact", "dry_run"]
    assert paused["dry_run"] is False
    pause = paused["pause"]
    assert list(pause) == PAUSE_FIELDS
    assert {
        k: pause[k] for k in ("pause_status", "pause_mode", "resume_mode", "pause_start", "pause_end")
    } == {
        "pause_status": "active",
        "pause_mode": "immediate",
        "resume_mode": None,
        "pause_start": "2026-05-11T09:30:00Z",
        "pause_end": "2026-05-21T09:30:00Z",
    }
    assert (pause["reason"], pause["metadata"], pause["subscription_id"]) == (
        "holiday",
        {"by": "ops"},
        sub["id"],
    )
    assert (pause["original_period_start"], pause["original_period_end"]) == (
        "2026-05-01T09:30:00Z",
        "2026-06-01T09:30:00Z",
    )
    assert paused["billing_impact"] == {
        "period_start": "2026-05-01T09:30:00Z",
        "original_period_end": "2026-06-01T09:30:00Z",
        "adjusted_period_end": "2026-06-11T09:30:00Z",
        "pause_start": "2026-05-11T09:30:00Z",
        "pause_end": "2026-05-21T09:30:00Z",
        "pause_duration_seconds": 864000,
        "amount_invoiced": "0.00",
        "amount_credited": "0.00",
        "currency": "usd",
    }
    subscription = paused["subscription"]
    assert (
        subscription["subscription_status"],
        subscription["pause_status"],
        subscription["active_pause_id"],
    ) == (
        "paused",
        "active",
        pause["id"],
    )
    assert "next_run_at" not in subscription and "run_at" not in pause

    got = ok(client.get(f"/v1/subscriptions/{sub['id']}/v2", headers=test_key))
    assert [p["id"] for p in got["pauses"]] == [pause["id"]]
    assert "pauses" not in ok(client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key))

    clock.advance(timedelta(days=4))  # resumed early, 15 May: stretched by 4 days
    resumed = ok(
        client.post(
            f"/v1/subscriptions/{sub['id']}/resume", json={"resume_mode": "immediate"}, headers=test_key
        )
    )
    assert resumed["subscription"]["subscription_status"] == "active"
    assert resumed["subscription"]["current_period_end"] == "2026-06-05T09:30:00Z"
    assert (
        resumed["pause"]["pause_status"],
        resumed["pause"]["resumed_at"],
        resumed["pause"]["resume_mode"],
    ) == (
        "completed",
        "2026-05-15T09:30:00Z",
        "immediate",
    )
    assert resumed["billing_impact"]["pause_duration_seconds"] == 4 * 86400
    assert "pauses" not in ok(client.get(f"/v1/subscriptions/{sub['id']}/v2", headers=test_key))

    listed = ok(client.get(f"/v1/subscriptions/{sub['id']}/pauses", headers=test_key))
    assert listed["pagination"] == {"limit": 1, "offset": 0, "total": 1}
    assert listed["items"][0]["pause_status"] == "completed"


def test_an_empty_body_pauses_now_until_resumed(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world)
    paused = ok(client.post(f"/v1/subscriptions/{sub['id']}/pause", headers=test_key))
    assert (paused["pause"]["pause_mode"], paused["pause"]["pause_end"]) == ("immediate", None)
    assert paused["billing_impact"]["adjusted_period_end"] is None
    resumed = ok(client.post(f"/v1/subscriptions/{sub['id']}/resume", headers=test_key))
    assert resumed["subscription"]["current_period_end"] == sub["current_period_end"]  # paused no time


def test_a_dry_run_over_http_writes_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world)
    preview = ok(
        client.post(
            f"/v1/subscriptions/{sub['id']}/pause",
            json={"pause_mode": "period_end", "pause_days": 3, "dry_run": True},
            headers=test_key,
        )
    )
    assert preview["dry_run"] is True
    assert preview["subscription"]["pause_status"] == "scheduled"
    assert preview["pause"]["pause_start"] == "2026-06-01T09:30:00Z"
    stored = ok(client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key))
    assert stored == sub
    assert ok(client.get(f"/v1/subscriptions/{sub['id']}/pauses", headers=test_key))["items"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"pause_end": "2026-04-30T00:00:00Z"}, "pause_end"),
        ({"pause_end": "2026-05-20T00:00:00Z", "pause_days": 2}, "pause_days"),
        ({"pause_mode": "scheduled"}, "pause_start"),
        ({"pause_days": -1}, "pause_days"),
        ({"pause_days": "ten"}, "pause_days"),
        ({"pause_mode": "later"}, "pause_mode"),
        ({"pause_end": "2026-05-20T00:00:00"}, "pause_end"),  # no time zone
        ({"until": "2026-05-20T00:00:00Z"}, "until"),
    ],
)
def test_bad_pause_bodies_are_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], body: dict[str, Any], field: str
) -> None:
    sub = subscribe(client, test_key, world)
    error = assert_error(
        client.post(f"/v1/subscriptions/{sub['id']}/pause", json=body, headers=test_key),
        400,
        "validation_error",
    )
    assert error["details"]["field"] == field
    assert ok(client.get(f"/v1/subscriptions/{sub['id']}/pauses", headers=test_key))["items"] == []


def test_state_refusals_and_unknown_subscriptions(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    draft = subscribe(client, test_key, world, subscription_status="draft")
    error = assert_error(
        client.post(f"/v1/subscriptions/{draft['id']}/pause", headers=test_key), 400, "invalid_operation"
    )
    assert "only active subscriptions can be paused" in error["message"]
    sub = subscribe(client, test_key, world)
    error = assert_error(
        client.post(f"/v1/subscriptions/{sub['id']}/resume", headers=test_key), 400, "invalid_operation"
    )
    assert "can be resumed" in error["message"]
    error = assert_error(
        client.post(f"/v1/subscriptions/{sub['id']}/resume", json={"resume_mode": "auto"}, headers=test_key),
        400,
        "validation_error",
    )
    assert error["details"]["field"] == "resume_mode"
    for path in ("pause", "resume"):
        assert_error(
            client.post(f"/v1/subscriptions/subs_missing/{path}", headers=test_key), 404, "not_found"
        )
    assert_error(client.get("/v1/subscriptions/subs_missing/pauses", headers=test_key), 404, "not_found")


def test_another_environment_cannot_pause(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(client, test_key, world)
    assert_error(client.post(f"/v1/subscriptions/{sub['id']}/pause", headers=prod_key), 404, "not_found")
    assert (
        ok(client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key))["subscription_status"] == "active"
    )


def test_payment_behavior_over_http(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = subscribe(
        client, test_key, world, collection_method="send_invoice", payment_behavior="default_incomplete"
    )
    assert sub["subscription_status"] == "incomplete"
    invoices = ok(client.post("/v1/invoices/search", json={"subscription_id": sub["id"]}, headers=test_key))
    (opening,) = invoices["items"]
    payment = {
        "amount": "49.00",
        "currency": "usd",
        "destination_id": opening["id"],
        "destination_type": "INVOICE",
        "payment_method_type": "OFFLINE",
    }
    ok(client.post("/v1/payments", json=payment, headers=test_key), 201)
    assert (
        ok(client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key))["subscription_status"] == "active"
    )

    refused = client.post(
        "/v1/subscriptions",
        json={
            **world,
            "currency": "usd",
            "billing_period": "MONTHLY",
            "payment_behavior": "error_if_incomplete",
            "gateway_payment_method_id": SandboxPaymentProvider.DECLINED_METHOD,
        },
        headers=test_key,
    )
    error = assert_error(refused, 400, "invalid_operation")
    assert error["details"]["field"] == "payment_behavior"
    listed = ok(client.post("/v1/subscriptions/search", json={}, headers=test_key))
    assert [s["id"] for s in listed["items"]] == [sub["id"]]
