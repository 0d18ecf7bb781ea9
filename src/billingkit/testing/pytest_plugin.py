"""pytest fixtures for testing code that uses billingkit.

Installed with the ``testing`` extra (``pip install 'billingkit[testing]'``), this plugin is
registered through the ``pytest11`` entry point ``billingkit.testing.pytest_plugin``: its fixtures
are available in every test, with no import and no ``conftest.py``. Without the entry point (a
source checkout), load it with ``-p billingkit.testing.pytest_plugin`` or
``pytest_plugins = ["billingkit.testing.pytest_plugin"]``; disable it with
``-p no:billingkit.testing.pytest_plugin``.

Fixtures (each test gets its own, nothing is shared between tests):

- ``billing_start``: the instant the test clock starts at (2026-01-01 00:00 UTC); override it in a
  module or ``conftest.py`` to start elsewhere.
- ``test_clock``: a :class:`~billingkit.TestClock` at ``billing_start``.
- ``billing``: a :class:`~billingkit.Billing` on a new in-memory store using ``test_clock``.
- ``billing_actor``: who ``billing_scope`` acts as (the host itself, every permission); override it
  with an :class:`~billingkit.Actor` holding fewer roles to test permissions.
- ``billing_scope``: a ready :class:`~billingkit.Scoped`: a new tenant's ``test`` environment in
  ``billing``, seen by ``billing_actor``.

A fixture of the same name in your own ``conftest.py`` or test module wins over the plugin's
(pytest's usual rule), so an existing ``billing`` fixture keeps working; the plugin's others then
build on yours (``billing_scope`` uses whatever ``billing`` resolves to).

Example::

    def test_first_invoice(billing, billing_scope, test_clock):
        customer = billing_scope.customers.create(external_id="c-1", name="Ada")
        ...
        test_clock.advance(months=1)
        billing.run_due()
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from billingkit.clock import TestClock
from billingkit.domain.access import Actor
from billingkit.facade import Billing, Scoped
from billingkit.testing.sandbox import DEFAULT_START, sandbox_billing, sandbox_scope

# Fixtures are requested by name, never imported.
__all__: list[str] = []


@pytest.fixture
def billing_start() -> datetime:
    """The instant ``test_clock`` starts at: 2026-01-01 00:00 UTC. Override to start elsewhere."""
    return DEFAULT_START


# Named apart from its fixture: a module-level function named test_* looks like a test to pytest.
@pytest.fixture(name="test_clock")
def _test_clock(billing_start: datetime) -> TestClock:
    """A :class:`~billingkit.TestClock` at ``billing_start``; ``billing`` reads the time from it."""
    return TestClock(billing_start)


@pytest.fixture
def billing(test_clock: TestClock) -> Iterator[Billing]:
    """A :class:`~billingkit.Billing` on a new in-memory store using ``test_clock``; closed after
    the test."""
    with sandbox_billing(clock=test_clock) as instance:
        yield instance


@pytest.fixture
def billing_actor() -> Actor:
    """Who ``billing_scope`` acts as: the host itself (``Actor.system()``, every permission)."""
    return Actor.system()


@pytest.fixture
def billing_scope(billing: Billing, billing_actor: Actor) -> Scoped:
    """A new tenant's ``test`` environment in ``billing``, seen by ``billing_actor``."""
    return sandbox_scope(billing, actor=billing_actor)
