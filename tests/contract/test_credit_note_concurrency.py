"""A 100.00 paid invoice and two concurrent REFUND credit notes of 70.00 each: exactly one is
finalized, the other refused (30.00 is left to refund), and the customer's wallet holds
70.00 (spec rule 3). Twenty rounds, each on a new customer and invoice.

Each note is created (and finalized, ``process_credit_note`` defaulting to true) by its own stack:
its own ``Billing`` on its own ``SqlStorage`` (own engine and pool) behind its own HTTP client,
sharing one database and clock. Finalization saves the invoice at the version it read before the
refund moves; the first finalize holds that row a little longer (a short sleep while it pays the
wallet), so the second queues on it, finds the invoice changed (``VersionConflict``), and the
library reruns it in a new transaction, where the recheck refuses it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

import billingkit.services.credit_notes as credit_notes
from billingkit import Billing, TestClock
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.http import create_app
from billingkit.storage.sql import SqlStorage
from tests.conftest import make_storage

ROUNDS = 20


@pytest.fixture(params=["postgres", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    storage = make_storage(request.param, request, tmp_path)
    yield storage
    storage.close()


@pytest.fixture
def finalizations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Slows the refund while the invoice row is held, and records each finalization attempt."""
    attempts: list[str] = []
    real_finalize, real_refund = credit_notes._finalize, credit_notes._refund_to_wallet

    def counted(uow: Any, ctx: Any, note: Any) -> Any:
        attempts.append(note.invoice_id)
        return real_finalize(uow, ctx, note)

    def slow(*args: Any, **kwargs: Any) -> None:
        real_refund(*args, **kwargs)
        time.sleep(0.1)  # holding the invoice's row: the other finalize must queue behind it

    monkeypatch.setattr(credit_notes, "_finalize", counted)
    monkeypatch.setattr(credit_notes, "_refund_to_wallet", slow)
    return attempts


def test_two_concurrent_refunds_never_refund_more_than_was_paid(
    store: SqlStorage, finalizations: list[str]
) -> None:
    clock = TestClock(datetime(2026, 5, 1, 9, 30, tzinfo=UTC))
    first = Billing(store, clock)
    setup = first.bootstrap()
    s = first.scope(setup.tenant.id, setup.environments[0][0].id)
    url = store.engine.url.render_as_string(hide_password=False)
    second_store = SqlStorage.from_url(url, migrate=False)
    key = {"x-api-key": setup.environments[0][1].api_key}
    clients = [
        TestClient(create_app(first), raise_server_exceptions=False),
        TestClient(create_app(Billing(second_store, clock)), raise_server_exceptions=False),
    ]
    conflicts = 0
    try:
        for round_ in range(ROUNDS):
            customer = s.customers.create(external_id=f"c{round_}", name=f"C{round_}")
            invoice = s.invoices.create(
                customer_id=customer.id,
                currency="usd",
                line_items=[{"amount": "100.00", "quantity": "1", "display_name": "Plan", "price_id": "p"}],
                subtotal="100.00",
                total="100.00",
                amount_due="100.00",
            )
            s.invoices.update_payment(invoice.id, payment_status="SUCCEEDED")
            barrier = threading.Barrier(2)

            def refund(
                index: int, invoice: Any = invoice, barrier: threading.Barrier = barrier
            ) -> httpx.Response:
                body = {
                    "invoice_id": invoice.id,
                    "reason": "DUPLICATE",
                    "idempotency_key": f"refund-{invoice.id}-{index}",  # two distinct requests
                    "line_items": [{"invoice_line_item_id": invoice.line_items[0].id, "amount": "70.00"}],
                }
                barrier.wait(timeout=30)
                return clients[index].post("/v1/creditnotes", json=body, headers=key)

            before = len(finalizations)
            with ThreadPoolExecutor(max_workers=2) as pool:
                responses = list(pool.map(refund, range(2)))
            # The winner finalizes once; a loser that reached finalization (its create's check passed
            # on the invoice as it was) was refused only by the rerun after its conflict.
            conflicts += len(finalizations) - before - 1

            statuses = sorted(response.status_code for response in responses)
            assert statuses == [201, 400], [r.text for r in responses]
            refused = next(r for r in responses if r.status_code == 400).json()
            assert refused["code"] == "invalid_operation"
            # Either check refuses it: the invoice's refundable amount, or (on PostgreSQL, whose
            # reads in one transaction can straddle the winner's commit: the invoice read before,
            # the finalized notes after) what is still creditable on the line. Both say 30.00.
            assert any(
                why in refused["message"]
                for why in ("exceeds the refundable amount", "still creditable on it")
            ), refused["message"]
            assert "30.00 usd" in refused["message"]
            winner = next(r for r in responses if r.status_code == 201).json()
            assert (winner["credit_note_status"], winner["total_amount"]) == ("FINALIZED", "70.00")

            after = s.invoices.get(invoice.id)
            assert (after.refunded_amount, after.payment_status.value) == (
                Decimal("70.00"),
                "PARTIALLY_REFUNDED",
            )
            notes = s.credit_notes.list(invoice_id=invoice.id)
            assert [n.id for n in notes.items] == [winner["id"]]  # the refused one wrote nothing
            with store.unit_of_work(s.tenant_id, s.environment_id) as uow:
                (wallet,) = uow.wallets.list(
                    ListQuery(filters=(Filter("customer_id", Op.EQ, customer.id),))
                ).items
                rows = uow.wallet_transactions.list(
                    ListQuery(filters=(Filter("wallet_id", Op.EQ, wallet.id),), status=None)
                ).items
            assert wallet.credit_balance == Decimal("70.00")
            assert [(row.credit_amount, row.idempotency_key) for row in rows] == [
                (Decimal("70.00"), f"credit_note|{winner['id']}")
            ]
    finally:
        second_store.close()
    if store.engine.dialect.name == "postgresql":
        # The race was real: some second finalize queued on the invoice and was rerun.
        assert conflicts >= 1
