"""Credit grants granted over HTTP: ``credit_grants`` on ``POST /v1/subscriptions``, the v2 read's
``expand=credit_grants``, and ``GET /v1/{subscriptions,customers}/{id}/grants/upcoming``.

The clock stands at 2026-05-01 09:30 UTC (``tests/conftest.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error

FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "49.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}
MONTHLY = {
    "name": "Monthly credits",
    "credits": "100",
    "cadence": "RECURRING",
    "period": "MONTHLY",
    "expiration_type": "BILLING_CYCLE",
    "priority": 1,
}


def created(response: Any) -> dict[str, Any]:
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    customer = created(
        client.post("/v1/customers", json={"external_id": "acme", "name": "Acme"}, headers=test_key)
    )
    plan = created(
        client.post(
            "/v1/plans", json={"name": "Pro", "prices": [FEE], "credit_grants": [MONTHLY]}, headers=test_key
        )
    )
    return {"customer_id": customer["id"], "plan_id": plan["id"]}


def subscribe(client: TestClient, key: dict[str, str], world: dict[str, str], **fields: Any) -> Any:
    body = {
        "customer_id": world["customer_id"],
        "plan_id": world["plan_id"],
        "currency": "usd",
        "billing_period": "MONTHLY",
        **fields,
    }
    return client.post("/v1/subscriptions", json=body, headers=key)


def test_a_plan_grant_is_granted_and_the_next_one_is_upcoming(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = created(subscribe(client, test_key, world))

    upcoming = client.get(f"/v1/subscriptions/{sub['id']}/grants/upcoming", headers=test_key)
    assert upcoming.status_code == 200, upcoming.text
    body = upcoming.json()
    assert body["pagination"] == {"total": 1, "limit": 1, "offset": 0}
    (item,) = body["items"]
    assert item["id"].startswith("cga_")
    assert {k: item[k] for k in item if k not in {"id", "credit_grant_id", "idempotency_key"}} == {
        "tenant_id": item["tenant_id"],
        "environment_id": item["environment_id"],
        "status": "published",
        "created_at": "2026-05-01T09:30:00Z",
        "updated_at": "2026-05-01T09:30:00Z",
        "created_by": item["created_by"],
        "updated_by": item["updated_by"],
        "subscription_id": sub["id"],
        "scheduled_for": "2026-06-01T09:30:00Z",
        "period_start": "2026-06-01T09:30:00Z",
        "period_end": "2026-07-01T09:30:00Z",
        "applied_at": None,
        "application_status": "pending",
        "application_reason": "recurring_credit_grant",
        "credits": "100",
        "subscription_status_at_application": None,
        "retry_count": 0,
        "failure_reason": None,
        "metadata": {},
    }
    assert item["idempotency_key"] == f"credit_grant_application|{item['id']}"
    # The same list for the customer.
    mine = client.get(f"/v1/customers/{world['customer_id']}/grants/upcoming", headers=test_key)
    assert mine.status_code == 200 and mine.json() == body

    # The v2 read shows the subscription's own copy of the plan's grant, which the CGA names.
    v2 = client.get(f"/v1/subscriptions/{sub['id']}/v2", params={"expand": "credit_grants"}, headers=test_key)
    assert v2.status_code == 200, v2.text
    (grant,) = v2.json()["credit_grants"]
    assert (grant["id"], grant["scope"], grant["subscription_id"], grant["plan_id"]) == (
        item["credit_grant_id"],
        "SUBSCRIPTION",
        sub["id"],
        None,
    )
    assert {k: grant[k] for k in MONTHLY} == MONTHLY


def test_credit_grants_on_create_replace_the_plan_grants(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    own = {
        "name": "Launch bonus",
        "scope": "SUBSCRIPTION",
        "credits": "250.5",
        "cadence": "ONETIME",
        "expiration_type": "DURATION",
        "expiration_duration": 2,
        "expiration_duration_unit": "WEEK",
        "metadata": {"deal": "q2"},
    }
    sub = created(subscribe(client, test_key, world, credit_grants=[own]))
    v2 = client.get(f"/v1/subscriptions/{sub['id']}/v2", params={"expand": "credit_grants"}, headers=test_key)
    (grant,) = v2.json()["credit_grants"]
    assert {k: grant[k] for k in own} == own
    assert grant["subscription_id"] == sub["id"]
    # Granted at once (ONETIME): nothing upcoming.
    upcoming = client.get(f"/v1/subscriptions/{sub['id']}/grants/upcoming", headers=test_key).json()
    assert upcoming == {"items": [], "pagination": {"total": 0, "limit": 0, "offset": 0}}


@pytest.mark.parametrize(
    ("grant", "field"),
    [
        ({**MONTHLY, "scope": "PLAN"}, "credit_grants[0].scope"),
        ({**MONTHLY, "plan_id": "plan_1"}, "credit_grants[0].plan_id"),
        ({**MONTHLY, "credits": "-1"}, "credit_grants[0].credits"),
        ({**MONTHLY, "period": "FORTNIGHTLY"}, "credit_grants[0].period"),
        ({**MONTHLY, "colour": "red"}, "credit_grants[0].colour"),
    ],
)
def test_a_bad_grant_on_create_is_a_400_and_writes_nothing(
    client: TestClient, test_key: dict[str, str], world: dict[str, str], grant: dict[str, Any], field: str
) -> None:
    error = assert_error(subscribe(client, test_key, world, credit_grants=[grant]), 400, "validation_error")
    assert error["details"]["field"] == field
    listed = client.post("/v1/subscriptions/search", json={}, headers=test_key)
    assert listed.json()["pagination"]["total"] == 0
    grants = client.get("/v1/creditgrants", params={"scope": "SUBSCRIPTION"}, headers=test_key)
    assert grants.json()["pagination"]["total"] == 0


def test_upcoming_grants_of_unknown_or_other_environment_owners_are_404(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = created(subscribe(client, test_key, world))
    assert_error(
        client.get("/v1/subscriptions/subs_missing/grants/upcoming", headers=test_key), 404, "not_found"
    )
    assert_error(client.get("/v1/customers/cust_missing/grants/upcoming", headers=test_key), 404, "not_found")
    assert_error(
        client.get(f"/v1/subscriptions/{sub['id']}/grants/upcoming", headers=prod_key), 404, "not_found"
    )
    path = f"/v1/customers/{world['customer_id']}/grants/upcoming"
    assert_error(client.get(path, headers=prod_key), 404, "not_found")
