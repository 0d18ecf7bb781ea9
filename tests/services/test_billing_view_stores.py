"""The read views on memory, SQLite and PostgreSQL: the invoice summary, usage records and
subscription usage read invoices, subscriptions and usage through the stores' own queries, and
every store must give the same exact decimals.

The world is tests/billed_world.py: opening invoice 1,322.15 (no usage), period-end invoice
1,483.93 with May's 150 calls (12.50), both FINALIZED and unpaid.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit.domain.catalog.prices import PriceType
from tests.billed_world import Billed, billed_world

D = Decimal


@pytest.fixture
def w(storage: Any) -> Billed:
    return billed_world(storage)


def test_the_views_read_the_same_exact_figures_on_every_store(w: Billed) -> None:
    cycle = w.cycle()
    (eur,) = w.s.customers.invoice_summary(w.customer.id).summaries
    assert (eur.total_invoice_count, eur.total_revenue_amount, eur.total_unpaid_amount) == (
        2,
        D("2806.08"),
        D("2806.08"),
    )
    assert (eur.unpaid_usage_charges, eur.unpaid_fixed_charges) == (D("12.50"), D("2345.55"))

    (record,) = w.s.usage.records(customer_external_id="c1", currency="eur").items
    assert (record.quantity, record.amount, record.plan_id) == (D("150"), D("12.50"), w.plan.id)
    assert (record.period_start, record.period_end) == (cycle.period_start, cycle.period_end)
    assert w.s.usage.records(subscription_id="subs_other").total == 0

    w.clock.set(datetime(2026, 6, 3, tzinfo=UTC))
    w.usage(7, datetime(2026, 6, 2, tzinfo=UTC), prefix="june")
    usage = w.s.subscriptions.usage(subscription_id=w.sub.id)
    preview = w.s.invoices.preview(w.sub.id)
    expected = sum((line.amount for line in preview.line_items if line.price_type is PriceType.USAGE), D(0))
    assert usage.amount == expected == D("0.70")  # 7 calls x 0.10
