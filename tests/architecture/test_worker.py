"""The background runner: ticks bill due work, failures are survived, stop ends the thread."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from billingkit import Billing, TestClock, Worker
from billingkit.storage.memory import MemoryStorage
from tests.stories import weekly_subscription

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _weekly(billing: Billing) -> str:
    return weekly_subscription(billing, "w-1")[1].id


def test_a_started_worker_bills_due_periods_and_stops() -> None:
    clock = TestClock(T0)
    billing = Billing(clock=clock, renewal_notice=None)
    _weekly(billing)
    clock.advance(timedelta(weeks=2, hours=1))
    worker = Worker(billing, interval=0.01).start()
    deadline = time.monotonic() + 10
    while worker.runs < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.stop()
    assert worker.runs >= 2
    # Two weekly periods ended: two cycle invoices; the later ticks found nothing more to do.
    with billing.storage.unit_of_work() as uow:
        assert uow.claim_due("subscriptions", clock.now(), 10) == []
    assert worker.last_report is not None
    assert (worker.last_report.invoices, worker.last_report.invoice_count) == ([], 0)


def test_a_failing_run_is_logged_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(MemoryStorage):
        def unit_of_work(self, tenant_id=None, environment_id=None):  # type: ignore[no-untyped-def]
            raise RuntimeError("database down")

    worker = Worker(Billing(Broken(), TestClock(T0)), interval=1)
    assert worker.tick() is None
    assert worker.runs == 0
    assert "billing run failed" in caplog.text


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="interval"):
        Worker(Billing(), interval=0)
