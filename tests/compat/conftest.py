"""The official ``flexprice`` SDK (PyPI) against the REST adapter, in process.

The SDK accepts any ``httpx.Client``; Starlette's ``TestClient`` is one, so every SDK call goes
through the whole adapter (routing, authentication, parsing, rendering) without a socket. The store
is memory: storage is covered by the contract suite, compatibility is about the wire.
"""

from __future__ import annotations

from typing import Any, TypeVar

import pytest
from fastapi.testclient import TestClient
from flexprice import Flexprice
from flexprice.models.errors import ErrorResponse, FlexpriceError
from flexprice.types import UnrecognizedStr
from pydantic import BaseModel

from billingkit import Billing
from billingkit.facade import Scoped
from billingkit.http import create_app
from billingkit.services.access import BootstrapResult
from billingkit.storage.memory import MemoryStorage

SERVER_URL = "http://testserver/v1"
M = TypeVar("M")


@pytest.fixture
def storage():  # type: ignore[no-untyped-def]
    """Memory only (overrides the store-parametrised fixture of tests/conftest.py)."""
    store = MemoryStorage()
    yield store
    store.close()


@pytest.fixture
def http(billing: Billing) -> TestClient:
    return TestClient(create_app(billing), raise_server_exceptions=False)


@pytest.fixture
def sdk(http: TestClient, setup: BootstrapResult) -> Flexprice:
    """The SDK as a customer would build it, with the test environment's key."""
    return Flexprice(server_url=SERVER_URL, api_key_auth=setup.environments[0][1].api_key, client=http)


@pytest.fixture
def env(billing: Billing, setup: BootstrapResult) -> Scoped:
    """The same environment through the library (for what the SDK cannot do, e.g. meters)."""
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


def sdk_with_key(http: TestClient, api_key: str) -> Flexprice:
    return Flexprice(server_url=SERVER_URL, api_key_auth=api_key, client=http)


def known(model: M) -> M:
    """``model`` after checking that every enum value in it is one the SDK knows: the SDK keeps an
    unknown value as ``UnrecognizedStr`` instead of failing, so a wrong spelling would go unseen."""
    unknown: list[str] = []
    _walk(model, "", unknown)
    assert not unknown, f"values the SDK does not know: {unknown}"
    return model


def _walk(value: Any, path: str, unknown: list[str]) -> None:
    if isinstance(value, UnrecognizedStr):
        unknown.append(f"{path}={value!r}")
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _walk(getattr(value, name), f"{path}.{name}", unknown)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, f"{path}[{i}]", unknown)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{path}.{key}", unknown)


def status_and_code(error: FlexpriceError) -> tuple[int, str]:
    """What an SDK error says: the SDK parses our body into ``ErrorResponse`` for the statuses the
    operation declares (400 and 500 everywhere, some 401/404/409) and raises ``FlexpriceDefaultError``
    with the raw answer otherwise; either way our status and code must come through."""
    if isinstance(error, ErrorResponse):
        assert error.data.http_status_code == error.status_code
        return error.status_code, str(error.data.code)
    return error.status_code, error.raw_response.json()["code"]
