"""Subscription hierarchies end to end, through the library, on every store (memory, SQLite,
PostgreSQL): a holding whose branches' usage is billed on its own invoice, a grouped child billed
on its parent's invoice, and delegated invoicing. A ``TestClock`` moves time; money is checked to
the cent with the arithmetic beside it; instants are UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.subscriptions import Subscription, SubscriptionType

D = Decimal


def at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


@dataclass
class World:
    clock: TestClock
    billing: Billing
    s: Scoped
    plan_id: str  # Enterprise: 500.00 a month in advance, API calls 0.05 (first 1,000) then 0.02
    lab_plan_id: str  # Lab: 120.00 a month in advance, storage 0.50 a GB in arrears

    def customer(self, external_id: str) -> str:
        return self.s.customers.create(external_id=external_id, name=external_id.title()).id

    def subscribe(self, customer_id: str, plan_id: str, **fields: Any) -> Subscription:
        return self.s.subscriptions.create(
            customer_id=customer_id, plan_id=plan_id, currency="usd", billing_period="MONTHLY", **fields
        )

    def send(self, event_name: str, external_id: str, count: int, day: datetime, **properties: Any) -> None:
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": event_name,
                    "external_customer_id": external_id,
                    "timestamp": (day + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{event_name}-{external_id}-{day:%m%d}-{i}",
                    "properties": properties,
                }
                for i in range(count)
            ]
        )

    def run(self, when: datetime) -> int:
        self.clock.set(when)
        return self.billing.run_due().invoice_count

    def invoices(self, sub: Subscription) -> list[Invoice]:
        found = self.s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(found, key=lambda invoice: invoice.billing_sequence or 0)


@pytest.fixture
def make_world(storage: Any) -> Callable[[datetime], World]:
    def make(start: datetime) -> World:
        clock = TestClock(start)
        billing = Billing(storage, clock)
        setup = billing.bootstrap()
        s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
        calls = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
        storage_meter = s.meters.create(
            name="Storage", event_name="storage", aggregation={"type": "SUM", "field": "gb"}
        )
        monthly = {"currency": "usd", "billing_period": "MONTHLY"}
        plan = s.plans.create(
            name="Enterprise",
            prices=[
                {
                    **monthly,
                    "type": "FIXED",
                    "billing_model": "FLAT_FEE",
                    "amount": "500",
                    "invoice_cadence": "ADVANCE",
                    "display_name": "Enterprise",
                },
                {
                    **monthly,
                    "type": "USAGE",
                    "billing_model": "TIERED",
                    "tier_mode": "SLAB",
                    "tiers": [{"up_to": 1000, "unit_amount": "0.05"}, {"up_to": None, "unit_amount": "0.02"}],
                    "invoice_cadence": "ARREAR",
                    "meter_id": calls.id,
                    "display_name": "API calls",
                },
            ],
        )
        lab = s.plans.create(
            name="Lab",
            prices=[
                {
                    **monthly,
                    "type": "FIXED",
                    "billing_model": "FLAT_FEE",
                    "amount": "120",
                    "invoice_cadence": "ADVANCE",
                    "display_name": "Lab",
                },
                {
                    **monthly,
                    "type": "USAGE",
                    "billing_model": "FLAT_FEE",
                    "amount": "0.5",
                    "invoice_cadence": "ARREAR",
                    "meter_id": storage_meter.id,
                    "display_name": "Storage",
                },
            ],
        )
        return World(clock, billing, s, plan.id, lab.id)

    return make


def amounts(invoice: Invoice) -> list[tuple[str, Decimal, Decimal]]:
    return [(line.display_name, line.quantity, line.amount) for line in invoice.line_items]


def test_branches_usage_is_pooled_on_the_holdings_invoice(make_world: Callable[[datetime], World]) -> None:
    w = make_world(at(2026, 3, 1))
    holding = w.customer("acme")
    w.customer("acme-berlin")
    w.customer("acme-paris")
    w.customer("globex")
    parent = w.subscribe(
        holding,
        w.plan_id,
        inheritance={"external_customer_ids_to_inherit_subscription": ["acme-berlin", "acme-paris"]},
    )
    assert parent.subscription_type is SubscriptionType.PARENT
    branches = w.s.subscriptions.list(parent_subscription_ids=[parent.id]).items
    assert {b.subscription_type for b in branches} == {SubscriptionType.INHERITED} and len(branches) == 2

    w.send("api", "acme", 400, at(2026, 3, 3))
    w.send("api", "acme-berlin", 500, at(2026, 3, 10))
    w.send("api", "acme-paris", 300, at(2026, 3, 20))
    w.send("api", "globex", 999, at(2026, 3, 20))  # not in the family

    assert w.run(at(2026, 4, 1)) == 1  # the holding's invoice only
    opening, march = w.invoices(parent)
    assert (opening.billing_reason, opening.total) == (BillingReason.SUBSCRIPTION_CREATE, D("500.00"))
    # 400 + 500 + 300 = 1,200 calls priced together: 1,000 x 0.05 = 50.00 and 200 x 0.02 = 4.00.
    assert amounts(march) == [("Enterprise", D(1), D("500.00")), ("API calls", D(1200), D("54.00"))]
    assert (march.customer_id, march.total) == (holding, D("554.00"))
    for branch in branches:
        assert w.invoices(branch) == []
        moved = w.s.subscriptions.get(branch.id)
        assert (moved.current_period_start, moved.current_period_end) == (at(2026, 4, 1), at(2026, 5, 1))


def test_a_grouped_child_is_billed_on_its_parents_invoice(make_world: Callable[[datetime], World]) -> None:
    w = make_world(at(2026, 3, 1))
    parent = w.subscribe(w.customer("acme"), w.plan_id)
    w.clock.set(at(2026, 3, 16))
    lab = w.subscribe(
        w.customer("acme-labs"), w.lab_plan_id, inheritance={"parent_subscription_id": parent.id}
    )
    assert (lab.subscription_type, lab.current_period_start, lab.current_period_end) == (
        SubscriptionType.GROUPED_INVOICING,
        at(2026, 3, 16),
        at(2026, 4, 1),
    )
    assert w.invoices(lab) == []  # no opening invoice
    w.send("api", "acme", 600, at(2026, 3, 20))
    w.send("api", "acme", 600, at(2026, 3, 21))
    w.send("storage", "acme-labs", 8, at(2026, 3, 20), gb=5)  # 40 GB

    assert w.run(at(2026, 4, 1)) == 1
    march = w.invoices(parent)[1]
    assert amounts(march) == [
        ("Enterprise", D(1), D("500.00")),  # April, in advance
        ("API calls", D(1200), D("54.00")),  # 1,000 x 0.05 + 200 x 0.02
        ("Lab", D(1), D("120.00")),  # April, in advance
        ("Storage", D(40), D("20.00")),  # 40 GB x 0.50 since 16 March
        ("Lab", D(1), D("61.94")),  # 16 March - 1 April in arrears: 120.00 x 16/31 = 61.935... -> 61.94
    ]
    assert [line.subscription_id for line in march.line_items] == [None, None, lab.id, lab.id, lab.id]
    assert march.total == D("755.94")  # 500.00 + 54.00 + 120.00 + 20.00 + 61.94
    assert w.invoices(lab) == []

    w.send("storage", "acme-labs", 2, at(2026, 4, 9), gb=3)  # 6 GB
    assert w.run(at(2026, 5, 1)) == 1
    april = w.invoices(parent)[2]
    assert amounts(april) == [
        ("Enterprise", D(1), D("500.00")),
        ("API calls", D(0), D("0.00")),
        ("Lab", D(1), D("120.00")),
        ("Storage", D(6), D("3.00")),
    ]
    assert april.total == D("623.00")
    assert w.invoices(lab) == []


def test_delegated_invoicing_bills_the_invoicing_customer(make_world: Callable[[datetime], World]) -> None:
    w = make_world(at(2026, 3, 1))
    subsidiary = w.customer("globex-labs")
    payer = w.customer("globex-finance")
    sub = w.subscribe(
        subsidiary, w.lab_plan_id, inheritance={"invoicing_customer_external_id": "globex-finance"}
    )
    assert (sub.subscription_type, sub.invoicing_customer_id) == (SubscriptionType.DELEGATED_INVOICING, payer)
    w.send("storage", "globex-labs", 10, at(2026, 3, 5), gb=2)  # the subscriber's usage: 20 GB
    assert w.run(at(2026, 4, 1)) == 1
    opening, march = w.invoices(sub)
    assert (opening.customer_id, opening.total) == (payer, D("120.00"))
    assert amounts(march) == [("Lab", D(1), D("120.00")), ("Storage", D(20), D("10.00"))]
    assert (march.customer_id, march.subscription_customer_id, march.total) == (
        payer,
        subsidiary,
        D("130.00"),
    )
    assert w.s.invoices.list(customer_id=subsidiary).items == []
    assert {i.id for i in w.s.invoices.list(customer_id=payer).items} == {opening.id, march.id}


def test_grouped_invoicing_honours_a_childs_add_on_override(make_world: Callable[[datetime], World]) -> None:
    """Spec rule 8: add-on prices and quantities can be overridden per subscription, and grouped
    invoicing honours these overrides."""
    w = make_world(at(2026, 3, 1))
    support = w.s.addons.create(
        name="Support",
        lookup_key="support",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "15",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
                "display_name": "Support",
            }
        ],
    )
    parent = w.subscribe(w.customer("acme"), w.plan_id)
    lab = w.subscribe(
        w.customer("acme-labs"),
        w.lab_plan_id,
        inheritance={"parent_subscription_id": parent.id},
        addons=[
            {
                "addon_id": support.id,
                "override_line_items": [
                    {"price_id": support.prices[0].id, "amount": "12.00", "quantity": "2"}
                ],
            }
        ],
    )
    assert w.invoices(lab) == []  # the add-on is not billed on the child's own invoice: it has none
    assert w.run(at(2026, 4, 1)) == 1
    march = w.invoices(parent)[1]
    assert amounts(march) == [
        ("Enterprise", D(1), D("500.00")),
        ("API calls", D(0), D("0.00")),
        ("Lab", D(1), D("120.00")),  # April, in advance
        ("Storage", D(0), D("0.00")),
        ("Support", D(2), D("24.00")),  # April at the override: 2 x 12.00, not 15.00
        ("Lab", D(1), D("120.00")),  # March, in arrears (created with the parent: a whole month)
        ("Support", D(2), D("24.00")),  # March, in arrears, at the override
    ]
    assert march.total == D("788.00")  # 500.00 + 120.00 + 24.00 + 120.00 + 24.00
    support_lines = [line for line in march.line_items if line.display_name == "Support"]
    assert {line.subscription_id for line in support_lines} == {lab.id}
    assert {line.entity_type for line in support_lines} == {"addon"}
    assert all(line.price_id != support.prices[0].id for line in support_lines)  # the override price
