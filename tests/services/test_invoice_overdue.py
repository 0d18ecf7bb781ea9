"""``invoice.payment.overdue`` comes from the due-work runner, on every store: once per invoice
that is FINALIZED with something remaining when its due date passes, never again on later runs,
never for paid, voided or draft invoices, and never from a read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.invoices import InvoiceStatus, PaymentStatus
from billingkit.domain.notifications import NotificationEvent
from billingkit.services.invoice_overdue import is_overdue
from billingkit.testing.contracts.storage import sample

START = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
DUE = datetime(2026, 5, 16, 9, 30, tzinfo=UTC)


@pytest.fixture
def world(storage: Any) -> tuple[TestClock, Billing, Scoped]:
    clock = TestClock(START)
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    return clock, billing, billing.scope(setup.tenant.id, setup.environments[0][0].id)


def _invoice(env: Scoped, customer_id: str, status: str = "FINALIZED", **fields: Any) -> Any:
    return env.invoices.create(
        customer_id=customer_id,
        currency="usd",
        line_items=[{"amount": "100.00", "quantity": "1", "display_name": "Setup", "price_id": "p1"}],
        subtotal="100.00",
        total="100.00",
        amount_due="100.00",
        invoice_status=status,
        **{"due_date": DUE, **fields},
    )


def _overdue(env: Scoped) -> list[NotificationEvent]:
    return env.notifications.list(event_type="invoice.payment.overdue", limit=100).items


def test_an_unpaid_invoice_is_announced_once_when_its_due_date_passes(
    world: tuple[TestClock, Billing, Scoped],
) -> None:
    clock, billing, env = world
    customer = env.customers.create(external_id="c1", name="Ada")
    unpaid = _invoice(env, customer.id)
    part_paid = _invoice(env, customer.id)
    env.invoices.update_payment(part_paid.id, payment_status="PENDING", amount="40.00")
    paid = _invoice(env, customer.id)
    env.invoices.update_payment(paid.id, payment_status="SUCCEEDED")
    voided = _invoice(env, customer.id)
    env.invoices.void(voided.id)
    draft = _invoice(env, customer.id, status="DRAFT")
    later = _invoice(env, customer.id, due_date=DUE + timedelta(days=10))

    clock.set(DUE)  # due now, not yet past
    assert billing.run_due().notification_count == 0
    assert _overdue(env) == []

    clock.set(DUE + timedelta(seconds=1))
    # Reading the invoices (as the reference's summary read did) announces nothing.
    env.invoices.list(customer_id=customer.id)
    assert _overdue(env) == []
    report = billing.run_due()
    assert report.notification_count == 2
    announced = sorted(_overdue(env), key=lambda e: e.entity_id)
    assert [e.entity_id for e in announced] == sorted([unpaid.id, part_paid.id])
    by_id = {e.entity_id: e.payload for e in announced}
    body = by_id[part_paid.id]
    assert set(body) == {"event_type", "invoice"}
    assert body["event_type"] == "invoice.payment.overdue"
    invoice = body["invoice"]
    assert (invoice["id"], invoice["invoice_status"], invoice["payment_status"]) == (
        part_paid.id,
        "FINALIZED",
        PaymentStatus.PENDING.value,
    )
    # 100.00 due - 40.00 paid = 60.00 remaining; the marker stays off the wire.
    assert (invoice["amount_remaining"], invoice["due_date"]) == ("60.00", "2026-05-16T09:30:00Z")
    assert "overdue_notified_at" not in invoice
    assert env.invoices.get(unpaid.id).overdue_notified_at == DUE + timedelta(seconds=1)

    clock.set(DUE + timedelta(days=3))  # later runs: nothing new
    assert billing.run_due().notification_count == 0
    billing.run_due()
    assert len(_overdue(env)) == 2

    clock.set(DUE + timedelta(days=11))  # the later invoice passes its own due date
    billing.run_due()
    assert sorted(e.entity_id for e in _overdue(env)) == sorted([unpaid.id, part_paid.id, later.id])
    for never in (paid, voided, draft):
        assert env.invoices.get(never.id).overdue_notified_at is None


def test_an_invoice_paid_before_its_due_date_is_never_announced(
    world: tuple[TestClock, Billing, Scoped],
) -> None:
    clock, billing, env = world
    customer = env.customers.create(external_id="c1", name="Ada")
    invoice = _invoice(env, customer.id)
    clock.set(DUE - timedelta(hours=1))
    env.invoices.update_payment(invoice.id, payment_status="SUCCEEDED")
    clock.set(DUE + timedelta(days=1))
    billing.run_due()
    assert _overdue(env) == []


def test_in_process_subscribers_receive_the_announcement_after_commit(
    world: tuple[TestClock, Billing, Scoped],
) -> None:
    clock, billing, env = world
    received: list[dict[str, Any]] = []
    billing.subscribe("invoice.payment.overdue", lambda event: received.append(event.payload))
    customer = env.customers.create(external_id="c1", name="Ada")
    invoice = _invoice(env, customer.id)
    clock.set(DUE + timedelta(minutes=1))
    billing.run_due()
    assert [(p["event_type"], p["invoice"]["id"]) for p in received] == [
        ("invoice.payment.overdue", invoice.id)
    ]


def test_the_rule() -> None:
    """The pure condition, field by field."""
    base = sample(
        "invoices",
        "t",
        "e",
        amount_due=Decimal("10"),
        amount_remaining=Decimal("10"),
        invoice_status=InvoiceStatus.FINALIZED,
        due_date=DUE,
    )
    after = DUE + timedelta(seconds=1)
    assert is_overdue(base, after)
    assert not is_overdue(base, DUE)
    assert not is_overdue(base.model_copy(update={"amount_remaining": Decimal("0")}), after)
    assert not is_overdue(base.model_copy(update={"due_date": None}), after)
    assert not is_overdue(base.model_copy(update={"overdue_notified_at": after}), after)
    for status in ("DRAFT", "VOIDED", "SKIPPED"):
        assert not is_overdue(base.model_copy(update={"invoice_status": InvoiceStatus(status)}), after)
