from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic_core
import pytest
from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.http import create_app
from billingkit.http.schemas.base import WireModel
from billingkit.services.access import BootstrapResult


@pytest.fixture(autouse=True)
def answers_are_the_library_dicts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every answer model a route builds from a ``to_dict()`` must serialise to exactly that dict's
    JSON, byte for byte (keys, order, nulls), as the route sends it (``exclude_unset``): the models
    describe the wire, they must not change it. A key the model lacks fails in ``model_validate``
    itself (``extra="forbid"``), a key it requires but the dict lacks too."""
    validate = WireModel.model_validate.__func__  # type: ignore[attr-defined]

    def checked(cls: type[WireModel], obj: Any, **kwargs: Any) -> WireModel:
        model = validate(cls, obj, **kwargs)
        sent = model.model_dump_json(exclude_unset=True)
        assert sent == pydantic_core.to_json(obj).decode(), f"{cls.__name__} changes the answer"
        return model  # type: ignore[no-any-return]

    monkeypatch.setattr(WireModel, "model_validate", classmethod(checked))
    yield


@pytest.fixture
def client(billing: Billing) -> TestClient:
    return TestClient(create_app(billing), raise_server_exceptions=False)


@pytest.fixture
def test_key(setup: BootstrapResult) -> dict[str, str]:
    return {"x-api-key": setup.environments[0][1].api_key}


@pytest.fixture
def prod_key(setup: BootstrapResult) -> dict[str, str]:
    return {"x-api-key": setup.environments[1][1].api_key}


def assert_error(response, status: int, code: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code
    assert body["http_status_code"] == status
    assert isinstance(body["message"], str) and body["message"]
    return body  # type: ignore[no-any-return]


def service_key(client: TestClient, owner: dict[str, str], roles: list[str]) -> dict[str, str]:
    account = client.post(
        "/v1/users", json={"type": "service_account", "name": "svc", "roles": roles}, headers=owner
    )
    assert account.status_code == 201, account.text
    assert account.json()["roles"] == roles and "password" not in account.json()
    key = client.post(
        "/v1/secrets/api/keys",
        json={"name": "svc key", "type": "private_key", "service_account_id": account.json()["id"]},
        headers=owner,
    )
    assert key.status_code == 201, key.text
    body = key.json()
    assert set(body) >= {"id", "name", "api_key", "roles", "created_at"}
    assert body["roles"] == roles
    return {"x-api-key": body["api_key"]}


@pytest.fixture
def reader_key(client: TestClient, test_key: dict[str, str]) -> dict[str, str]:
    """Headers of an ``all_reader`` service account key in the test environment."""
    return service_key(client, test_key, ["all_reader"])
