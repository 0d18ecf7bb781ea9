"""Environment clone and customer portal sessions through the official SDK."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import Scoped
from billingkit.services.access import BootstrapResult
from tests.compat.conftest import known, status_and_code

FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "20.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}


def test_clone_environment_round_trip(sdk: Flexprice, env: Scoped, setup: BootstrapResult) -> None:
    plan = env.plans.create(name="Pro", lookup_key="pro", prices=[FEE])
    env.customers.create(external_id="ada", name="Ada")
    result = known(
        sdk.environments.clone_environment(id=str(env.environment_id), name="staging", type_="development")
    )
    assert isinstance(result, models.ModelsTemporalWorkflowResult)
    assert result.workflow_id is not None and result.workflow_id.startswith("env_")
    assert result.message is not None and result.workflow_id in result.message
    clone = env.billing.scope(setup.tenant.id, result.workflow_id)
    (copied,) = clone.plans.list().items
    assert (copied.lookup_key, copied.id != plan.id, clone.customers.list().total) == ("pro", True, 0)
    # A target that is no longer empty: the SDK raises the 400 with our code.
    with pytest.raises(errors.ErrorResponse) as refused:
        sdk.environments.clone_environment(
            id=str(env.environment_id), target_environment_id=result.workflow_id
        )
    assert status_and_code(refused.value) == (400, "invalid_operation")


def test_customer_portal_session_round_trip(sdk: Flexprice, env: Scoped, http: TestClient) -> None:
    customer = env.customers.create(external_id="ada", name="Ada")
    session = known(sdk.customers.create_customer_portal_session(external_id="ada"))
    assert isinstance(session, models.PortalSessionResponse)
    assert session.token and session.url == "/v1/customer/portal"
    assert session.expires_at is not None and session.expires_at.tzinfo is not None
    # The token opens the portal (a route the SDK does not cover) and nothing else.
    me = http.get("/v1/customer/portal/customer", headers={"X-Session-Token": session.token})
    assert me.status_code == 200 and me.json()["id"] == customer.id
    with pytest.raises(errors.ErrorResponse) as missing:
        sdk.customers.create_customer_portal_session(external_id="nobody")
    assert status_and_code(missing.value) == (404, "not_found")
