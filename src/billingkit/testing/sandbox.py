"""A billing to test against: in memory, on a test clock, with a tenant and environment ready.

Standard library and billingkit only (no pytest, no hypothesis): the pytest plugin's fixtures
(:mod:`billingkit.testing.pytest_plugin`) and the lifecycle state machine
(:mod:`billingkit.testing.lifecycle`) are built on these two calls, and a test written for another
runner can use them directly::

    from billingkit.testing.sandbox import sandbox_billing, sandbox_scope

    billing = sandbox_billing()                      # memory store, TestClock at 2026-01-01 UTC
    scope = sandbox_scope(billing)                   # a new tenant's test environment
    scope.customers.create(external_id="c-1", name="Ada")
    billing.clock.advance(months=1)
"""

from __future__ import annotations

from datetime import UTC, datetime

from billingkit.clock import TestClock
from billingkit.domain.access import Actor, EnvironmentType
from billingkit.facade import Billing, Scoped
from billingkit.storage.memory import MemoryStorage

__all__ = ["DEFAULT_START", "sandbox_billing", "sandbox_scope"]

#: Where a sandbox's test clock starts unless told otherwise.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)


def sandbox_billing(start: datetime = DEFAULT_START, *, clock: TestClock | None = None) -> Billing:
    """A :class:`~billingkit.Billing` on a new in-memory store whose clock is a
    :class:`~billingkit.TestClock` (``clock``, or a new one at ``start``): ``billing.clock``."""
    return Billing(MemoryStorage(), clock or TestClock(start), token_secret=b"billingkit-sandbox")


def sandbox_scope(
    billing: Billing, *, actor: Actor | None = None, tenant_name: str = "Test tenant"
) -> Scoped:
    """A new tenant with one ``test`` (development) environment in ``billing``, seen by ``actor``
    (default: the host itself, every permission). Cheaper than ``billing.bootstrap()``: no owner
    account, no password hash, no API keys."""
    tenant = billing.create_tenant(tenant_name)
    environment = billing.scope(tenant.id).environments.create(name="test", type=EnvironmentType.DEVELOPMENT)
    return billing.scope(tenant.id, environment.id, actor=actor)
