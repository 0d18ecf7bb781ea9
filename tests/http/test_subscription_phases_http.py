"""Subscription phases over HTTP, on every store: ``phases`` on ``POST /subscriptions``, the
``/subscriptions/{id}/phases`` and ``/subscriptions/phases/{phase_id}`` routes, ``expand=phases``
on the v2 read, and the error answers.

The clock fixture stands at 2026-05-01 09:30 UTC: a monthly subscription created then is invoiced
until 2026-06-01 09:30.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.http.conftest import assert_error
from tests.http.test_subscriptions_http import NOW, PERIOD_END, created, make_world

PHASE_FIELDS = [
    "id",
    "status",
    "created_at",
    "updated_at",
    "created_by",
    "updated_by",
    "tenant_id",
    "environment_id",
    "subscription_id",
    "start_date",
    "end_date",
    "metadata",
]


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    return make_world(client, test_key)


def subscribe(client: TestClient, key: dict[str, str], world: dict[str, str], **fields: Any) -> Any:
    body = {
        "customer_id": world["customer_id"],
        "plan_id": world["plan_id"],
        "currency": "usd",
        "billing_period": "MONTHLY",
        **fields,
    }
    return client.post("/v1/subscriptions", json=body, headers=key)


def test_phases_on_create_and_the_v2_read(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = created(
        subscribe(
            client,
            test_key,
            world,
            phases=[
                {
                    "start_date": NOW,
                    "end_date": "2026-08-01T09:30:00Z",
                    "override_line_items": [{"price_id": world["fixed_price_id"], "amount": "9.00"}],
                    "metadata": {"stage": "launch"},
                },
                {"start_date": "2026-08-01T09:30:00Z"},
            ],
        )
    )
    phase_lines = [li for li in sub["line_items"] if li["subscription_phase_id"]]
    assert len(phase_lines) == 4  # each phase copies both plan lines
    v2 = client.get(f"/v1/subscriptions/{sub['id']}/v2?expand=phases", headers=test_key)
    assert v2.status_code == 200, v2.text
    phases = v2.json()["phases"]
    assert [list(p) for p in phases] == [PHASE_FIELDS, PHASE_FIELDS]
    assert [(p["start_date"], p["end_date"], p["metadata"]) for p in phases] == [
        (NOW, "2026-08-01T09:30:00Z", {"stage": "launch"}),
        ("2026-08-01T09:30:00Z", None, {}),
    ]
    assert {li["subscription_phase_id"] for li in phase_lines} == {p["id"] for p in phases}
    invoices = client.post(
        "/v1/invoices/search", json={"subscription_id": sub["id"]}, headers=test_key
    ).json()
    assert [inv["total"] for inv in invoices["items"]] == ["9.00"]  # May at the launch price
    listed = client.get(f"/v1/subscriptions/{sub['id']}/phases", headers=test_key)
    assert listed.status_code == 200
    assert listed.json() == {"items": phases, "pagination": {"limit": 2, "offset": 0, "total": 2}}


def test_add_read_move_and_delete_a_phase(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = created(subscribe(client, test_key, world))
    added = client.post(
        f"/v1/subscriptions/{sub['id']}/phases",
        json={
            "start_date": PERIOD_END,
            "end_date": "2026-09-01T09:30:00Z",
            "override_line_items": [{"price_id": world["fixed_price_id"], "amount": "19.00"}],
            "line_items": [{"price_id": world["usage_price_id"]}],
        },
        headers=test_key,
    )
    phase = created(added)
    assert list(phase) == PHASE_FIELDS
    assert (phase["subscription_id"], phase["start_date"], phase["end_date"]) == (
        sub["id"],
        PERIOD_END,
        "2026-09-01T09:30:00Z",
    )
    got = client.get(f"/v1/subscriptions/phases/{phase['id']}", headers=test_key)
    assert got.json() == phase
    moved = client.put(
        f"/v1/subscriptions/phases/{phase['id']}",
        json={"end_date": None, "metadata": {"open": "yes"}},
        headers=test_key,
    )
    assert moved.status_code == 200, moved.text
    assert (moved.json()["end_date"], moved.json()["metadata"]) == (None, {"open": "yes"})
    lines = client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()["line_items"]
    mine = [li for li in lines if li["subscription_phase_id"] == phase["id"]]
    assert sorted((li["entity_type"], li["start_date"], li["end_date"]) for li in mine) == [
        ("plan", PERIOD_END, None),
        ("plan", PERIOD_END, None),
        ("subscription", PERIOD_END, None),
    ]
    deleted = client.delete(f"/v1/subscriptions/phases/{phase['id']}", headers=test_key)
    assert deleted.status_code == 200
    assert deleted.json() == {"message": "subscription phase deleted successfully"}
    assert_error(client.get(f"/v1/subscriptions/phases/{phase['id']}", headers=test_key), 404, "not_found")
    lines = client.get(f"/v1/subscriptions/{sub['id']}", headers=test_key).json()["line_items"]
    assert [(li["start_date"], li["end_date"]) for li in lines] == [(NOW, None), (NOW, None)]


def test_errors_name_the_field_or_the_reason(
    client: TestClient, test_key: dict[str, str], world: dict[str, str]
) -> None:
    body = assert_error(
        subscribe(
            client, test_key, world, phases=[{"start_date": NOW, "end_date": PERIOD_END}, {"start_date": NOW}]
        ),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == "phases[1].start_date"
    body = assert_error(
        subscribe(client, test_key, world, phases=[{"end_date": PERIOD_END}]), 400, "validation_error"
    )
    assert body["details"]["field"] == "phases[0].start_date"
    assert (
        client.post("/v1/subscriptions/search", json={}, headers=test_key).json()["pagination"]["total"] == 0
    )
    sub = created(subscribe(client, test_key, world, phases=[{"start_date": NOW}]))
    phase = client.get(f"/v1/subscriptions/{sub['id']}/phases", headers=test_key).json()["items"][0]
    body = assert_error(
        client.post(
            f"/v1/subscriptions/{sub['id']}/phases",
            json={"start_date": "2026-05-15T00:00:00Z"},
            headers=test_key,
        ),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == "start_date"
    assert_error(
        client.delete(f"/v1/subscriptions/phases/{phase['id']}", headers=test_key), 400, "invalid_operation"
    )
    assert_error(
        client.put(
            f"/v1/subscriptions/phases/{phase['id']}",
            json={"start_date": "2026-07-01T00:00:00Z"},
            headers=test_key,
        ),
        400,
        "invalid_operation",
    )
    body = assert_error(
        client.put(f"/v1/subscriptions/phases/{phase['id']}", json={"start_date": None}, headers=test_key),
        400,
        "validation_error",
    )
    assert body["details"]["field"] == "start_date"
    assert_error(
        client.post("/v1/subscriptions/subs_missing/phases", json={"start_date": NOW}, headers=test_key),
        404,
        "not_found",
    )
    assert_error(client.get("/v1/subscriptions/subs_missing/phases", headers=test_key), 404, "not_found")
    assert_error(
        client.put("/v1/subscriptions/phases/ph_missing", json={}, headers=test_key), 404, "not_found"
    )


def test_phases_belong_to_their_environment(
    client: TestClient, test_key: dict[str, str], prod_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = created(subscribe(client, test_key, world, phases=[{"start_date": PERIOD_END}]))
    phase = client.get(f"/v1/subscriptions/{sub['id']}/phases", headers=test_key).json()["items"][0]
    assert_error(client.get(f"/v1/subscriptions/phases/{phase['id']}", headers=prod_key), 404, "not_found")
    assert_error(client.delete(f"/v1/subscriptions/phases/{phase['id']}", headers=prod_key), 404, "not_found")
    assert client.get(f"/v1/subscriptions/phases/{phase['id']}", headers=test_key).status_code == 200


def test_a_reader_cannot_change_phases(
    client: TestClient, test_key: dict[str, str], reader_key: dict[str, str], world: dict[str, str]
) -> None:
    sub = created(subscribe(client, test_key, world))
    answer = client.post(
        f"/v1/subscriptions/{sub['id']}/phases", json={"start_date": PERIOD_END}, headers=reader_key
    )
    assert_error(answer, 403, "permission_denied")
    assert client.get(f"/v1/subscriptions/{sub['id']}/phases", headers=reader_key).json()["items"] == []
