"""The same payment request sent twice at once records one payment and pays the invoice once
(spec rule 4).

Each request runs in its own process-like stack: its own ``Billing`` on its own ``SqlStorage`` (its
own engine and connection pool) behind its own HTTP client, sharing one database and clock. Both
derive the same key; the unique index on ``payments.idempotency_key`` makes the second insert wait
for the first transaction, then fail, and the loser answers the winner's payment. The first holds
its transaction open a little (a short sleep while collecting) so the two always overlap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

import billingkit.services.payments as payments
from billingkit import Billing, TestClock
from billingkit.http import create_app
from billingkit.storage.sql import SqlStorage
from tests.conftest import make_storage


@pytest.fixture(params=["postgres", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    storage = make_storage(request.param, request, tmp_path)
    yield storage
    storage.close()


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Slows collection down, and lists each look-up of a key (one per request, plus one for a
    request whose insert met the key stored by the other)."""
    real_collect, real_existing = payments.collect, payments._existing
    seen: list[str] = []

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)  # the payment row is inserted, its transaction still open
        return real_collect(*args, **kwargs)

    def existing(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[1])
        return real_existing(*args, **kwargs)

    monkeypatch.setattr(payments, "collect", slow)
    monkeypatch.setattr(payments, "_existing", existing)
    return seen


def test_two_identical_concurrent_requests_record_one_payment(store: SqlStorage, lookups: list[str]) -> None:
    clock = TestClock(datetime(2026, 5, 1, 9, 30, tzinfo=UTC))
    first = Billing(store, clock)
    setup = first.bootstrap()
    s = first.scope(setup.tenant.id, setup.environments[0][0].id)
    customer = s.customers.create(external_id="c1", name="Ada")
    invoice = s.invoices.create(
        customer_id=customer.id,
        currency="usd",
        line_items=[{"amount": "100.00", "quantity": "1", "display_name": "Service"}],
        subtotal="100.00",
        total="100.00",
        amount_due="100.00",
    )
    url = store.engine.url.render_as_string(hide_password=False)
    second_store = SqlStorage.from_url(url, migrate=False)
    key = {"x-api-key": setup.environments[0][1].api_key}
    clients = [
        TestClient(create_app(first), raise_server_exceptions=False),
        TestClient(create_app(Billing(second_store, clock)), raise_server_exceptions=False),
    ]
    barrier = threading.Barrier(2)
    body = {
        "amount": "60.00",
        "currency": "usd",
        "destination_id": invoice.id,
        "destination_type": "INVOICE",
        "payment_method_type": "OFFLINE",
    }

    def create(index: int) -> httpx.Response:
        barrier.wait(timeout=30)
        return clients[index].post("/v1/payments", json=body, headers=key)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            responses = list(pool.map(create, range(2)))
    finally:
        second_store.close()
    assert [r.status_code for r in responses] == [201, 201], [r.text for r in responses]
    ids = {r.json()["id"] for r in responses}
    assert len(ids) == 1
    assert s.payments.list(status=None).total == 1
    paid = s.invoices.get(invoice.id)
    # Paid once: 60.00 of 100.00.
    assert (paid.amount_paid, paid.amount_remaining, paid.version) == (
        invoice.amount_paid + 60,
        invoice.amount_due - 60,
        invoice.version + 1,
    )
    assert len(s.notifications.list(event_type="payment.created").items) == 1
    if store.engine.dialect.name == "postgresql":
        # Both looked the key up before either committed; the loser's insert met the unique key
        # and looked again (SQLite serialises the two transactions whole: two look-ups).
        assert len(lookups) == 3
