from __future__ import annotations

from datetime import UTC, datetime

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.services.access import BootstrapResult


@pytest.fixture
def clock() -> TestClock:
    return TestClock(datetime(2026, 5, 1, 9, 30, tzinfo=UTC))


@pytest.fixture
def billing(storage, clock: TestClock) -> Billing:  # type: ignore[no-untyped-def]
    return Billing(storage, clock, token_secret=b"test-secret")


@pytest.fixture
def setup(billing: Billing) -> BootstrapResult:
    return billing.bootstrap(
        tenant_name="Acme", owner_email="owner@acme.test", owner_password="correct horse"
    )


@pytest.fixture
def test_env(billing: Billing, setup: BootstrapResult) -> Scoped:
    return billing.scope(setup.tenant.id, setup.environments[0][0].id)


@pytest.fixture
def prod_env(billing: Billing, setup: BootstrapResult) -> Scoped:
    return billing.scope(setup.tenant.id, setup.environments[1][0].id)


@pytest.fixture
def owner(billing: Billing, setup: BootstrapResult) -> Scoped:
    """The test environment as its owner's bootstrap key sees it."""
    return billing.authenticate(setup.environments[0][1].api_key)
