"""The pytest plugin (billingkit.testing.pytest_plugin): a user's test file using its fixtures
passes, overriding a fixture works, and the pytest11 entry point declared in pyproject loads it."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PLUGIN = "billingkit.testing.pytest_plugin"
ROOT = Path(__file__).resolve().parents[2]

USER_TESTS = """
from datetime import UTC, datetime, timedelta

from billingkit import Billing, Scoped, SubscriptionStatus, TestClock


def test_fixtures_are_wired_together(billing, test_clock, billing_scope):
    assert isinstance(billing, Billing) and isinstance(billing_scope, Scoped)
    assert billing.clock is test_clock
    assert test_clock.now() == datetime(2026, 1, 1, tzinfo=UTC)
    assert billing_scope.billing is billing and billing_scope.environment_id is not None


def test_a_month_is_billed(billing, test_clock, billing_scope):
    plan = billing_scope.plans.create(
        name="Pro",
        prices=[{"amount": "49.00", "currency": "usd", "type": "FIXED", "billing_model": "FLAT_FEE",
                 "billing_period": "MONTHLY", "invoice_cadence": "ADVANCE"}],
    )
    ada = billing_scope.customers.create(external_id="ada", name="Ada")
    sub = billing_scope.subscriptions.create(
        plan_id=plan.id, customer_id=ada.id, currency="usd", billing_period="MONTHLY"
    )
    test_clock.advance(months=1, hours=1)
    report = billing.run_due()
    assert [str(i.total) for i in report.invoices] == ["49.00"]
    assert billing_scope.subscriptions.get(sub.id).subscription_status is SubscriptionStatus.ACTIVE


def test_each_test_starts_empty(billing_scope):
    assert billing_scope.customers.search().total == 0
"""


@pytest.fixture(autouse=True)
def _this_source_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The subprocesses import this checkout's billingkit, not an installed one."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:randomly", "-p", "no:cacheprovider", *args)


def test_a_users_tests_using_the_fixtures_pass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    _run(pytester).assert_outcomes(passed=3)


def test_a_users_own_fixtures_override_the_plugins(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        from datetime import UTC, datetime

        import pytest

        from billingkit import Actor, Role


        @pytest.fixture
        def billing_start():
            return datetime(2024, 2, 29, 12, tzinfo=UTC)


        @pytest.fixture
        def billing_actor():
            return Actor(id="reader", roles=(Role.ALL_READER,))
        """
    )
    pytester.makepyfile(
        test_user="""
        from datetime import UTC, datetime

        import pytest

        from billingkit import PermissionDenied


        def test_clock_starts_where_told(test_clock):
            assert test_clock.now() == datetime(2024, 2, 29, 12, tzinfo=UTC)


        def test_scope_acts_as_the_given_actor(billing_scope):
            assert billing_scope.actor.id == "reader"
            with pytest.raises(PermissionDenied):
                billing_scope.customers.create(external_id="c", name="C")
        """
    )
    _run(pytester).assert_outcomes(passed=2)


def test_the_entry_point_in_pyproject_loads_the_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installing the package installs this entry point: a distribution on the path declaring it
    makes the fixtures available with no -p and no conftest."""
    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert entry_points == {PLUGIN: PLUGIN}
    dist = pytester.mkpydir("site").parent / "site" / "billingkit_plugin_check-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: billingkit-plugin-check\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())  # INI, as pip writes it
    (dist / "entry_points.txt").write_text(f"[pytest11]\n{lines}")
    pytester.makepyfile(test_user=USER_TESTS)
    monkeypatch.setenv("PYTHONPATH", f"{dist.parent}{os.pathsep}{ROOT / 'src'}")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    # Naming it again with -p (entry point name = module name) loads it once, not twice.
    _run(pytester).assert_outcomes(passed=3)


def test_without_the_plugin_the_fixtures_are_missing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", f"no:{PLUGIN}", "-p", "no:randomly")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*fixture 'billing*' not found*"])


def test_in_this_suite_the_plugin_builds_on_conftests_billing(
    billing, billing_scope, test_clock, clock
) -> None:  # type: ignore[no-untyped-def]
    """tests/conftest.py's billing (memory, SQLite, PostgreSQL) overrides the plugin's, and its
    test_clock is conftest's clock: the plugin's billing_scope runs on every store."""
    assert billing_scope.billing is billing
    assert test_clock is clock is billing.clock
    customer = billing_scope.customers.create(external_id="c-1", name="Ada")
    assert billing_scope.customers.get(customer.id).created_at == clock.now()
