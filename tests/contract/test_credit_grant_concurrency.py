"""Two runners on one database at once grant each credit grant period exactly once.

Each runner is its own ``Billing`` on its own ``SqlStorage``, as two processes would be; they share
the clock. PostgreSQL splits the claimed credit grant applications with ``FOR UPDATE SKIP
LOCKED``; SQLite serialises the writers. The PostgreSQL test skips when the server is unreachable.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from billingkit import Billing, TestClock
from billingkit.domain.credit_grant_applications import ApplicationStatus
from billingkit.domain.queries import ListQuery
from billingkit.services import due_work
from billingkit.storage.sql import SqlStorage
from tests.conftest import make_storage

SUBSCRIPTIONS = 24
BATCH = 5
FIRST_START = datetime(2024, 1, 1, tzinfo=UTC)
STEP = timedelta(hours=11)  # the last subscription starts on 11 Jan 13:00
RUN_AT = datetime(2024, 3, 20, tzinfo=UTC)  # the February and March grants of everyone are due


def populate(storage: SqlStorage) -> tuple[TestClock, Billing, Billing, Any]:
    clock = TestClock(FIRST_START)
    first = Billing(storage, clock, renewal_notice=None)
    setup = first.bootstrap()
    s = first.scope(setup.tenant.id, setup.environments[0][0].id)
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
            }
        ],
        credit_grants=[{"name": "Monthly", "credits": "100", "cadence": "RECURRING", "period": "MONTHLY"}],
    )
    for i in range(SUBSCRIPTIONS):
        clock.set(FIRST_START + i * STEP)
        customer = s.customers.create(external_id=f"c{i}", name=f"Customer {i}")
        s.subscriptions.create(
            customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
        )
    url = storage.engine.url.render_as_string(hide_password=False)
    second = Billing(SqlStorage.from_url(url, migrate=False), clock, renewal_notice=None)
    clock.set(RUN_AT)
    return clock, first, second, s


@pytest.fixture
def slow_grants(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Each runner holds its claimed batch of applications a little before committing, so the
    other meets locked rows; counts the applications each thread was handed."""
    real = due_work.HANDLERS["credit_grant_applications"]
    handed: dict[str, int] = Counter()

    def slow(uow: Any, items: Any, run: Any) -> Any:
        result = real(uow, items, run)
        handed[threading.current_thread().name] += len(items)
        time.sleep(0.03)
        return result

    monkeypatch.setattr(due_work, "HANDLERS", {**due_work.HANDLERS, "credit_grant_applications": slow})
    return handed


def run_together(first: Billing, second: Billing) -> None:
    barrier = threading.Barrier(2)

    def runner(billing: Billing) -> None:
        barrier.wait(timeout=30)
        for _ in range(3):
            assert billing.run_due(batch_size=BATCH).failures == []

    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(runner, b) for b in (first, second)]:
            future.result(timeout=120)


def check(storage: SqlStorage, s: Any) -> None:
    with storage.unit_of_work(s.tenant_id, s.environment_id) as uow:
        applications = list(uow.credit_grant_applications.list(ListQuery(limit=1000)).items)
        rows = list(uow.wallet_transactions.list(ListQuery(limit=1000)).items)
        wallets = list(uow.wallets.list(ListQuery(limit=1000)).items)
    # Per subscription: January (at create), February and March applied, April pending.
    statuses = Counter((cga.subscription_id, cga.application_status) for cga in applications)
    subs = {cga.subscription_id for cga in applications}
    assert len(subs) == SUBSCRIPTIONS
    for sub_id in subs:
        assert statuses[(sub_id, ApplicationStatus.APPLIED)] == 3
        assert statuses[(sub_id, ApplicationStatus.PENDING)] == 1
    assert len(applications) == 4 * SUBSCRIPTIONS
    # One credit per applied application, each naming it; one wallet per customer holding 300.
    applied = {cga.id: cga for cga in applications if cga.application_status is ApplicationStatus.APPLIED}
    assert len(rows) == len(applied) == 3 * SUBSCRIPTIONS
    assert sorted(row.reference_id or "" for row in rows) == sorted(applied)
    assert {row.id for row in rows} == {cga.wallet_transaction_id for cga in applied.values()}
    assert len(wallets) == SUBSCRIPTIONS
    assert {wallet.credit_balance for wallet in wallets} == {Decimal(300)}


@pytest.fixture
def postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    store = make_storage("postgres", request, tmp_path)
    yield store
    store.close()


@pytest.fixture
def sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    store = make_storage("sqlite", request, tmp_path)
    yield store
    store.close()


@pytest.mark.postgres
def test_two_runners_on_postgres_grant_each_period_once(
    postgres: SqlStorage, slow_grants: dict[str, int]
) -> None:
    _, first, second, s = populate(postgres)
    try:
        run_together(first, second)
        check(postgres, s)
        # Both runners were handed applications: they split the work.
        assert len([name for name, count in slow_grants.items() if count]) == 2, slow_grants
    finally:
        second.close()


def test_two_runners_on_one_sqlite_file_grant_each_period_once(sqlite: SqlStorage) -> None:
    _, first, second, s = populate(sqlite)
    try:
        run_together(first, second)
        check(sqlite, s)
    finally:
        second.close()
