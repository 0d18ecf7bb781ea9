"""Authentication (401), roles (403), errors and the app itself."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, TestClock
from billingkit.http import create_app
from billingkit.services.access import BootstrapResult
from tests.http.conftest import assert_error
from tests.http.conftest import service_key as _service_key


def test_every_401_case(
    client: TestClient, billing: Billing, setup: BootstrapResult, test_key: dict[str, str], clock: TestClock
) -> None:
    assert_error(client.get("/v1/customers"), 401, "unauthorized")
    assert_error(client.get("/v1/customers", headers={"x-api-key": "garbage"}), 401, "unauthorized")
    assert_error(client.get("/v1/customers", headers={"x-api-key": "sk_" + "x" * 43}), 401, "unauthorized")
    expiring = client.post(
        "/v1/secrets/api/keys",
        json={"name": "soon", "expires_at": (clock.now() + timedelta(minutes=1)).isoformat()},
        headers=test_key,
    ).json()
    assert client.get("/v1/customers", headers={"x-api-key": expiring["api_key"]}).status_code == 200
    clock.advance(minutes=1)
    assert_error(client.get("/v1/customers", headers={"x-api-key": expiring["api_key"]}), 401, "unauthorized")
    doomed = client.post("/v1/secrets/api/keys", json={"name": "doomed"}, headers=test_key).json()
    assert client.delete(f"/v1/secrets/api/keys/{doomed['id']}", headers=test_key).status_code == 204
    assert_error(client.get("/v1/customers", headers={"x-api-key": doomed["api_key"]}), 401, "unauthorized")
    prod_env = setup.environments[1][0].id
    error = assert_error(
        client.get("/v1/customers", headers={**test_key, "X-Environment-ID": prod_env}), 401, "unauthorized"
    )
    assert "environment" in error["message"]
    assert (
        client.get(
            "/v1/customers", headers={**test_key, "X-Environment-ID": setup.environments[0][0].id}
        ).status_code
        == 200
    )
    assert_error(
        client.get("/v1/customers", headers={"authorization": "Bearer not.a.token"}), 401, "unauthorized"
    )


def test_role_checks_are_403(client: TestClient, test_key: dict[str, str]) -> None:
    reader = _service_key(client, test_key, ["all_reader"])
    ingestor = _service_key(client, test_key, ["event_ingestor"])
    assert client.get("/v1/customers", headers=reader).status_code == 200
    error = assert_error(
        client.post("/v1/customers", json={"external_id": "x", "name": "X"}, headers=reader),
        403,
        "permission_denied",
    )
    assert "write on customer" in error["message"]
    assert_error(client.get("/v1/customers", headers=ingestor), 403, "permission_denied")
    assert_error(
        client.post("/v1/secrets/api/keys", json={"name": "k"}, headers=reader), 403, "permission_denied"
    )
    assert_error(
        client.post(
            "/v1/users",
            json={"type": "service_account", "name": "x", "roles": ["all_writer"]},
            headers=reader,
        ),
        403,
        "permission_denied",
    )
    assert client.get("/v1/customers", headers=test_key).json()["pagination"]["total"] == 0


def test_api_key_routes(client: TestClient, test_key: dict[str, str], prod_key: dict[str, str]) -> None:
    created = client.post("/v1/secrets/api/keys", json={"name": "ci"}, headers=test_key).json()
    listed = client.get("/v1/secrets/api/keys", headers=test_key).json()
    assert listed["pagination"]["total"] == 2
    assert all("api_key" not in item and created["api_key"] not in str(item) for item in listed["items"])
    assert {item["name"] for item in listed["items"]} == {"ci", "test super admin key"}
    assert client.get("/v1/secrets/api/keys", headers=prod_key).json()["pagination"]["total"] == 1
    assert_error(client.delete(f"/v1/secrets/api/keys/{created['id']}", headers=prod_key), 404, "not_found")
    assert_error(
        client.post("/v1/secrets/api/keys", json={"name": "k", "type": "master"}, headers=test_key),
        400,
        "validation_error",
    )
    assert_error(client.post("/v1/secrets/api/keys", json={}, headers=test_key), 400, "validation_error")
    assert client.get("/v1/secrets/api/keys", headers=test_key).json()["pagination"]["total"] == 2


def test_users_environments_and_login(
    client: TestClient, setup: BootstrapResult, test_key: dict[str, str]
) -> None:
    me = client.get("/v1/users/me", headers=test_key).json()
    assert me["email"] == "owner@acme.test" and me["roles"] == ["super_admin"] and "password_hash" not in me
    envs = client.get("/v1/environments", headers=test_key).json()
    assert [(e["name"], e["type"]) for e in envs["items"]] == [
        ("test", "development"),
        ("production", "production"),
    ]
    user = client.post(
        "/v1/users",
        json={"type": "user", "email": "dev@acme.test", "roles": ["all_writer"]},
        headers=test_key,
    )
    assert user.status_code == 201 and user.json()["password"]
    assert_error(client.post("/v1/users", json={"type": "robot"}, headers=test_key), 400, "validation_error")
    assert_error(client.post("/v1/users", json={"type": "user"}, headers=test_key), 400, "validation_error")

    login = client.post(
        "/v1/auth/login", json={"email": "dev@acme.test", "password": user.json()["password"]}
    )
    assert login.status_code == 200
    bearer = {"authorization": f"Bearer {login.json()['token']}"}
    assert client.get("/v1/users/me", headers=bearer).json()["email"] == "dev@acme.test"
    made = client.post("/v1/customers", json={"external_id": "via-token", "name": "T"}, headers=bearer)
    assert made.status_code == 201 and made.json()["environment_id"] == setup.environments[0][0].id
    prod = {**bearer, "X-Environment-ID": setup.environments[1][0].id}
    assert client.get("/v1/customers", headers=prod).json()["pagination"]["total"] == 0
    assert_error(
        client.get("/v1/customers", headers={**bearer, "X-Environment-ID": "env_nope"}),
        403,
        "permission_denied",
    )
    assert_error(
        client.post("/v1/auth/login", json={"email": "dev@acme.test", "password": "wrong"}),
        401,
        "unauthorized",
    )
    assert_error(client.post("/v1/auth/login", json={"email": "dev@acme.test"}), 400, "validation_error")


def test_unknown_route_method_and_openapi(client: TestClient, test_key: dict[str, str]) -> None:
    assert_error(client.get("/v1/does-not-exist", headers=test_key), 404, "not_found")
    assert_error(client.get("/nothing"), 404, "not_found")
    response = client.patch("/v1/customers", headers=test_key)
    assert response.status_code == 405 and response.json()["http_status_code"] == 405
    spec = client.get("/v1/openapi.json").json()
    assert "/v1/customers" in spec["paths"] and "/v1/secrets/api/keys" in spec["paths"]


def test_server_failure_is_500_without_internals(
    billing: Billing, test_key: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from billingkit.services import customers

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("connection string postgres://secret@db")

    monkeypatch.setattr(customers, "list_customers", explode)
    monkeypatch.setattr(customers, "search_customers", explode)
    client = TestClient(create_app(billing), raise_server_exceptions=False)
    response = client.get("/v1/customers", headers=test_key)
    body = assert_error(response, 500, "internal_error")
    assert "secret" not in response.text and "Traceback" not in response.text
    assert body["message"] == "An unexpected error occurred"


def test_body_size_limit_is_413(billing: Billing, test_key: dict[str, str]) -> None:
    client = TestClient(create_app(billing, max_body_bytes=200), raise_server_exceptions=False)
    big = {"external_id": "x", "name": "N" * 300}
    assert_error(client.post("/v1/customers", json=big, headers=test_key), 413, "payload_too_large")
    assert (
        client.post("/v1/customers", json={"external_id": "x", "name": "ok"}, headers=test_key).status_code
        == 201
    )
