from __future__ import annotations

from typing import Any

import pytest

from billingkit import Billing, Scoped
from billingkit.services.access import BootstrapResult
from billingkit.testing.contracts.storage import sample


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


def stored(scoped: Scoped, kind: str, **fields: Any) -> Any:
    """A live resource of ``kind`` written straight to storage, for tests of another area that
    need it to exist (an owner plan, a meter, a feature)."""
    item = sample(kind, scoped.tenant_id, str(scoped.environment_id), **fields)
    with scoped.billing.storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
        getattr(uow, kind).add(item)
        uow.commit()
    return item
