"""The CLI against a real SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path

import pytest

from billingkit import Billing
from billingkit.cli import _settings, build_parser


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
    # Notifications: each cycle invoice's ``invoice.update.finalized``, then
    # ``invoice.payment.overdue`` for the four unpaid invoices whose due date (a day after their
    # period's end) has passed.
    assert first.stdout.strip() == "1 subscriptions, 3 invoices, 7 notifications, 0 failures"
    second = _cli("worker", "--once", "--database-url", url)
    assert second.stdout.strip() == "0 subscriptions, 0 invoices, 0 notifications, 0 failures"
    billing = Billing.from_url(url)
    with billing.storage.unit_of_work() as uow:
        sub = uow.claim_due("subscriptions", datetime.now(UTC), 10)
    assert sub == []
    billing.close()
    assert sub_id.startswith("subs_")


def _cli_env(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "billingkit.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )


def test_version_comes_from_the_package_metadata() -> None:
    done = _cli("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"billingkit {version('billingkit')}"


def test_migrate_prints_no_alembic_lines_unless_debug(tmp_path: Path) -> None:
    quiet = _cli("migrate", "--database-url", f"sqlite:///{tmp_path / 'q.db'}")
    assert (quiet.returncode, quiet.stderr) == (0, "")
    loud = _cli_env(
        "migrate", "--database-url", f"sqlite:///{tmp_path / 'l.db'}", BILLINGKIT_LOG_LEVEL="debug"
    )
    assert loud.returncode == 0 and "Running upgrade" in loud.stderr
    # The flag wins over the variable.
    flagged = _cli_env(
        "migrate",
        "--database-url",
        f"sqlite:///{tmp_path / 'f.db'}",
        "--log-level",
        "info",
        BILLINGKIT_LOG_LEVEL="debug",
    )
    assert (flagged.returncode, flagged.stderr) == (0, "")


BLOCK_PSYCOPG = "import sys; sys.modules['psycopg'] = None; from billingkit.cli import main; "


def test_postgres_without_the_driver_is_one_friendly_line() -> None:
    for command in ("migrate", "worker --once", "bootstrap"):
        argv = [*command.split(), "--database-url", "postgresql://postgres@127.0.0.1/x"]
        done = subprocess.run(
            [sys.executable, "-c", BLOCK_PSYCOPG + f"raise SystemExit(main({argv!r}))"],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 1, command
        assert done.stderr == (
            "error: configuration_error: PostgreSQL needs the psycopg driver (psycopg is not "
            "installed): pip install 'billingkit[postgres]'\n"
        ), command


def test_worker_log_level_from_the_environment_and_the_flag_wins(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lv.db'}"
    assert _cli("migrate", "--database-url", url).returncode == 0
    default = _cli("worker", "--once", "--database-url", url)
    assert "event=billing_run status=completed subscriptions=0" in default.stderr
    quiet = _cli_env("worker", "--once", "--database-url", url, BILLINGKIT_LOG_LEVEL="warning")
    assert (quiet.returncode, quiet.stderr) == (0, "")
    flag = _cli_env(
        "worker", "--once", "--database-url", url, "--log-level", "info", BILLINGKIT_LOG_LEVEL="error"
    )
    assert "event=billing_run" in flag.stderr


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("BILLINGKIT_LOG_LEVEL", "loud", "must be one of debug, info, warning, error, critical"),
        ("BILLINGKIT_WORKER_BATCH_SIZE", "0", "must be at least 1"),
        ("BILLINGKIT_WORKER_INTERVAL", "-1", "must be positive"),
        ("BILLINGKIT_INVOICE_FINALIZATION_DELAY", "-5", "must be seconds, at least 0"),
    ],
)
def test_a_bad_variable_is_named_in_a_one_line_error(
    tmp_path: Path, variable: str, value: str, message: str
) -> None:
    done = _cli_env(
        "worker", "--once", "--database-url", f"sqlite:///{tmp_path / 'v.db'}", **{variable: value}
    )
    assert done.returncode == 2
    assert done.stderr == f"error: {variable}={value!r}: {message}\n"


def test_worker_settings_come_from_flags_then_variables_then_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = build_parser()
    for name in ("BILLINGKIT_WORKER_INTERVAL", "BILLINGKIT_WORKER_BATCH_SIZE", "BILLINGKIT_TOKEN_SECRET"):
        monkeypatch.delenv(name, raising=False)

    def worker_settings(*argv: str) -> tuple[float, int]:
        settings = _settings(parser.parse_args(argv))
        return settings.worker_interval, settings.run_batch_size

    assert worker_settings("worker") == (60.0, 500)
    monkeypatch.setenv("BILLINGKIT_WORKER_INTERVAL", "2.5")
    monkeypatch.setenv("BILLINGKIT_WORKER_BATCH_SIZE", "7")
    assert worker_settings("serve") == (2.5, 7)
    assert worker_settings("worker", "--interval", "9", "--batch-size", "3") == (9.0, 3)
    # The token secret travels in the same settings; commands that run no worker ignore its variables.
    monkeypatch.setenv("BILLINGKIT_TOKEN_SECRET", "s3cret")
    monkeypatch.setenv("BILLINGKIT_WORKER_INTERVAL", "-1")
    migrate = _settings(parser.parse_args(["migrate"]))
    assert (migrate.token_secret, migrate.worker_interval) == (b"s3cret", 60.0)


def test_the_invoice_finalization_delay_comes_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = build_parser()
    monkeypatch.delenv("BILLINGKIT_INVOICE_FINALIZATION_DELAY", raising=False)
    assert _settings(parser.parse_args(["worker"])).invoice_finalization_delay == timedelta(0)
    monkeypatch.setenv("BILLINGKIT_INVOICE_FINALIZATION_DELAY", "7200")
    assert _settings(parser.parse_args(["serve"])).invoice_finalization_delay == timedelta(hours=2)


def test_the_webhook_settings_come_from_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = build_parser()
    monkeypatch.setenv("BILLINGKIT_WEBHOOK_SECRET_KEY", "a-key")
    monkeypatch.setenv("BILLINGKIT_WEBHOOK_INTERVAL", "0.5")
    monkeypatch.setenv("BILLINGKIT_WEBHOOK_CONCURRENCY", "8")
    monkeypatch.setenv("BILLINGKIT_WEBHOOK_MAX_ATTEMPTS", "3")
    monkeypatch.setenv("BILLINGKIT_WEBHOOK_RETRY_BASE", "2")
    monkeypatch.setenv("BILLINGKIT_WEBHOOK_DISABLE_AFTER", "never")
    served = _settings(parser.parse_args(["serve"]))
    assert served.webhook_secret_key == "a-key" and "a-key" not in repr(served)
    assert (served.webhook_interval, served.webhook_concurrency, served.webhook_max_attempts) == (0.5, 8, 3)
    assert (served.webhook_retry_base, served.webhook_disable_after) == (timedelta(seconds=2), None)
    # The key is read by every command (migrate too); the dispatcher's settings only by serve and worker.
    migrate = _settings(parser.parse_args(["migrate"]))
    assert (migrate.webhook_secret_key, migrate.webhook_interval) == ("a-key", 1.0)


def test_a_bad_flag_is_an_argparse_error() -> None:
    done = _cli("worker", "--batch-size", "0")
    assert done.returncode == 2
    assert "argument --batch-size: '0': must be at least 1" in done.stderr


def test_half_a_razorpay_key_pair_stops_the_command_with_one_line(tmp_path: Path) -> None:
    done = _cli_env(
        "worker",
        "--once",
        "--database-url",
        f"sqlite:///{tmp_path / 'r.db'}",
        BILLINGKIT_RAZORPAY_KEY_ID="rzp_test_1",
        BILLINGKIT_RAZORPAY_KEY_SECRET="",
    )
    assert done.returncode == 1
    assert done.stderr == (
        "error: configuration_error: Razorpay needs both API key variables: "
        "BILLINGKIT_RAZORPAY_KEY_SECRET is not set\n"
    )


def test_the_cli_pays_through_razorpay_when_both_keys_are_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from billingkit import RazorpayPaymentProvider
    from billingkit.cli import _billing

    monkeypatch.setenv("BILLINGKIT_RAZORPAY_KEY_ID", "rzp_test_1")
    monkeypatch.setenv("BILLINGKIT_RAZORPAY_KEY_SECRET", "s3cret")
    monkeypatch.setenv("BILLINGKIT_RAZORPAY_BASE_URL", "http://127.0.0.1:9")
    billing = _billing(
        build_parser().parse_args(["migrate", "--database-url", f"sqlite:///{tmp_path / 'p.db'}"])
    )
    provider = billing.providers.payment_provider
    assert isinstance(provider, RazorpayPaymentProvider)
    assert provider.api.base_url == "http://127.0.0.1:9"
    billing.close()
