"""The customer portal and the environment clone over HTTP: ``GET /v1/customers/portal/{external_id}``,
the read-only ``/v1/customer/portal/*`` routes behind ``X-Session-Token``, and
``POST /v1/environments/{id}/clone``. Memory store (the services' storage is proven elsewhere)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from billingkit.services.access import BootstrapResult
from billingkit.storage.memory import MemoryStorage
from tests.http.conftest import assert_error

FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "20.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}
PORTAL = "/v1/customer/portal"


@pytest.fixture
def storage():  # type: ignore[no-untyped-def]
    store = MemoryStorage()
    yield store
    store.close()


@pytest.fixture
def world(client: TestClient, test_key: dict[str, str]) -> dict[str, Any]:
    """Ada and Bob on plan Pro, each with an opening invoice; Ada has a wallet."""
    plan = client.post("/v1/plans", json={"name": "Pro", "prices": [FEE]}, headers=test_key).json()
    ids: dict[str, Any] = {"plan_id": plan["id"]}
    for external_id in ("ada", "bob"):
        customer = client.post(
            "/v1/customers", json={"external_id": external_id, "name": external_id.title()}, headers=test_key
        ).json()
        sub = client.post(
            "/v1/subscriptions",
            json={
                "customer_id": customer["id"],
                "plan_id": plan["id"],
                "currency": "usd",
                "billing_period": "MONTHLY",
            },
            headers=test_key,
        )
        assert sub.status_code == 201, sub.text
        ids[external_id] = customer["id"]
    wallet = client.post("/v1/wallets", json={"customer_id": ids["ada"], "currency": "usd"}, headers=test_key)
    assert wallet.status_code == 200, wallet.text
    return ids


def _session(client: TestClient, key: dict[str, str], external_id: str) -> dict[str, str]:
    answer = client.get(f"/v1/customers/portal/{external_id}", headers=key)
    assert answer.status_code == 200, answer.text
    return {"X-Session-Token": answer.json()["token"]}


def test_creating_a_session(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any], clock: TestClock
) -> None:
    answer = client.get("/v1/customers/portal/ada", headers=test_key)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert list(body) == ["token", "url", "expires_at"]
    assert body["url"] == PORTAL
    expires = (clock.now().replace(microsecond=0) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert body["expires_at"] == expires
    assert_error(client.get("/v1/customers/portal/nobody", headers=test_key), 404, "not_found")
    assert_error(client.get("/v1/customers/portal/ada"), 401, "unauthorized")


def test_a_reader_cannot_hand_out_sessions(
    client: TestClient, reader_key: dict[str, str], world: dict[str, Any]
) -> None:
    assert_error(client.get("/v1/customers/portal/ada", headers=reader_key), 403, "permission_denied")


def test_the_portal_routes_show_one_customer(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    ada, bob = _session(client, test_key, "ada"), _session(client, test_key, "bob")
    me = client.get(f"{PORTAL}/customer", headers=ada)
    assert me.status_code == 200 and me.json()["id"] == world["ada"]
    subs = client.get(f"{PORTAL}/subscriptions", headers=ada).json()
    assert [s["customer_id"] for s in subs["items"]] == [world["ada"]]
    invoices = client.get(f"{PORTAL}/invoices?limit=10", headers=ada).json()
    assert invoices["pagination"] == {"limit": 10, "offset": 0, "total": 1}
    (invoice,) = invoices["items"]
    assert invoice["customer_id"] == world["ada"]
    assert (
        client.get(f"{PORTAL}/invoices/{invoice['id']}", headers=ada).json()
        == client.get(f"/v1/invoices/{invoice['id']}", headers=test_key).json()
    )
    pdf = client.get(f"{PORTAL}/invoices/{invoice['id']}/pdf", headers=ada)
    assert pdf.headers["content-type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
    where = client.get(f"{PORTAL}/invoices/{invoice['id']}/pdf?url=true", headers=ada).json()
    assert where["presigned_url"].endswith(f"{PORTAL}/invoices/{invoice['id']}/pdf")
    (wallet,) = client.get(f"{PORTAL}/wallets", headers=ada).json()
    assert wallet["customer_id"] == world["ada"]
    assert client.get(f"{PORTAL}/wallets", headers=bob).json() == []
    entitled = client.get(f"{PORTAL}/entitlements", headers=ada).json()
    assert entitled["customer_id"] == world["ada"]
    # Bob's invoice is no invoice at all to Ada.
    (bobs,) = client.get(f"{PORTAL}/invoices", headers=bob).json()["items"]
    assert_error(client.get(f"{PORTAL}/invoices/{bobs['id']}", headers=ada), 404, "not_found")
    assert_error(client.get(f"{PORTAL}/invoices/{bobs['id']}/pdf", headers=ada), 404, "not_found")
    # Pages are bounded like every list's.
    for path in ("/subscriptions", "/invoices"):
        for bad in ({"offset": 2**63}, {"offset": -1}, {"limit": 1001}, {"limit": 0}):
            wrong = assert_error(client.get(PORTAL + path, params=bad, headers=ada), 400, "validation_error")
            assert wrong["details"]["field"] == next(iter(bad)), (path, bad)
        assert client.get(PORTAL + path, params={"offset": 5}, headers=ada).json()["items"] == []


def test_the_portal_has_no_writes(
    client: TestClient, test_key: dict[str, str], world: dict[str, Any]
) -> None:
    ada = _session(client, test_key, "ada")
    for method, path in (
        ("post", "/invoices"),
        ("put", "/customer"),
        ("delete", "/customer"),
        ("post", "/wallets"),
        ("post", "/subscriptions"),
    ):
        answer = client.request(method, PORTAL + path, headers=ada, json={})
        assert answer.status_code == 405, (method, path, answer.text)
    # The session token opens nothing outside the portal: not as a key, not as a Bearer token.
    token = ada["X-Session-Token"]
    assert_error(
        client.post("/v1/customers", json={"external_id": "x"}, headers={"x-api-key": token}),
        401,
        "unauthorized",
    )
    assert_error(
        client.get("/v1/customers", headers={"authorization": f"Bearer {token}"}), 401, "unauthorized"
    )
    assert client.get("/v1/customers", headers=test_key).json()["pagination"]["total"] == 2


def test_the_portal_refuses_other_credentials_with_its_own_messages(
    client: TestClient, billing: Billing, test_key: dict[str, str], world: dict[str, Any], clock: TestClock
) -> None:
    missing = assert_error(client.get(f"{PORTAL}/customer"), 401, "unauthorized")
    assert missing["message"] == "Session token required"
    assert assert_error(
        client.get(f"{PORTAL}/customer", headers={"X-Session-Token": " "}), 401, "unauthorized"
    )["message"] == ("Session token required")
    # An API key is not a session token, in either header.
    assert (
        assert_error(client.get(f"{PORTAL}/customer", headers=test_key), 401, "unauthorized")["message"]
        == "Session token required"
    )
    key = test_key["x-api-key"]
    ada = _session(client, test_key, "ada")
    token = ada["X-Session-Token"]
    header, claims, signature = token.split(".")
    for refused in (key, token[:-3] + "abc", f"{header}.{claims}x.{signature}", "a.b.c"):
        body = assert_error(
            client.get(f"{PORTAL}/customer", headers={"X-Session-Token": refused}), 401, "unauthorized"
        )
        assert body["message"] == "Invalid or expired session token"
    clock.advance(timedelta(hours=1))
    expired = assert_error(client.get(f"{PORTAL}/invoices", headers=ada), 401, "unauthorized")
    assert expired["message"] == "Invalid or expired session token"


# -- environment clone ----------------------------------------------------------------------------


def test_cloning_over_http(
    client: TestClient,
    setup: BootstrapResult,
    test_key: dict[str, str],
    prod_key: dict[str, str],
    world: dict[str, Any],
) -> None:
    test_id, production_id = setup.environments[0][0].id, setup.environments[1][0].id
    answer = client.post(
        f"/v1/environments/{test_id}/clone", json={"name": "staging", "type": "development"}, headers=test_key
    )
    assert answer.status_code == 202, answer.text
    body = answer.json()
    new_id = body["environment_id"]
    assert body["workflow_id"] == new_id and body["environment"]["name"] == "staging"
    assert body["copied"]["plans"] == 1 and body["copied"]["prices"] == 1 and body["skipped"] == {}
    assert new_id in body["message"]
    names = [e["name"] for e in client.get("/v1/environments", headers=test_key).json()["items"]]
    assert sorted(names) == ["production", "staging", "test"]
    # Bad input is a 400 and writes nothing; a key clones only its own environment.
    assert_error(
        client.post(f"/v1/environments/{test_id}/clone", json={"name": "x"}, headers=test_key),
        400,
        "validation_error",
    )
    assert_error(
        client.post(
            f"/v1/environments/{test_id}/clone",
            json={"name": "x", "type": "development", "extra": 1},
            headers=test_key,
        ),
        400,
        "validation_error",
    )
    assert_error(
        client.post(
            f"/v1/environments/{production_id}/clone",
            json={"name": "x", "type": "development"},
            headers=test_key,
        ),
        403,
        "permission_denied",
    )
    assert_error(
        client.post(
            "/v1/environments/env_missing/clone", json={"name": "x", "type": "development"}, headers=test_key
        ),
        404,
        "not_found",
    )
    # The clone is not empty now; production has no catalogue and no customers, so it can take one.
    assert_error(
        client.post(
            f"/v1/environments/{test_id}/clone", json={"target_environment_id": new_id}, headers=test_key
        ),
        400,
        "invalid_operation",
    )
    into = client.post(
        f"/v1/environments/{test_id}/clone", json={"target_environment_id": production_id}, headers=test_key
    )
    assert into.status_code == 202 and into.json()["environment_id"] == production_id
    assert [p["name"] for p in client.get("/v1/plans", headers=prod_key).json()["items"]] == ["Pro"]
    assert client.get("/v1/customers", headers=prod_key).json()["pagination"]["total"] == 0
    names = [e["name"] for e in client.get("/v1/environments", headers=test_key).json()["items"]]
    assert sorted(names) == ["production", "staging", "test"]


def test_a_reader_cannot_clone(
    client: TestClient, setup: BootstrapResult, reader_key: dict[str, str]
) -> None:
    test_id = setup.environments[0][0].id
    assert_error(
        client.post(
            f"/v1/environments/{test_id}/clone", json={"name": "x", "type": "development"}, headers=reader_key
        ),
        403,
        "permission_denied",
    )
