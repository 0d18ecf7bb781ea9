"""Two billing runners on one database at once issue each auto-invoice threshold invoice once.

As in ``test_billing_concurrency``: each runner is its own ``Billing`` on its own ``SqlStorage``;
PostgreSQL splits the claimed subscriptions with ``FOR UPDATE SKIP LOCKED``, SQLite serialises the
writers. The PostgreSQL test skips when the server is unreachable (see ``tests/conftest.py``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from billingkit import Billing, TestClock
from billingkit.domain.invoices import BillingReason
from billingkit.services.billing_runs import RunReport
from billingkit.storage.sql import SqlStorage
from tests.conftest import make_storage

SUBSCRIPTIONS = 30
START = datetime(2026, 5, 1, tzinfo=UTC)
RUN_AT = datetime(2026, 5, 10, tzinfo=UTC)


def _run(storage: SqlStorage) -> None:
    clock = TestClock(START)
    first = Billing(storage, clock, renewal_notice=None)
    setup = first.bootstrap()
    s = first.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    price = {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": "1",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter.id,
    }
    plan = s.plans.create(name="Metered", prices=[price])
    events: list[dict[str, Any]] = []
    for i in range(SUBSCRIPTIONS):
        customer = s.customers.create(external_id=f"c{i}", name=f"C{i}")
        s.subscriptions.create(
            customer_id=customer.id,
            plan_id=plan.id,
            currency="usd",
            billing_period="MONTHLY",
            auto_invoice_threshold="5",
        )
        # 5 + i % 3 calls at 1.00: every subscription reaches 5.00.
        events += [
            {
                "event_name": "api",
                "external_customer_id": f"c{i}",
                "timestamp": (START + timedelta(days=2, minutes=j)).isoformat(),
                "event_id": f"e{i}-{j}",
            }
            for j in range(5 + i % 3)
        ]
    s.events.ingest_bulk(events)
    url = storage.engine.url.render_as_string(hide_password=False)
    second = Billing(SqlStorage.from_url(url, migrate=False), clock, renewal_notice=None)
    clock.set(RUN_AT)
    barrier = threading.Barrier(2)

    def runner(billing: Billing) -> list[RunReport]:
        barrier.wait(timeout=30)
        reports = []
        while True:
            reports.append(billing.run_due(batch_size=4))
            if reports[-1].subscription_count == 0:
                return reports

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [f.result(timeout=120) for f in [pool.submit(runner, b) for b in (first, second)]]
    reports = [report for run in runs for report in run]
    assert all(report.failures == [] for report in reports)
    issued = [invoice for report in reports for invoice in report.invoices]
    stored = [
        inv
        for inv in s.invoices.list(limit=1000).items
        if inv.billing_reason is BillingReason.AUTO_INVOICE_THRESHOLD
    ]
    assert len(stored) == len(issued) == SUBSCRIPTIONS
    assert set(Counter(inv.subscription_id for inv in stored).values()) == {1}
    assert sorted(inv.id for inv in issued) == sorted(inv.id for inv in stored)
    assert sorted(int((inv.invoice_number or "").split("-")[2]) for inv in stored) == list(
        range(1, SUBSCRIPTIONS + 1)
    )
    assert sum(inv.amount_due for inv in stored) == Decimal(sum(5 + i % 3 for i in range(SUBSCRIPTIONS)))
    for sub in s.subscriptions.list(limit=1000).items:
        assert (sub.current_period_start, sub.billing_sequence, sub.version) == (RUN_AT, 1, 2)
    second.storage.close()


@pytest.fixture
def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    store = make_storage(request.param, request, tmp_path)
    yield store
    store.close()


@pytest.mark.parametrize("sql_store", ["sqlite", "postgres"], indirect=True)
def test_two_runners_issue_each_threshold_invoice_once(sql_store: SqlStorage) -> None:
    _run(sql_store)
