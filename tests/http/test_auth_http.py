"""Authentication (401), roles (403), errors and the app itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
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
    from billingkit.facade.areas import Customers

    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("connection string postgres://secret@db")

    # The operation holds its service function (read once, when the area class is made).
    monkeypatch.setattr(Customers.search, "fn", explode)
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


# -- hardening (issue 13) ------------------------------------------------------------------------


def test_a_key_holding_less_than_super_admin_cannot_delete_the_owners_key(
    client: TestClient, setup: BootstrapResult, test_key: dict[str, str]
) -> None:
    owner_key_id = setup.environments[0][1].key.id
    writer = _service_key(client, test_key, ["all_writer"])
    listed = client.get("/v1/secrets/api/keys", headers=writer).json()["items"]
    owner_item = next(item for item in listed if item["id"] == owner_key_id)
    assert owner_item["roles"] == ["super_admin"] and owner_item["display_id"].startswith("sk_")
    assert all("api_key" not in item and "key_hash" not in item for item in listed)
    error = assert_error(
        client.delete(f"/v1/secrets/api/keys/{owner_key_id}", headers=writer), 403, "permission_denied"
    )
    assert "super_admin" in error["message"] and error["details"] == {"roles": ["super_admin"]}
    assert client.get("/v1/users/me", headers=test_key).status_code == 200  # the owner is not locked out
    # What the writer's roles cover it may delete: an ingestor's key and its own.
    ingestor = _service_key(client, test_key, ["event_ingestor"])
    ingestor_id = next(
        i["id"]
        for i in client.get("/v1/secrets/api/keys", headers=writer).json()["items"]
        if i["roles"] == ["event_ingestor"]
    )
    assert client.delete(f"/v1/secrets/api/keys/{ingestor_id}", headers=writer).status_code == 204
    assert_error(client.post("/v1/events", json={}, headers=ingestor), 401, "unauthorized")
    own = client.post("/v1/secrets/api/keys", json={"name": "own"}, headers=writer).json()
    assert own["roles"] == ["all_writer"]
    assert client.delete(f"/v1/secrets/api/keys/{own['id']}", headers=writer).status_code == 204
    assert client.delete(f"/v1/secrets/api/keys/{owner_key_id}", headers=test_key).status_code == 204


def test_an_all_writer_cannot_grant_or_mint_super_admin(
    client: TestClient, setup: BootstrapResult, test_key: dict[str, str]
) -> None:
    writer = _service_key(client, test_key, ["all_writer"])
    for body in (
        {"type": "service_account", "name": "root", "roles": ["super_admin"]},
        {"type": "user", "email": "boss@acme.test", "roles": ["super_admin"]},
    ):
        assert_error(client.post("/v1/users", json=body, headers=writer), 403, "permission_denied")
    service = client.post(
        "/v1/users", json={"type": "service_account", "name": "s", "roles": ["all_reader"]}, headers=writer
    ).json()
    assert_error(
        client.post(
            "/v1/secrets/api/keys", json={"name": "k", "service_account_id": service["id"]}, headers=writer
        ),
        403,
        "permission_denied",
    )
    keys = client.get("/v1/secrets/api/keys", headers=test_key).json()["pagination"]["total"]
    assert keys == 2  # the bootstrap key and the writer's: refused requests wrote nothing
    assert_error(
        client.post(
            "/v1/users", json={"type": "user", "email": "x@acme.test", "roles": ["root"]}, headers=writer
        ),
        400,
        "validation_error",
    )


def _user(client: TestClient, owner: dict[str, str], email: str) -> str:
    made = client.post(
        "/v1/users", json={"type": "user", "email": email, "password": "right password"}, headers=owner
    )
    assert made.status_code == 201, made.text
    return "right password"


def test_login_throttling_is_429_with_retry_after(
    client: TestClient, test_key: dict[str, str], clock: TestClock
) -> None:
    password = _user(client, test_key, "dev@acme.test")
    for _ in range(5):
        wrong = {"email": "dev@acme.test", "password": "wrong"}
        assert_error(client.post("/v1/auth/login", json=wrong), 401, "unauthorized")
    locked = client.post("/v1/auth/login", json={"email": "Dev@Acme.test", "password": password})
    body = assert_error(locked, 429, "too_many_requests")
    assert locked.headers["retry-after"] == "900" and body["details"] == {"retry_after": 900}
    clock.advance(minutes=10)
    again = client.post("/v1/auth/login", json={"email": "dev@acme.test", "password": password})
    assert_error(again, 429, "too_many_requests")
    assert again.headers["retry-after"] == "300"
    clock.advance(minutes=5)
    assert (
        client.post("/v1/auth/login", json={"email": "dev@acme.test", "password": password}).status_code
        == 200
    )
    # An unknown email is answered exactly alike.
    for _ in range(5):
        client.post("/v1/auth/login", json={"email": "ghost@acme.test", "password": "wrong"})
    ghost = client.post("/v1/auth/login", json={"email": "ghost@acme.test", "password": "wrong"})
    assert_error(ghost, 429, "too_many_requests")
    assert ghost.headers["retry-after"] == "900"


def test_an_empty_environment_header_is_absent(
    client: TestClient, setup: BootstrapResult, test_key: dict[str, str]
) -> None:
    test_env = setup.environments[0][0].id
    for blank in ("", "   "):
        made = client.post(
            "/v1/customers",
            json={"external_id": f"c{len(blank)}", "name": "C"},
            headers={**test_key, "X-Environment-ID": blank},
        )
        assert made.status_code == 201 and made.json()["environment_id"] == test_env
    password = _user(client, test_key, "dev@acme.test")
    token = client.post("/v1/auth/login", json={"email": "dev@acme.test", "password": password}).json()[
        "token"
    ]
    for blank in ("", "   "):
        listed = client.get(
            "/v1/customers", headers={"authorization": f"Bearer {token}", "X-Environment-ID": blank}
        )
        assert listed.status_code == 200 and listed.json()["pagination"]["total"] == 2
    # An empty x-api-key beside a bearer token is no key: the token is used.
    me = client.get("/v1/users/me", headers={"authorization": f"Bearer {token}", "x-api-key": ""})
    assert me.status_code == 200 and me.json()["email"] == "dev@acme.test"


def test_a_chunked_body_over_the_limit_is_413_and_writes_nothing(
    billing: Billing, client: TestClient, test_key: dict[str, str]
) -> None:
    small = TestClient(create_app(billing, max_body_bytes=300), raise_server_exceptions=False)
    headers = {**test_key, "content-type": "application/json"}

    def customer(name: str) -> Iterator[bytes]:  # a generator: httpx sends it chunked, unsized
        yield b'{"external_id": "big", '
        yield b'"name": "' + name.encode() + b'"}'

    def events(count: int) -> Iterator[bytes]:
        yield b'{"events": ['
        for i in range(count):
            event = {"event_id": f"e{i}", "event_name": "n", "external_customer_id": "c"}
            yield (b"," if i else b"") + json.dumps(event).encode()
        yield b"]}"

    response = small.post("/v1/customers", content=customer("N" * 400), headers=headers)
    assert "content-length" not in response.request.headers
    assert response.request.headers["transfer-encoding"] == "chunked"
    assert_error(response, 413, "payload_too_large")
    assert_error(small.post("/v1/events/bulk", content=events(20), headers=headers), 413, "payload_too_large")
    assert client.get("/v1/customers", headers=test_key).json()["pagination"]["total"] == 0
    lookup = {"event_id": "e0"}
    assert_error(client.get("/v1/events/lookup", params=lookup, headers=test_key), 404, "not_found")
    # Under the limit the same kind of body goes through, read whole.
    assert small.post("/v1/customers", content=customer("ok"), headers=headers).status_code == 201
    assert small.post("/v1/events/bulk", content=events(2), headers=headers).status_code == 202
    assert client.get("/v1/events/lookup", params=lookup, headers=test_key).status_code == 200
