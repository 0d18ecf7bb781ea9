"""Auto-invoice thresholds end to end, through the library, on every store (memory, SQLite,
PostgreSQL): usage crossing ``auto_invoice_threshold`` mid-period is invoiced by the worker
(``AUTO_INVOICE_THRESHOLD``), the period start moves, and the period-end invoice bills the rest.

Prices: 0.10 per API call, billed in arrears; threshold 50.00. Amounts are exact, with the
arithmetic beside them; instants are UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, Settings, TestClock
from billingkit.domain.invoices import BillingReason, Invoice, InvoiceStatus
from billingkit.domain.subscriptions import Subscription
from billingkit.services.billing_runs import RunReport

D = Decimal


def at(month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


@dataclass
class World:
    clock: TestClock
    billing: Billing
    s: Scoped
    customer_id: str
    plan_id: str

    def run(self, when: datetime) -> RunReport:
        self.clock.set(when)
        return self.billing.run_due()

    def calls(self, count: int, start: datetime, prefix: str) -> None:
        """``count`` API calls, one a second from ``start`` (ingested with the clock there)."""
        self.clock.set(max(self.clock.now(), start))
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": "c1",
                    "timestamp": (start + timedelta(seconds=i)).isoformat(),
                    "event_id": f"{prefix}{i}",
                }
                for i in range(count)
            ]
        )

    def invoices(self, sub: Subscription) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def subscribe(self, **fields: Any) -> Subscription:
        return self.s.subscriptions.create(
            customer_id=self.customer_id,
            plan_id=self.plan_id,
            currency="usd",
            billing_period="MONTHLY",
            **fields,
        )


@pytest.fixture
def world(storage: Any) -> Callable[..., World]:
    def make(settings: Settings | None = None) -> World:
        clock = TestClock(at(5, 1))
        billing = Billing(storage, clock, settings=settings)
        setup = billing.bootstrap()
        s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
        meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
        customer = s.customers.create(external_id="c1", name="Ada")
        price = {
            "type": "USAGE",
            "billing_model": "FLAT_FEE",
            "amount": "0.10",
            "currency": "usd",
            "billing_period": "MONTHLY",
            "invoice_cadence": "ARREAR",
            "meter_id": meter.id,
            "display_name": "API calls",
        }
        plan = s.plans.create(name="Metered", prices=[price])
        return World(clock, billing, s, customer.id, plan.id)

    return make


def test_threshold_crossed_mid_period_is_invoiced_and_the_period_end_bills_the_rest(
    world: Callable[..., World],
) -> None:
    w = world()
    sub = w.subscribe(auto_invoice_threshold="50.00")
    assert sub.auto_invoice_threshold == D("50.00")
    assert (sub.current_period_start, sub.current_period_end) == (at(5, 1), at(6, 1))
    assert w.invoices(sub) == []  # usage only: nothing billed in advance

    # 300 calls = 30.00 < 50.00: the check at 3 May noon invoices nothing.
    w.calls(300, at(5, 2), "a")
    assert w.run(at(5, 3, 12)).invoices == []
    assert w.s.subscriptions.get(sub.id).current_period_start == at(5, 1)

    # 250 more: 550 calls = 55.00 >= 50.00.
    w.calls(250, at(5, 9), "b")
    report = w.run(at(5, 10, 12))
    (threshold,) = report.invoices
    assert threshold.billing_reason is BillingReason.AUTO_INVOICE_THRESHOLD
    assert threshold.invoice_status is InvoiceStatus.FINALIZED
    assert (threshold.period_start, threshold.period_end) == (at(5, 1), at(5, 10, 12))
    (line,) = threshold.line_items
    assert (line.quantity, line.amount) == (D(550), D("55.00"))  # 550 x 0.10
    assert threshold.subtotal == threshold.amount_due == D("55.00")
    assert threshold.billing_sequence == 1
    moved = w.s.subscriptions.get(sub.id)
    assert (moved.current_period_start, moved.current_period_end) == (at(5, 10, 12), at(6, 1))

    # Running again at the same instant finds nothing new (no second invoice for the window).
    assert w.run(at(5, 10, 12)).invoices == []

    # 120 calls after the cut (12.00 < 50.00): the period-end invoice covers [10 May 12:00, 1 Jun)
    # only, so the 550 calls before the cut are not billed twice.
    w.calls(120, at(5, 20), "c")
    report = w.run(at(6, 1))
    (closing,) = report.invoices
    assert closing.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
    assert (closing.period_start, closing.period_end) == (at(5, 10, 12), at(6, 1))
    (line,) = closing.line_items
    assert (line.quantity, line.amount) == (D(120), D("12.00"))  # 120 x 0.10
    assert closing.amount_due == D("12.00")
    # The whole month: 55.00 + 12.00 = 67.00 = 670 calls x 0.10.
    assert sum(inv.amount_due for inv in w.invoices(sub)) == D("67.00")
    after = w.s.subscriptions.get(sub.id)
    assert (after.current_period_start, after.current_period_end) == (at(6, 1), at(7, 1))
    assert [inv.billing_sequence for inv in w.invoices(sub)] == [1, 2]


def test_usage_exactly_at_the_threshold_is_invoiced_and_checks_follow_the_interval(
    world: Callable[..., World],
) -> None:
    w = world(Settings(auto_invoice_check_interval=timedelta(hours=1)))
    sub = w.subscribe(auto_invoice_threshold="50")
    assert w.s.subscriptions.get(sub.id).next_run_at == at(5, 1, 1)  # first check an hour in
    w.calls(500, at(5, 4), "a")  # 500 x 0.10 = 50.00: reaches 50
    w.clock.set(at(5, 4, 1))
    # The check is due (1 May 01:00 passed long ago): one invoice, the next check an hour later.
    (invoice,) = w.run(at(5, 4, 1)).invoices
    assert invoice.amount_due == D("50.00")
    assert w.s.subscriptions.get(sub.id).next_run_at == at(5, 4, 2)
    # More usage, but 30 minutes on the check is not due yet; at 02:00 it is (20.00 < 50: nothing).
    w.calls(200, at(5, 4, 1, 10), "b")
    assert w.run(at(5, 4, 1, 30)).subscription_count == 0
    report = w.run(at(5, 4, 2))
    assert (report.subscription_count, report.invoices) == (1, [])
    assert w.s.subscriptions.get(sub.id).next_run_at == at(5, 4, 3)
