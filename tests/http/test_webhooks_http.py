"""``/v1/webhooks`` over HTTP, on every store: endpoints (create, list, get, update, delete,
rotate-secret), deliveries (list with filters, get), retry and replay; 400 for bad input with
nothing written, 404s, and environments that see only their own endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from standardwebhooks import Webhook

from billingkit import Billing
from billingkit.providers import MemoryWebhookTransport
from billingkit.services.access import BootstrapResult
from tests.http.conftest import assert_error
from tests.store_rows import every_row

URL = "https://hooks.example.com/in"
FIELDS = {
    "url": URL,
    "description": "orders",
    "enabled": True,
    "event_types": ["customer.created", "customer.updated"],
    "headers": {"Authorization": "Bearer abc"},
}


def _create(client: TestClient, key: dict[str, str], **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/webhooks/endpoints", json={**FIELDS, **fields}, headers=key)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def test_endpoint_crud_round_trip(client: TestClient, test_key: dict[str, str]) -> None:
    created = _create(client, test_key)
    for field, value in FIELDS.items():
        assert created[field] == value
    assert created["id"].startswith("whep_") and created["secret"].startswith("whsec_")
    assert created["failure_streak"] == 0 and created["disabled_reason"] is None
    endpoint_id = created["id"]
    got = client.get(f"/v1/webhooks/endpoints/{endpoint_id}", headers=test_key).json()
    assert got == {k: v for k, v in created.items() if k != "secret"}
    listed = client.get("/v1/webhooks/endpoints", headers=test_key).json()
    assert listed["pagination"] == {"limit": 50, "offset": 0, "total": 1}
    assert listed["items"] == [got]
    updated = client.put(
        f"/v1/webhooks/endpoints/{endpoint_id}", json={"enabled": False, "event_types": []}, headers=test_key
    ).json()
    assert updated["enabled"] is False and updated["event_types"] == [] and updated["url"] == URL
    assert client.get("/v1/webhooks/endpoints?enabled=true", headers=test_key).json()["items"] == []
    assert client.delete(f"/v1/webhooks/endpoints/{endpoint_id}", headers=test_key).status_code == 204
    assert_error(client.get(f"/v1/webhooks/endpoints/{endpoint_id}", headers=test_key), 404, "not_found")
    assert client.get("/v1/webhooks/endpoints", headers=test_key).json()["items"] == []


def test_rotate_secret_answers_a_new_secret_that_signs_from_then_on(
    client: TestClient, billing: Billing, test_key: dict[str, str]
) -> None:
    created = _create(client, test_key)
    rotated = client.post(f"/v1/webhooks/endpoints/{created['id']}/rotate-secret", headers=test_key)
    assert rotated.status_code == 200
    secret = rotated.json()["secret"]
    assert secret != created["secret"] and rotated.json()["id"] == created["id"]
    client.post("/v1/customers", json={"external_id": "c-1", "name": "Ada"}, headers=test_key)
    billing.deliver_webhooks()
    transport = billing.providers.webhook_transport
    assert isinstance(transport, MemoryWebhookTransport)
    [(request, _)] = transport.deliveries
    assert Webhook(secret).verify(request.body, dict(request.headers))["event_type"] == "customer.created"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": URL, "event_types": ["customer.exploded"]}, "event_types"),
        ({"url": URL, "headers": {"webhook-signature": "x"}}, "headers"),
        ({"url": URL, "headers": {"bad name": "x"}}, "headers"),
        ({"url": URL, "secret": "whsec_mine"}, "secret"),
        ({}, "url"),
    ],
)
def test_bad_endpoints_are_refused_with_400_and_nothing_written(
    client: TestClient, billing: Billing, test_key: dict[str, str], body: dict[str, Any], field: str
) -> None:
    before = every_row(billing.storage)
    error = assert_error(
        client.post("/v1/webhooks/endpoints", json=body, headers=test_key), 400, "validation_error"
    )
    assert field in error["message"] + str(error.get("details", ""))
    assert every_row(billing.storage) == before


def test_unknown_ids_are_404(client: TestClient, test_key: dict[str, str]) -> None:
    for method, path in [
        ("get", "/v1/webhooks/endpoints/whep_missing"),
        ("put", "/v1/webhooks/endpoints/whep_missing"),
        ("delete", "/v1/webhooks/endpoints/whep_missing"),
        ("post", "/v1/webhooks/endpoints/whep_missing/rotate-secret"),
        ("get", "/v1/webhooks/deliveries/whdel_missing"),
        ("post", "/v1/webhooks/deliveries/whdel_missing/retry"),
    ]:
        kwargs: dict[str, Any] = {"json": {"enabled": True}} if method == "put" else {}
        assert_error(getattr(client, method)(path, headers=test_key, **kwargs), 404, "not_found")


def test_an_environment_sees_and_receives_only_its_own(
    client: TestClient, billing: Billing, test_key: dict[str, str], prod_key: dict[str, str]
) -> None:
    created = _create(client, test_key)
    assert client.get("/v1/webhooks/endpoints", headers=prod_key).json()["items"] == []
    assert_error(client.get(f"/v1/webhooks/endpoints/{created['id']}", headers=prod_key), 404, "not_found")
    client.post("/v1/customers", json={"external_id": "p-1", "name": "Prod"}, headers=prod_key)
    billing.deliver_webhooks()
    assert client.get("/v1/webhooks/deliveries", headers=test_key).json()["items"] == []


def test_deliveries_are_listed_filtered_retried_and_replayed(
    client: TestClient, billing: Billing, test_key: dict[str, str], setup: BootstrapResult
) -> None:
    endpoint = _create(client, test_key)
    transport = billing.providers.webhook_transport
    assert isinstance(transport, MemoryWebhookTransport)
    transport.answer(URL, status_code=500)
    customer = client.post(
        "/v1/customers", json={"external_id": "c-1", "name": "Ada"}, headers=test_key
    ).json()
    billing.deliver_webhooks()
    listed = client.get(
        "/v1/webhooks/deliveries",
        params={"endpoint_id": endpoint["id"], "delivery_status": "pending", "entity_id": customer["id"]},
        headers=test_key,
    ).json()
    [delivery] = listed["items"]
    assert delivery["event_type"] == "customer.created" and delivery["attempt_count"] == 1
    assert delivery["response_code"] == 500 and delivery["next_attempt_at"] is not None
    assert delivery["attempts"][0]["response_code"] == 500
    assert client.get(f"/v1/webhooks/deliveries/{delivery['id']}", headers=test_key).json() == delivery
    assert (
        client.get("/v1/webhooks/deliveries?delivery_status=delivered", headers=test_key).json()["items"]
        == []
    )
    transport.answer(URL, status_code=204)
    retried = client.post(f"/v1/webhooks/deliveries/{delivery['id']}/retry", headers=test_key).json()
    assert retried["delivery_status"] == "pending"
    billing.deliver_webhooks()
    done = client.get(f"/v1/webhooks/deliveries/{delivery['id']}", headers=test_key).json()
    assert done["delivery_status"] == "delivered" and done["response_code"] == 204
    assert_error(
        client.post(f"/v1/webhooks/deliveries/{delivery['id']}/retry", headers=test_key),
        400,
        "invalid_operation",
    )
    replay = client.post("/v1/webhooks/replay", json={"event_id": delivery["event_id"]}, headers=test_key)
    assert replay.status_code == 200 and replay.json()["count"] == 1
    since = client.post(
        "/v1/webhooks/replay",
        json={"endpoint_id": endpoint["id"], "since": customer["created_at"]},
        headers=test_key,
    ).json()
    assert since["count"] == 1 and since["deliveries"][0]["event_id"] == delivery["event_id"]
    assert_error(client.post("/v1/webhooks/replay", json={}, headers=test_key), 400, "validation_error")
    billing.deliver_webhooks()
    ids = [r.headers["webhook-id"] for r, _ in transport.deliveries]
    assert ids == [delivery["event_id"]] * 4  # 500, the retry, and two replays: one id
