"""What a host sees of the library's work: the billing-run log line and ``BillingObserver`` hooks."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from billingkit import Billing, TestClock
from billingkit.errors import InternalError
from billingkit.facade import BillingObserver
from billingkit.services.billing_runs import RunReport
from billingkit.services.events import IngestResult
from billingkit.storage.sql import SqlStorage
from tests.stories import weekly_subscription

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Recorder(BillingObserver):
    """A host's observer that keeps what it was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def events_ingested(self, result: IngestResult) -> None:
        self.calls.append(("events", (len(result.accepted_ids), len(result.duplicate_ids))))

    def invoices_issued(self, count: int) -> None:
        self.calls.append(("invoices", count))

    def billing_run(self, report: RunReport | None, *, seconds: float) -> None:
        assert seconds >= 0
        self.calls.append(("run", None if report is None else report.invoice_count))


def _weekly(billing: Billing) -> tuple[str, str]:
    setup, _ = weekly_subscription(billing, "o-1")
    return setup.tenant.id, setup.environments[0][0].id


def test_observer_hears_ingestion_invoices_and_runs_until_removed() -> None:
    clock = TestClock(T0)
    billing = Billing(clock=clock, renewal_notice=None)
    recorder = Recorder()
    remove = billing.observe(recorder)
    tenant, env = _weekly(billing)  # the opening invoice
    scoped = billing.scope(tenant, env)
    scoped.events.ingest_bulk(
        [{"event_id": i, "event_name": "calls", "external_customer_id": "o-1"} for i in ("a", "b", "a")]
    )
    scoped.events.ingest(event_id="b", event_name="calls", external_customer_id="o-1")
    clock.advance(timedelta(weeks=2, hours=1))
    billing.run_due()
    remove()
    billing.run_due()
    assert recorder.calls == [
        ("invoices", 1),
        ("events", (2, 1)),
        ("events", (0, 1)),
        ("invoices", 2),
        ("run", 2),
    ]


def test_a_failing_observer_is_logged_and_billing_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(BillingObserver):
        def billing_run(self, report: RunReport | None, *, seconds: float) -> None:
            raise RuntimeError("observer bug")

    billing = Billing(clock=TestClock(T0))
    billing.observe(Broken())
    assert billing.run_due().subscription_count == 0
    assert "billing observer" in caplog.text and "observer bug" in caplog.text


def test_each_billing_run_logs_one_structured_line(caplog: pytest.LogCaptureFixture) -> None:
    clock = TestClock(T0)
    billing = Billing(clock=clock, renewal_notice=None)
    _weekly(billing)
    clock.advance(timedelta(weeks=2, hours=1))
    with caplog.at_level(logging.INFO, logger="billingkit.billing_run"):
        billing.run_due()
        billing.run_due()
    first, second = [r for r in caplog.records if r.name == "billingkit.billing_run"]
    fields = ("event", "status", "subscriptions", "invoices", "notifications", "failures")
    # Notifications: the two cycle invoices finalized, and invoice.payment.overdue for the two
    # invoices (opening and first cycle) due on 13 January and unpaid.
    assert [tuple(getattr(r, f) for f in fields) for r in (first, second)] == [
        ("billing_run", "completed", 1, 2, 4, 0),
        ("billing_run", "completed", 0, 0, 0, 0),
    ]
    assert first.levelno == logging.INFO and first.duration_ms >= 0
    assert first.getMessage() == (
        "event=billing_run status=completed subscriptions=1 invoices=2 notifications=4 failures=0 "
        f"duration_ms={first.duration_ms:.3f}"
    )


def test_a_failed_billing_run_logs_an_error_line_with_the_exception(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    billing = Billing(SqlStorage.from_url(f"sqlite:///{tmp_path / 'gone' / 'x.db'}", migrate=False))
    with pytest.raises(InternalError):
        billing.run_due()
    (record,) = [r for r in caplog.records if r.name == "billingkit.billing_run"]
    assert (record.levelno, record.status, record.error) == (logging.ERROR, "failed", "InternalError")
    assert record.exc_info is not None


def test_from_env_warns_when_no_token_secret_is_configured(caplog: pytest.LogCaptureFixture) -> None:
    Billing.from_env({}).close()
    assert [r.levelno for r in caplog.records if "BILLINGKIT_TOKEN_SECRET is not set" in r.getMessage()] == [
        logging.WARNING
    ]
    caplog.clear()
    Billing.from_env({"BILLINGKIT_TOKEN_SECRET": "s3cret"}).close()
    assert "BILLINGKIT_TOKEN_SECRET" not in caplog.text
