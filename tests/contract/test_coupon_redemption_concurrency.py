"""A coupon with one redemption left, attached by two subscription creates at once: exactly one
succeeds (spec rule 1).

Each create runs in its own process-like stack: its own ``Billing`` on its own ``SqlStorage`` (its
own engine and connection pool) behind its own HTTP client, sharing one database and clock. The
redemption counter is a row-locked upsert, so the second transaction queues on it until the first
commits and then sees no redemption left. The first holds its lock a little longer (a short sleep
after taking the counter) so the two always overlap.
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

import billingkit.services.coupon_associations as coupon_associations
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
def slow_redemption(monkeypatch: pytest.MonkeyPatch) -> None:
    real = coupon_associations.redeem

    def slow(*args: Any, **kwargs: Any) -> Any:
        taken = real(*args, **kwargs)
        time.sleep(0.2)  # holding the counter's lock: the other create must queue behind it
        return taken

    monkeypatch.setattr(coupon_associations, "redeem", slow)


def test_last_redemption_goes_to_exactly_one_of_two_concurrent_creates(
    store: SqlStorage, slow_redemption: None
) -> None:
    clock = TestClock(datetime(2026, 5, 1, 9, 30, tzinfo=UTC))
    first = Billing(store, clock)
    setup = first.bootstrap()
    s = first.scope(setup.tenant.id, setup.environments[0][0].id)
    plan = s.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "100",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    coupon = s.coupons.create(
        name="Last one",
        coupon_code="LAST",
        type="percentage",
        cadence="forever",
        percentage_off="50",
        max_redemptions=1,
    )
    customers = [s.customers.create(external_id=f"c{i}", name=f"C{i}") for i in range(2)]
    url = store.engine.url.render_as_string(hide_password=False)
    second_store = SqlStorage.from_url(url, migrate=False)
    key = {"x-api-key": setup.environments[0][1].api_key}
    clients = [
        TestClient(create_app(first), raise_server_exceptions=False),
        TestClient(create_app(Billing(second_store, clock)), raise_server_exceptions=False),
    ]
    barrier = threading.Barrier(2)

    def create(index: int) -> httpx.Response:
        body = {
            "customer_id": customers[index].id,
            "plan_id": plan.id,
            "currency": "usd",
            "billing_period": "MONTHLY",
            "subscription_coupons": [{"coupon_code": "LAST"}],
        }
        barrier.wait(timeout=30)
        return clients[index].post("/v1/subscriptions", json=body, headers=key)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            responses = list(pool.map(create, range(2)))
    finally:
        second_store.close()
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201, 400], [r.text for r in responses]
    refused = next(r for r in responses if r.status_code == 400).json()
    assert refused["code"] == "validation_error"
    assert refused["details"]["field"] == "subscription_coupons[0].coupon_code"
    assert s.coupons.get(coupon.id).total_redemptions == 1
    (association,) = [view.association for view in s.coupons.associations().items]
    winner = next(r for r in responses if r.status_code == 201).json()
    assert association.subscription_id == winner["id"]
    assert s.subscriptions.list().total == 1
