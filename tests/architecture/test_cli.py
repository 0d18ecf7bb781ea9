"""The CLI against a real SQLite file."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from billingkit import Billing


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "billingkit.cli", *args], capture_output=True, text=True)


def test_bootstrap_json_then_use_the_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    done = _cli("bootstrap", "--database-url", url, "--json", "--tenant-name", "CLI Co")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["tenant_id"].startswith("tenant_")
    assert [(e["name"], e["type"]) for e in data["environments"]] == [
        ("test", "development"),
        ("production", "production"),
    ]
    billing = Billing.from_url(url)
    for env in data["environments"]:
        scoped = billing.authenticate(env["api_key"])
        assert (scoped.tenant_id, scoped.environment_id) == (data["tenant_id"], env["id"])
        assert scoped.actor.roles[0].value == "super_admin"
    billing.close()


def test_migrate_reports_the_head_and_is_repeatable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    first = _cli("migrate", "--database-url", url)
    second = _cli("migrate", "--database-url", url)
    assert first.returncode == second.returncode == 0
    assert "schema at revision" in second.stdout


def test_errors_are_reported_not_raised(tmp_path: Path) -> None:
    done = _cli("bootstrap", "--database-url", f"sqlite:///{tmp_path / 'b.db'}", "--owner-email", "bad")
    assert done.returncode == 1
    assert "validation_error" in done.stderr and "Traceback" not in done.stderr


def _due_subscription(url: str) -> str:
    """A weekly subscription that started three weeks and a day ago: three periods are due."""
    billing = Billing.from_url(url)
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    plan = scoped.plans.create(
        name="Basic",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "10",
                "currency": "usd",
                "billing_period": "WEEKLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    customer = scoped.customers.create(external_id="cli-1", name="CLI")
    start = datetime.now(UTC) - timedelta(weeks=3, days=1)
    sub = scoped.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="WEEKLY", start_date=start
    )
    billing.close()
    return sub.id


def test_worker_once_bills_what_is_due_and_a_second_run_bills_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    sub_id = _due_subscription(url)
    first = _cli("worker", "--once", "--database-url", url)
    assert first.returncode == 0, first.stderr
    # Three weekly periods ended: three cycle invoices (the opening one was issued at creation).
    assert first.stdout.strip() == "1 subscriptions, 3 invoices, 3 notifications, 0 failures"
    second = _cli("worker", "--once", "--database-url", url)
    assert second.stdout.strip() == "0 subscriptions, 0 invoices, 0 notifications, 0 failures"
    billing = Billing.from_url(url)
    with billing.storage.unit_of_work() as uow:
        sub = uow.claim_due_subscriptions(datetime.now(UTC), 10)
    assert sub == []
    billing.close()
    assert sub_id.startswith("subs_")
