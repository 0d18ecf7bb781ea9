"""Commitments and first-stub proration on real subscriptions, end to end, on every store.

Usage is a SUM of the events' ``amount`` priced at 1.00 a unit, so the usage cost is the summed
amount. Money is checked exactly with the arithmetic next to it; instants are UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import Invoice, InvoiceLineItem
from billingkit.domain.subscriptions import Subscription
from billingkit.errors import ValidationError

D = Decimal


def at(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


@dataclass
class World:
    clock: TestClock
    billing: Billing
    s: Scoped
    customer: Customer
    meter_id: str
    bucketed_meter_id: str
    events: int = 0

    def run(self, when: datetime) -> None:
        self.clock.set(when)
        self.billing.run_due()

    def invoices(self, sub: Subscription) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=sub.id, order="asc", limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def spend(self, amount: str, when: datetime, event_name: str = "spend") -> None:
        """One event worth ``amount`` of usage."""
        self.events += 1
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": event_name,
                    "external_customer_id": "c1",
                    "timestamp": when.isoformat(),
                    "event_id": f"e{self.events}",
                    "properties": {"amount": amount},
                }
            ]
        )

    def subscribe(self, prices: list[dict[str, Any]], **fields: Any) -> Subscription:
        plan = self.s.plans.create(name="Pro", prices=prices)
        fields.setdefault("billing_period", "MONTHLY")
        return self.s.subscriptions.create(
            customer_id=self.customer.id, plan_id=plan.id, currency="usd", **fields
        )


@pytest.fixture
def make_world(storage: Any) -> Callable[[datetime], World]:
    def make(start: datetime) -> World:
        clock = TestClock(start)
        billing = Billing(storage, clock)
        setup = billing.bootstrap()
        s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
        meter = s.meters.create(
            name="Spend", event_name="spend", aggregation={"type": "SUM", "field": "amount"}
        )
        bucketed = s.meters.create(
            name="Monthly spend",
            event_name="bucketed",
            aggregation={"type": "SUM", "field": "amount", "bucket_size": "MONTH"},
        )
        customer = s.customers.create(external_id="c1", name="Ada")
        return World(clock, billing, s, customer, meter.id, bucketed.id)

    return make


def usage_price(meter_id: str) -> dict[str, Any]:
    """1.00 a unit of the meter, billed in arrears."""
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": "1",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "display_name": "Spend",
    }


def fee(amount: str = "31", cadence: str = "ADVANCE") -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": cadence,
        "display_name": f"Base {cadence.lower()}",
    }


def line(invoice: Invoice, name: str) -> InvoiceLineItem:
    (found,) = [ln for ln in invoice.line_items if ln.display_name == name]
    return found


def price_of(w: World, sub: Subscription) -> str:
    (usage_line,) = [li for li in sub.line_items if li.meter_id]
    return usage_line.price_id


# -- subscription commitments -----------------------------------------------------------------


def test_subscription_commitment_overage_is_charged_at_the_factor(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    sub = w.subscribe(
        [usage_price(w.meter_id)], commitment_amount="1000", overage_factor="1.5", enable_true_up=True
    )
    w.spend("1200", at(2025, 1, 10))
    w.run(at(2025, 2, 1))
    (invoice,) = w.invoices(sub)
    assert invoice.subtotal == D("1300.00")  # 1,000.00 + 200.00 x 1.5 = 1,300.00
    info = line(invoice, "Spend").commitment_info
    assert info is not None
    assert info["computed_commitment_utilized_amount"] == "1000.00"
    assert info["computed_overage_amount"] == "300.00"  # 200.00 x 1.5
    assert info["computed_true_up_amount"] == "0"
    assert info["duration"] == "MONTHLY"


def test_subscription_commitment_true_up_bills_exactly_the_commitment(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    sub = w.subscribe(
        [usage_price(w.meter_id)], commitment_amount="1000", overage_factor="1.5", enable_true_up=True
    )
    w.spend("749.995", at(2025, 1, 10))
    w.run(at(2025, 2, 1))
    (invoice,) = w.invoices(sub)
    assert line(invoice, "Spend").amount == D("750.00")  # 749.995 rounded
    true_up = line(invoice, "Pro True Up")
    assert true_up.amount == D("250.00")  # 1,000.00 - 750.00, not round(250.005) = 250.01
    assert true_up.metadata == {"is_commitment_trueup": "true"}
    assert invoice.subtotal == D("1000.00")


def test_cumulative_subscription_commitment_trues_up_on_the_window_end(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    sub = w.subscribe(
        [usage_price(w.meter_id)],
        commitment_amount="1000",
        commitment_duration="QUARTERLY",
        overage_factor="2",
        enable_true_up=True,
    )
    w.spend("300", at(2025, 1, 10))
    w.spend("200", at(2025, 2, 10))
    w.spend("249.995", at(2025, 3, 10))
    w.spend("1100", at(2025, 4, 10))
    w.run(at(2025, 5, 1))  # one catch-up run: the window's periods are priced in one batch
    january, february, march, april = w.invoices(sub)
    assert january.subtotal == D("300.00")  # inside the commitment, no true-up yet
    assert february.subtotal == D("200.00")
    # 249.995 -> 250.00; true-up 1,000.00 - (300.00 + 200.00) - 250.00 = 250.00
    assert march.subtotal == D("500.00")
    assert line(march, "Pro True Up").amount == D("250.00")
    assert january.subtotal + february.subtotal + march.subtotal == D("1000.00")
    # a new window from 1 April: 1,000.00 + 100.00 x 2 = 1,200.00, no true-up before its end
    assert april.subtotal == D("1200.00")
    info = line(april, "Spend").commitment_info
    assert info is not None and info["duration"] == "QUARTERLY"


def test_cumulative_commitment_counts_invoices_of_earlier_runs(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    sub = w.subscribe(
        [usage_price(w.meter_id)],
        commitment_amount="1000",
        commitment_duration="QUARTERLY",
        overage_factor="2",
        enable_true_up=True,
    )
    w.spend("700", at(2025, 1, 10))
    w.run(at(2025, 2, 1))
    w.spend("400", at(2025, 2, 10))
    w.run(at(2025, 3, 1))
    w.run(at(2025, 4, 1))
    january, february, march = w.invoices(sub)
    assert january.subtotal == D("700.00")
    assert february.subtotal == D("500.00")  # 300.00 within + 100.00 x 2 overage
    assert march.invoice_status.value == "SKIPPED"  # nothing used and nothing short: 0.00


def test_cumulative_duration_must_be_whole_billing_periods(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    with pytest.raises(ValidationError) as err:
        w.subscribe(
            [usage_price(w.meter_id)],
            billing_period="WEEKLY",
            commitment_amount="1000",
            commitment_duration="MONTHLY",
            overage_factor="1",
        )
    assert err.value.field == "commitment_duration"


# -- line item commitments --------------------------------------------------------------------


def test_line_item_commitment_overage_and_true_up(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    plan_price = usage_price(w.meter_id)
    plan = w.s.plans.create(name="Pro", prices=[plan_price])
    price_id = w.s.prices.list(plan_ids=[plan.id]).items[0].id
    commit = {"commitment_amount": "1000", "overage_factor": "1.5", "enable_true_up": True}
    sub = w.s.subscriptions.create(
        customer_id=w.customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        line_item_commitments={price_id: commit},
    )
    stored = sub.line_items[0]
    assert (stored.commitment_type, stored.commitment_amount) == ("amount", D(1000))
    assert (stored.commitment_overage_factor, stored.commitment_true_up_enabled) == (D("1.5"), True)
    w.spend("749.995", at(2025, 1, 10))
    w.run(at(2025, 2, 1))
    w.spend("1200", at(2025, 2, 10))
    w.run(at(2025, 3, 1))
    january, february = w.invoices(sub)
    spend = line(january, "Spend")
    assert spend.amount == D("1000.00")  # 750.00 used + 250.00 true-up, exactly the commitment
    assert spend.commitment_info is not None
    assert spend.commitment_info["computed_true_up_amount"] == "250.00"
    assert february.subtotal == D("1300.00")  # 1,000.00 + 200.00 x 1.5


def test_windowed_line_item_commitment_per_meter_bucket(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    plan = w.s.plans.create(name="Pro", prices=[usage_price(w.bucketed_meter_id)])
    price_id = w.s.prices.list(plan_ids=[plan.id]).items[0].id
    sub = w.s.subscriptions.create(
        customer_id=w.customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        billing_cycle="calendar",
        line_item_commitments={
            price_id: {"commitment_amount": "1000", "enable_true_up": True, "is_window_commitment": True}
        },
    )
    w.spend("749.995", at(2025, 1, 10), event_name="bucketed")
    w.run(at(2025, 2, 1))
    (january,) = w.invoices(sub)
    spend = line(january, "Spend")
    assert spend.amount == D("1000.00")  # one MONTH bucket: 750.00 + 250.00 true-up
    assert spend.commitment_info is not None and spend.commitment_info["is_windowed"] is True


def test_time_bucket_line_item_commitment(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    hourly = w.s.meters.create(
        name="Hourly spend",
        event_name="hourly",
        aggregation={"type": "SUM", "field": "amount", "bucket_size": "HOUR"},
    )
    plan = w.s.plans.create(name="Pro", prices=[usage_price(hourly.id)])
    price_id = w.s.prices.list(plan_ids=[plan.id]).items[0].id
    peak = {
        "id": "peak",
        "commitment_type": "amount",
        "commitment_value": "5",
        "overage_factor": "2",
        "true_up_enabled": True,
        "start": {"hour": 9},
        "end": {"hour": 17},
    }
    sub = w.s.subscriptions.create(
        customer_id=w.customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        line_item_commitments={
            price_id: {
                "commitment_amount": "0",
                "is_window_commitment": True,
                "commitment_time_buckets": [peak],
            }
        },
    )
    assert sub.line_items[0].commitment_time_buckets[0]["price_id"] == price_id
    w.spend("7", at(2025, 1, 10, 10), event_name="hourly")  # peak: 5.00 + 2.00 x 2 = 9.00
    w.spend("1", at(2025, 1, 11, 12), event_name="hourly")  # peak: 1.00 + true-up 4.00 = 5.00
    w.spend("2", at(2025, 1, 10, 18), event_name="hourly")  # outside every bucket: 2.00
    w.run(at(2025, 2, 1))
    (january,) = w.invoices(sub)
    assert line(january, "Spend").amount == D("16.00")  # 9.00 + 5.00 + 2.00


def test_cumulative_line_item_commitment(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    plan = w.s.plans.create(name="Pro", prices=[usage_price(w.meter_id)])
    price_id = w.s.prices.list(plan_ids=[plan.id]).items[0].id
    sub = w.s.subscriptions.create(
        customer_id=w.customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        line_item_commitments={
            price_id: {
                "commitment_amount": "1000",
                "enable_true_up": True,
                "commitment_duration": "QUARTERLY",
            }
        },
    )
    w.spend("500", at(2025, 1, 10))
    w.spend("249.995", at(2025, 3, 10))
    w.run(at(2025, 4, 1))
    january, february, march = w.invoices(sub)
    assert january.subtotal == D("500.00")
    assert february.invoice_status.value == "SKIPPED"  # 0.00, the window is still open
    assert march.subtotal == D("500.00")  # 250.00 + true-up 1,000.00 - 500.00 - 250.00 = 250.00


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"commitment_amount": "10", "overage_factor": "0.5"}, "overage_factor"),
        ({"commitment_type": "quantity"}, "commitment_quantity"),
        ({"commitment_amount": "-1"}, "commitment_amount"),
        ({"commitment_amount": "10", "commitment_duration": "WEEKLY"}, "commitment_duration"),
        ({"commitment_amount": "10", "is_window_commitment": True}, "is_window_commitment"),
        (
            {
                "commitment_amount": "10",
                "commitment_time_buckets": [
                    {
                        "commitment_type": "amount",
                        "commitment_value": "1",
                        "start": {"hour": 9},
                        "end": {"hour": 17},
                    }
                ],
            },
            "commitment_time_buckets",
        ),
        ({"commitment_amount": "10", "colour": "red"}, "colour"),
    ],
)
def test_bad_line_item_commitments_name_the_field(
    make_world: Any, config: dict[str, Any], field: str
) -> None:
    w = make_world(at(2025, 1, 1))
    plan = w.s.plans.create(name="Pro", prices=[usage_price(w.meter_id)])
    price_id = w.s.prices.list(plan_ids=[plan.id]).items[0].id
    with pytest.raises(ValidationError) as err:
        w.s.subscriptions.create(
            customer_id=w.customer.id,
            plan_id=plan.id,
            currency="usd",
            billing_period="MONTHLY",
            line_item_commitments={price_id: config},
        )
    assert err.value.field == f"line_item_commitments.{price_id}.{field}", err.value.message


def test_line_item_commitments_need_a_usage_line_and_no_subscription_commitment(make_world: Any) -> None:
    w = make_world(at(2025, 1, 1))
    plan = w.s.plans.create(name="Pro", prices=[usage_price(w.meter_id), fee()])
    prices = {p.type.value: p.id for p in w.s.prices.list(plan_ids=[plan.id]).items}
    base = {"customer_id": w.customer.id, "plan_id": plan.id, "currency": "usd", "billing_period": "MONTHLY"}
    commit = {"commitment_amount": "10"}
    for price_id in (prices["FIXED"], "price_unknown"):
        with pytest.raises(ValidationError) as err:
            w.s.subscriptions.create(**base, line_item_commitments={price_id: commit})
        assert err.value.field == f"line_item_commitments.{price_id}"
    with pytest.raises(ValidationError) as err:
        w.s.subscriptions.create(
            **base,
            commitment_amount="5",
            overage_factor="1",
            line_item_commitments={prices["USAGE"]: commit},
        )
    assert err.value.field == "line_item_commitments"


# -- first-stub proration ---------------------------------------------------------------------


def test_calendar_stub_is_prorated_with_create_prorations(make_world: Any) -> None:
    w = make_world(at(2025, 3, 15))
    sub = w.subscribe([fee()], billing_cycle="calendar", proration_behavior="create_prorations")
    (opening,) = w.invoices(sub)
    base = line(opening, "Base advance")
    assert (base.period_start, base.period_end) == (at(2025, 3, 15), at(2025, 4, 1))
    assert base.amount == D("17.00")  # 31.00 x 17/31: [15 Mar, 1 Apr) of [1 Mar, 1 Apr)
    w.run(at(2025, 4, 1))
    assert w.invoices(sub)[1].subtotal == D("31.00")  # April is a full period


def test_calendar_stub_keeps_the_full_fee_without_prorations(make_world: Any) -> None:
    w = make_world(at(2025, 3, 15))
    sub = w.subscribe([fee()], billing_cycle="calendar", proration_behavior="none")
    (opening,) = w.invoices(sub)
    assert opening.subtotal == D("31.00")  # proration_behavior none: the full fee


def test_anniversary_start_before_a_later_anchor_is_prorated(make_world: Any) -> None:
    w = make_world(at(2025, 1, 10))
    sub = w.subscribe(
        [fee(), fee("62", cadence="ARREAR")],
        billing_anchor=at(2025, 1, 25).isoformat(),
        proration_behavior="create_prorations",
    )
    (opening,) = w.invoices(sub)
    # [10 Jan, 25 Jan) is 15 days of the 31-day period [25 Dec, 25 Jan): 31.00 x 15/31 = 15.00
    assert line(opening, "Base advance").amount == D("15.00")
    w.run(at(2025, 1, 25))
    second = w.invoices(sub)[1]
    assert line(second, "Base arrear").amount == D("30.00")  # the stub in arrears: 62.00 x 15/31
    assert line(second, "Base advance").amount == D("31.00")  # [25 Jan, 25 Feb) in full


def test_backdated_subscription_bills_its_prorated_stub_on_catch_up(make_world: Any) -> None:
    w = make_world(at(2025, 5, 20))
    sub = w.subscribe(
        [fee()],
        billing_cycle="calendar",
        start_date=at(2025, 3, 15).isoformat(),
        proration_behavior="create_prorations",
    )
    w.run(at(2025, 5, 20))
    invoices = w.invoices(sub)
    assert [(inv.period_start, inv.period_end) for inv in invoices] == [
        (at(2025, 3, 15), at(2025, 4, 1)),
        (at(2025, 3, 15), at(2025, 4, 1)),
        (at(2025, 4, 1), at(2025, 5, 1)),
    ]
    assert [inv.subtotal for inv in invoices] == [
        D("17.00"),  # the opening stub: 31.00 x 17/31
        D("31.00"),  # April in advance
        D("31.00"),  # May in advance
    ]
