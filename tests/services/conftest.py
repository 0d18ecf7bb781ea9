from __future__ import annotations

import pytest

from billingkit import Billing, Scoped
from billingkit.services.access import BootstrapResult


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
