"""``POST /v1/subscriptions/{id}/cancel`` and the subscription schedule routes over HTTP, on every
store: answers, refusals (400 naming the reason or the field, nothing written), the reference's
``/v1/...`` schedule paths served at the host root and doubled, and the SDK's spellings.

The clock stands at 2026-05-01 09:30 UTC: a monthly subscription made then has the period
[1 May 09:30, 1 Jun 09:30) (31 days).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from billingkit.domain.subscriptions import SubscriptionType
from billingkit.services.access import BootstrapResult
from tests.http.conftest import assert_error

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
def subscribe(client: TestClient, test_key: dict[str, str]) -> Any:
    plan = client.post("/v1/plans", json={"name": "Pro", "prices": [FEE]}, headers=test_key).json()
    customer = client.post(
        "/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key
    ).json()

    def make(**fields: Any) -> dict[str, Any]:
        body = {
            "customer_id": customer["id"],
            "plan_id": plan["id"],
            "currency": "usd",
            "billing_period": "MONTHLY",
        }
        response = client.post("/v1/subscriptions", json={**body, **fields}, headers=test_key)
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    return make


def cancel(client: TestClient, key: dict[str, str], sub_id: str, **body: Any) -> Any:
    return client.post(f"/v1/subscriptions/{sub_id}/cancel", json=body, headers=key)


def test_immediate_with_prorations_answers_the_reference_shape(
    client: TestClient, test_key: dict[str, str], subscribe: Any, clock: TestClock
) -> None:
    sub = subscribe()
    clock.advance(timedelta(days=11))  # 11 of 31 days used: 20 unused
    response = cancel(
        client,
        test_key,
        sub["id"],
        cancellation_type="immediate",
        proration_behavior="create_prorations",
        cancel_immediately_invoice_policy="generate_invoice",
        reason="budget",
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == [
        "subscription_id",
        "cancellation_type",
        "effective_date",
        "status",
        "reason",
        "proration_details",
        "total_credit_amount",
        "message",
        "processed_at",
    ]  # no proration_invoice: nothing in arrears to bill
    assert (body["status"], body["effective_date"], body["processed_at"]) == (
        "cancelled",
        "2026-05-12T09:30:00Z",
        "2026-05-12T09:30:00Z",
    )
    # 31.00 x 20/31 = 20.00
    (detail,) = body["proration_details"]
    assert (detail["credit_amount"], detail["original_amount"], detail["proration_days"]) == (
        "20.00",
        "31.00",
        20,
    )
    assert body["total_credit_amount"] == "20.00"
    read = client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()
    assert (read["subscription_status"], read["cancelled_at"]) == ("cancelled", "2026-05-12T09:30:00Z")
    again = cancel(client, test_key, sub["id"], cancellation_type="immediate")
    assert "already cancelled" in assert_error(again, 400, "invalid_operation")["message"]


@pytest.mark.parametrize("key", ["cancel_immediately_inovice_policy", "cancel_immediately_invoice_policy"])
def test_both_spellings_of_the_invoice_policy(
    client: TestClient, test_key: dict[str, str], subscribe: Any, clock: TestClock, key: str
) -> None:
    arrear = subscribe()
    clock.advance(timedelta(days=3))
    response = cancel(
        client, test_key, arrear["id"], cancellation_type="immediate", **{key: "generate_invoice"}
    )
    assert response.status_code == 200, response.text
    # Only an ADVANCE fee: the used part has nothing to bill, so no invoice is issued.
    assert "proration_invoice" not in response.json()
    assert response.json()["proration_details"] == [] and response.json()["total_credit_amount"] == "0.00"


def test_refusals_name_the_reason_and_write_nothing(
    client: TestClient, test_key: dict[str, str], subscribe: Any, billing: Billing, setup: BootstrapResult
) -> None:
    draft = subscribe(subscription_status="draft")
    body = assert_error(
        cancel(client, test_key, draft["id"], cancellation_type="immediate"), 400, "invalid_operation"
    )
    assert "draft" in body["message"]

    inherited = subscribe()
    scope = (setup.tenant.id, setup.environments[0][0].id)
    with billing.storage.unit_of_work(*scope) as uow:
        stored = uow.subscriptions.get(inherited["id"])
        uow.subscriptions.update(stored.model_copy(update={"subscription_type": SubscriptionType.INHERITED}))
        uow.commit()
    body = assert_error(
        cancel(client, test_key, inherited["id"], cancellation_type="end_of_period"), 400, "invalid_operation"
    )
    assert "inherited" in body["message"]

    scheduled = subscribe()
    first = cancel(client, test_key, scheduled["id"], cancellation_type="end_of_period")
    assert first.status_code == 200, first.text
    assert (first.json()["status"], first.json()["effective_date"]) == ("active", "2026-06-01T09:30:00Z")
    before = client.get(f"/v1/subscriptions/{scheduled['id']}", headers=test_key).json()
    body = assert_error(
        cancel(
            client,
            test_key,
            scheduled["id"],
            cancellation_type="scheduled_date",
            cancel_at="2026-05-20T00:00:00Z",
        ),
        400,
        "invalid_operation",
    )
    assert "already has a cancellation scheduled" in body["message"]
    assert client.get(f"/v1/subscriptions/{scheduled['id']}", headers=test_key).json() == before
    schedules = client.get(f"/v1/subscriptions/{scheduled['id']}/schedules", headers=test_key).json()
    assert schedules["count"] == 1

    assert_error(cancel(client, test_key, "subs_missing", cancellation_type="immediate"), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cancellation_type": "scheduled_date"}, "cancel_at"),
        ({"cancellation_type": "end_of_period", "cancel_at": "2026-05-20T00:00:00Z"}, "cancel_at"),
        ({"cancellation_type": "immediate", "cancel_at": "2026-05-20T00:00:00Z"}, "cancel_at"),
        ({"cancellation_type": "scheduled_date", "cancel_at": "2026-04-20T00:00:00Z"}, "cancel_at"),
        ({"cancellation_type": "later"}, "cancellation_type"),
        ({}, "cancellation_type"),
        ({"cancellation_type": "immediate", "proration_behavior": "sometimes"}, "proration_behavior"),
        (
            {"cancellation_type": "immediate", "cancel_immediately_inovice_policy": "bill"},
            "cancel_immediately_inovice_policy",
        ),
        ({"cancellation_type": "immediate", "refund": True}, "refund"),
    ],
)
def test_bad_bodies_are_400_naming_the_field(
    client: TestClient, test_key: dict[str, str], subscribe: Any, body: dict[str, Any], field: str
) -> None:
    sub = subscribe()
    error = assert_error(cancel(client, test_key, sub["id"], **body), 400, "validation_error")
    assert error["details"]["field"] == field
    read = client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()
    assert (read["subscription_status"], read["cancel_at"]) == ("active", None)


def test_schedule_routes_under_every_spelling(
    client: TestClient, test_key: dict[str, str], subscribe: Any, clock: TestClock
) -> None:
    sub = subscribe()
    response = cancel(
        client, test_key, sub["id"], cancellation_type="scheduled_date", cancel_at="2026-05-21T09:30:00Z"
    )
    assert response.status_code == 200, response.text
    assert response.json()["message"] == "subscription will be cancelled on 2026-05-21T09:30:00Z"
    read = client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()
    assert (
        read["cancel_at"],
        read["end_date"],
        read["current_period_end"],
        read["cancel_at_period_end"],
    ) == (
        "2026-05-21T09:30:00Z",
        "2026-05-21T09:30:00Z",
        "2026-05-21T09:30:00Z",
        True,
    )

    listed = client.get(f"/v1/subscriptions/{sub['id']}/schedules", headers=test_key).json()
    (schedule,) = listed["schedules"]
    assert listed["count"] == 1
    assert (schedule["schedule_type"], schedule["status"], schedule["can_be_cancelled"]) == (
        "cancellation",
        "pending",
        True,
    )
    assert (schedule["scheduled_at"], schedule["days_until_execution"]) == ("2026-05-21T09:30:00Z", 20)
    assert schedule["configuration"]["original_current_period_end"] == "2026-06-01T09:30:00Z"
    for path in (
        f"/v1/subscription-schedules/{schedule['id']}",
        f"/v1/v1/subscription-schedules/{schedule['id']}",
        f"/v1/subscriptions/schedules/{schedule['id']}",
    ):
        got = client.get(path, headers=test_key)
        assert got.status_code == 200 and got.json() == schedule, path
    for path in (
        "/v1/subscription-schedules",
        "/v1/v1/subscription-schedules",
        "/v1/subscriptions/schedules",
    ):
        everything = client.get(
            path, params={"pending_only": "true", "subscription_ids": sub["id"]}, headers=test_key
        )
        assert everything.status_code == 200, everything.text
        assert everything.json() == listed, path
    assert client.get(f"/v1/v1/subscriptions/{sub['id']}/schedules", headers=test_key).json() == listed
    none = client.get("/v1/subscription-schedules", params={"schedule_type": "plan_change"}, headers=test_key)
    assert none.json() == {"schedules": [], "count": 0}
    assert_error(client.get("/v1/subscription-schedules/sched_missing", headers=test_key), 404, "not_found")

    mismatch = client.post(
        f"/v1/subscriptions/schedules/{schedule['id']}/cancel",
        json={"schedule_id": "sched_other"},
        headers=test_key,
    )
    assert assert_error(mismatch, 400, "validation_error")["details"]["field"] == "schedule_id"
    withdrawn = client.post(f"/v1/subscriptions/schedules/{schedule['id']}/cancel", headers=test_key)
    assert withdrawn.status_code == 200, withdrawn.text
    assert withdrawn.json() == {"message": "schedule cancelled successfully", "status": "cancelled"}
    read = client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()
    assert (
        read["cancel_at"],
        read["end_date"],
        read["current_period_end"],
        read["cancel_at_period_end"],
    ) == (
        None,
        None,
        "2026-06-01T09:30:00Z",
        False,
    )
    again = client.post(f"/v1/v1/subscriptions/schedules/{schedule['id']}/cancel", json={}, headers=test_key)
    assert "only a pending schedule" in assert_error(again, 400, "invalid_operation")["message"]


def test_schedule_routes_need_the_subscription_permissions(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str], subscribe: Any
) -> None:
    sub = subscribe()
    assert_error(
        cancel(client, reader_key, sub["id"], cancellation_type="immediate"), 403, "permission_denied"
    )
    assert client.get(f"/v1/subscriptions/{sub['id']}/schedules", headers=reader_key).status_code == 200
    assert client.get("/v1/subscription-schedules").status_code == 401


def test_the_doubled_paths_stay_out_of_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/v1/openapi.json").json()["paths"]
    assert "/v1/subscriptions/{subscription_id}/cancel" in paths
    assert (
        "/v1/subscription-schedules" in paths and "/v1/subscriptions/schedules/{schedule_id}/cancel" in paths
    )
    assert not any(path.startswith("/v1/v1/") for path in paths)
