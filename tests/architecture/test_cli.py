"""The CLI against a real SQLite file."""

from __future__ import annotations

import json
import subprocess
import sys
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
