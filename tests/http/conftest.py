from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing
from billingkit.http import create_app
from billingkit.services.access import BootstrapResult


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
