"""Two billing runners on one database at once bill every period exactly once.

Each runner is its own ``Billing`` on its own ``SqlStorage`` (its own engine and connection pool),
as two processes would be; they share the clock. PostgreSQL splits the work with
``FOR UPDATE SKIP LOCKED``; SQLite serialises the writers (``BEGIN IMMEDIATE``).

The PostgreSQL tests skip when the server is unreachable (see ``tests/conftest.py``).
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.invoices import Invoice
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.services import due_work
from billingkit.services.billing_runs import RunReport
from billingkit.storage.sql import SqlStorage
from tests.conftest import make_storage

SUBSCRIPTIONS = 60
BATCH = 7
FIRST_START = datetime(2024, 1, 1, tzinfo=UTC)
STEP = timedelta(hours=11)  # the last subscription starts on 28 Jan 01:00
# Past two period ends of every subscription (the last: 28 Feb 01:00 and 28 Mar 01:00), before the
# third (the earliest: 1 Apr 00:00). Renewal notices are off, so only period ends fall due.
RUN_AT = datetime(2024, 3, 28, 12, tzinfo=UTC)


def add_months(instant: datetime, months: int) -> datetime:
    return instant.replace(month=instant.month + months)  # days <= 28, same year


@dataclass
class Fixture:
    clock: TestClock
    first: Billing
    second: Billing
    s: Scoped
    subs: list[tuple[Subscription, datetime, int]]  # (subscription, start, its index)


def populate(storage: SqlStorage) -> Fixture:
    clock = TestClock(FIRST_START)
    first = Billing(storage, clock, renewal_notice=None)
    setup = first.bootstrap()
    s = first.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    plan = s.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "20",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            },
            {
                "type": "USAGE",
                "billing_model": "FLAT_FEE",
                "amount": "0.1",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ARREAR",
                "meter_id": meter.id,
            },
        ],
    )
    subs = []
    events: list[dict[str, Any]] = []
    for i in range(SUBSCRIPTIONS):
        start = clock.set(FIRST_START + i * STEP)
        customer = s.customers.create(external_id=f"c{i}", name=f"Customer {i}")
        sub = s.subscriptions.create(
            customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
        )
        subs.append((sub, start, i))
        # i % 4 calls in the first period, i % 3 in the second.
        for period, count in ((0, i % 4), (1, i % 3)):
            day = add_months(start, period) + timedelta(days=1)
            events += [
                {
                    "event_name": "api",
                    "external_customer_id": f"c{i}",
                    "timestamp": (day + timedelta(minutes=j)).isoformat(),
                    "event_id": f"e{i}-{period}-{j}",
                }
                for j in range(count)
            ]
    s.events.ingest_bulk(events)
    url = storage.engine.url.render_as_string(hide_password=False)
    second = Billing(SqlStorage.from_url(url, migrate=False), clock, renewal_notice=None)
    clock.set(RUN_AT)
    return Fixture(clock, first, second, s, subs)


@pytest.fixture
def slow_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each runner holds its claimed batch a little longer before committing, so the other runner
    meets locked rows and the two interleave instead of one doing everything."""
    real = due_work.HANDLERS["subscriptions"]  # the handler the runner calls per batch

    def slow(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        time.sleep(0.03)
        return result

    monkeypatch.setattr(due_work, "HANDLERS", {**due_work.HANDLERS, "subscriptions": slow})


@pytest.fixture
def postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    """An emptied PostgreSQL store (skips when the server is unreachable)."""
    store = make_storage("postgres", request, tmp_path)
    yield store
    store.close()


@pytest.fixture
def sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    store = make_storage("sqlite", request, tmp_path)
    yield store
    store.close()


def run_together(fx: Fixture, *, loop: bool) -> list[list[RunReport]]:
    """Both runners call ``run_due`` at the same moment (once, or until a call finds nothing due)."""
    barrier = threading.Barrier(2)

    def runner(billing: Billing) -> list[RunReport]:
        barrier.wait(timeout=30)
        reports = []
        while True:
            report = billing.run_due(batch_size=BATCH)
            reports.append(report)
            if not loop or report.subscription_count == 0:
                return reports

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(runner, b) for b in (fx.first, fx.second)]
        return [future.result(timeout=120) for future in futures]


def check(fx: Fixture, runs: list[list[RunReport]], *, ended: int, rounds: int) -> None:
    """Everything is billed once after ``ended`` period ends of every subscription; ``runs`` are
    the reports of the latest concurrent run (which issued every invoice of its month) and
    ``rounds`` the number of concurrent runs so far."""
    reports = [report for run in runs for report in run]
    assert all(report.failures == [] for report in reports)
    issued = [invoice for report in reports for invoice in report.invoices]

    stored = list(fx.s.invoices.list(limit=1000, skip_line_items=True).items)
    assert len(stored) == (1 + ended) * SUBSCRIPTIONS  # an opening invoice and one per period end
    # Exactly one invoice per (subscription, period, billing reason) ...
    keys = Counter(
        (inv.subscription_id, inv.period_start, inv.period_end, inv.billing_reason) for inv in stored
    )
    assert set(keys.values()) == {1}
    # ... and the runners together report exactly the invoices stored in their month, none twice.
    month = f"{fx.clock.now():%Y%m}"
    latest = [inv for inv in stored if (inv.invoice_number or "").startswith(f"INV-{month}-")]
    assert len(issued) == len(latest)
    assert sorted(inv.id for inv in issued) == sorted(inv.id for inv in latest)

    # Invoice numbers are unique and gap-free per month.
    numbers = [inv.invoice_number or "" for inv in stored]
    assert len(set(numbers)) == len(numbers)
    by_month: dict[str, list[int]] = defaultdict(list)
    for number in numbers:
        prefix, key, sequence = number.split("-")
        assert prefix == "INV"
        by_month[key].append(int(sequence))
    for key, sequences in by_month.items():
        assert sorted(sequences) == list(range(1, len(sequences) + 1)), key
    assert len(by_month["202401"]) == SUBSCRIPTIONS  # the opening invoices

    subs = {sub.id: sub for sub in fx.s.subscriptions.list(limit=1000).items}
    invoices_of: dict[str | None, list[Invoice]] = defaultdict(list)
    for inv in stored:
        invoices_of[inv.subscription_id].append(inv)
    for sub, start, i in fx.subs:
        now = subs[sub.id]
        assert now.subscription_status is SubscriptionStatus.ACTIVE
        # Created at version 1, then exactly one update per concurrent run (each found it due).
        assert now.version == 1 + rounds
        assert now.billing_sequence == 1 + ended
        current = (add_months(start, ended), add_months(start, ended + 1))
        assert (now.current_period_start, now.current_period_end) == current
        assert now.next_run_at == current[1]
        mine = sorted(invoices_of[sub.id], key=lambda inv: inv.billing_sequence or 0)
        assert [inv.billing_sequence for inv in mine] == list(range(1, ended + 2))
        assert [(inv.period_start, inv.period_end) for inv in mine] == [
            (start, add_months(start, 1)),
            *[(add_months(start, k), add_months(start, k + 1)) for k in range(ended)],
        ]
        # Next period's fee 20.00 + the calls x 0.10: i % 4 in the first period, i % 3 in the second.
        usage = [i % 4, i % 3, 0][:ended]
        assert [inv.amount_due for inv in mine] == [
            Decimal("20.00"),
            *[Decimal("20.00") + Decimal("0.10") * calls for calls in usage],
        ]


@pytest.mark.postgres
def test_two_runners_on_postgres_bill_each_period_once(postgres: SqlStorage, slow_batches: None) -> None:
    fx = populate(postgres)
    try:
        # Two periods have ended for every subscription; each runner calls run_due once.
        runs = run_together(fx, loop=False)
        check(fx, runs, ended=2, rounds=1)
        # Both runners took part: they split the batches instead of queueing behind each other.
        assert all(run[0].invoices for run in runs), [len(run[0].invoices) for run in runs]
        assert fx.first.run_due().invoices == []
        assert fx.second.run_due().invoices == []

        # A month later: both call run_due again and again until a call finds nothing due.
        fx.clock.set(add_months(RUN_AT, 1))
        runs = run_together(fx, loop=True)
        check(fx, runs, ended=3, rounds=2)
        assert all(run[-1].subscription_count == 0 for run in runs)
    finally:
        fx.second.close()


def test_two_runners_on_one_sqlite_file_bill_each_period_once(sqlite: SqlStorage) -> None:
    fx = populate(sqlite)
    try:
        runs = run_together(fx, loop=True)
        check(fx, runs, ended=2, rounds=1)
        assert all(run[-1].subscription_count == 0 for run in runs)
    finally:
        fx.second.close()
