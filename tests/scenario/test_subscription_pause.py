"""Pausing a subscription, end to end on every store: a ``TestClock`` moves time, ``run_due`` is the
worker, and every invoice is checked to the cent with its arithmetic beside it.

The plan: a 20.00 monthly fee billed in advance, and API calls billed in arrears at 0.10 each for
the first 100 and 0.05 after (SLAB). Subscriptions start on 1 March 2026 00:00 UTC, anniversary.
Rule under test (docs/decisions.md, "Pause and resume"): a pause stretches the billing period it
interrupts by the paused time and moves the anniversary anchor with it; nothing is invoiced or
credited for the pause itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.invoices import Invoice
from billingkit.domain.kinds import KINDS, Level
from billingkit.domain.queries import ListQuery
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus

D = Decimal


def at(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


@dataclass
class World:
    clock: TestClock
    billing: Billing
    s: Scoped
    plan_id: str

    def run(self, when: datetime) -> list[Invoice]:
        self.clock.set(when)
        return self.billing.run_due().invoices

    def calls(self, count: int, when: datetime, tag: str) -> None:
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": "c1",
                    "timestamp": (when + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{tag}{i}",
                }
                for i in range(count)
            ]
        )

    def sub(self, sub: Subscription) -> Subscription:
        return self.s.subscriptions.get(sub.id)

    def subscribe(self) -> Subscription:
        return self.s.subscriptions.create(
            external_customer_id="c1", plan_id=self.plan_id, currency="usd", billing_period="MONTHLY"
        )


@pytest.fixture
def w(storage: Any) -> World:
    clock = TestClock(at(3, 1))
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    common = {"currency": "usd", "billing_period": "MONTHLY"}
    plan = s.plans.create(
        name="Pro",
        prices=[
            {
                **common,
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "20",
                "invoice_cadence": "ADVANCE",
                "display_name": "Base",
            },
            {
                **common,
                "type": "USAGE",
                "billing_model": "TIERED",
                "tier_mode": "SLAB",
                "tiers": [{"up_to": 100, "unit_amount": "0.1"}, {"up_to": None, "unit_amount": "0.05"}],
                "invoice_cadence": "ARREAR",
                "meter_id": meter.id,
                "display_name": "API calls",
            },
        ],
    )
    s.customers.create(external_id="c1", name="Ada")
    return World(clock, billing, s, plan.id)


def bill(
    invoice: Invoice,
) -> tuple[datetime | None, datetime | None, Decimal, list[tuple[str | None, Decimal]]]:
    lines = sorted((line.display_name, line.amount) for line in invoice.line_items)
    return invoice.period_start, invoice.period_end, invoice.amount_due, lines


def test_a_ten_day_pause_mid_period_moves_the_period_end_and_the_anchor(w: World) -> None:
    sub = w.subscribe()  # opening invoice: 20.00 for [1 Mar, 1 Apr)
    w.calls(150, at(3, 5), "a")
    w.clock.set(at(3, 11))
    w.s.subscriptions.pause(sub.id, pause_days=10)

    # Nothing is invoiced while paused, however often the worker runs.
    for day in range(11, 21):
        assert w.run(at(3, day, 12)) == []
        assert w.sub(sub).subscription_status is SubscriptionStatus.PAUSED
    assert w.run(at(3, 21)) == []  # resumed at pause_end by the worker
    resumed = w.sub(sub)
    assert resumed.subscription_status is SubscriptionStatus.ACTIVE
    # [1 Mar, 1 Apr) + 10 days = [1 Mar, 11 Apr).
    assert (resumed.current_period_start, resumed.current_period_end) == (at(3, 1), at(4, 11))
    assert w.run(at(4, 1)) == []  # the old period end passes without an invoice

    w.calls(50, at(4, 2), "b")
    (closing,) = w.run(at(4, 11))
    # 200 calls: 100 x 0.10 + 100 x 0.05 = 15.00; the next period's fee in advance: 20.00.
    assert bill(closing) == (
        at(3, 1),
        at(4, 11),
        D("35.00"),
        [("API calls", D("15.00")), ("Base", D("20.00"))],
    )
    # The anchor moved to the 11th: full months from there.
    (may,) = w.run(at(5, 11))
    assert bill(may) == (at(4, 11), at(5, 11), D("20.00"), [("API calls", D("0.00")), ("Base", D("20.00"))])
    (june,) = w.run(at(6, 11))
    assert (june.period_start, june.period_end, june.amount_due) == (at(5, 11), at(6, 11), D("20.00"))
    assert w.sub(sub).current_period_end == at(7, 11)


def test_a_scheduled_pause_runs_by_the_worker_and_usage_inside_it_is_still_billed(w: World) -> None:
    sub = w.subscribe()
    w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(3, 15), pause_end=at(3, 22, 12))
    w.calls(10, at(3, 10), "a")
    assert w.run(at(3, 14)) == [] and w.sub(sub).subscription_status is SubscriptionStatus.ACTIVE
    w.run(at(3, 15))
    assert w.sub(sub).subscription_status is SubscriptionStatus.PAUSED
    w.calls(4, at(3, 18), "b")  # events sent while paused are usage of the (stretched) period
    w.run(at(3, 22, 12))
    assert w.sub(sub).current_period_end == at(4, 8, 12)  # + 7.5 days
    w.calls(6, at(3, 25), "c")
    assert w.run(at(4, 8)) == []
    (closing,) = w.run(at(4, 8, 12))
    # 20 calls x 0.10 = 2.00; the fee of [8 Apr 12:00, 8 May 12:00) in advance: 20.00.
    assert bill(closing) == (
        at(3, 1),
        at(4, 8, 12),
        D("22.00"),
        [("API calls", D("2.00")), ("Base", D("20.00"))],
    )


def test_a_resume_by_hand_gives_back_only_the_time_really_paused(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(3, 11))
    w.s.subscriptions.pause(sub.id, pause_end=at(3, 31))
    w.clock.set(at(3, 18))
    w.s.subscriptions.resume(sub.id)  # 7 days paused, not 20
    assert w.run(at(3, 31)) == []
    assert w.sub(sub).current_period_end == at(4, 8)
    (closing,) = w.run(at(4, 8))
    assert bill(closing) == (at(3, 1), at(4, 8), D("20.00"), [("API calls", D("0.00")), ("Base", D("20.00"))])


def test_a_period_end_pause_starts_after_the_period_is_billed(w: World) -> None:
    sub = w.subscribe()
    w.calls(120, at(3, 20), "a")
    w.clock.set(at(3, 25))
    w.s.subscriptions.pause(sub.id, pause_mode="period_end", pause_days=5)
    assert w.sub(sub).subscription_status is SubscriptionStatus.ACTIVE
    (march,) = w.run(at(4, 1))
    # 120 calls: 100 x 0.10 + 20 x 0.05 = 11.00; April's fee in advance: 20.00.
    assert bill(march) == (at(3, 1), at(4, 1), D("31.00"), [("API calls", D("11.00")), ("Base", D("20.00"))])
    assert w.sub(sub).subscription_status is SubscriptionStatus.PAUSED
    assert w.run(at(4, 6)) == []
    assert (w.sub(sub).current_period_start, w.sub(sub).current_period_end) == (at(4, 1), at(5, 6))
    (april,) = w.run(at(5, 6))
    assert bill(april) == (at(4, 1), at(5, 6), D("20.00"), [("API calls", D("0.00")), ("Base", D("20.00"))])


def _every_row(w: World) -> dict[str, list[Any]]:
    kinds = [name for name, kind in KINDS.items() if kind.level is Level.ENVIRONMENT]
    with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
        return {
            kind: sorted(
                getattr(uow, kind).list(ListQuery(limit=1000, status=None)).items, key=lambda r: r.id
            )
            for kind in kinds
        }


def test_a_dry_run_writes_nothing_anywhere(w: World) -> None:
    sub = w.subscribe()
    w.calls(30, at(3, 20), "a")
    w.clock.set(at(4, 2))  # the period end of 1 Apr is due: a real pause would bill it first
    before = _every_row(w)
    preview = w.s.subscriptions.pause(sub.id, pause_days=3, dry_run=True)
    assert _every_row(w) == before
    assert preview.subscription.subscription_status is SubscriptionStatus.PAUSED
    assert preview.billing_impact.adjusted_period_end == at(5, 4)  # [1 Apr, 1 May) + 3 days
    # The invoice the dry run numbered was rolled back with its number: the real one takes it.
    w.s.subscriptions.pause(sub.id, pause_days=3)
    invoices = sorted(w.s.invoices.list(subscription_id=sub.id).items, key=lambda i: i.billing_sequence or 0)
    assert [(i.invoice_number, i.amount_due) for i in invoices] == [
        ("INV-202603-00001", D("20.00")),
        ("INV-202604-00001", D("23.00")),  # 30 x 0.10 + 20.00
    ]


def test_incomplete_until_the_opening_invoice_is_paid_over_http(storage: Any) -> None:
    from billingkit.http import create_app

    clock = TestClock(at(3, 1))
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    key = {"x-api-key": setup.environments[0][1].api_key}
    client = TestClient(create_app(billing), raise_server_exceptions=False)
    customer = client.post("/v1/customers", json={"external_id": "c1", "name": "Ada"}, headers=key).json()
    price = {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": "45.50",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
    }
    plan = client.post("/v1/plans", json={"name": "Pro", "prices": [price]}, headers=key).json()
    created = client.post(
        "/v1/subscriptions",
        json={
            "customer_id": customer["id"],
            "plan_id": plan["id"],
            "currency": "usd",
            "billing_period": "MONTHLY",
            "collection_method": "send_invoice",
            "payment_behavior": "default_incomplete",
        },
        headers=key,
    )
    assert created.status_code == 201, created.text
    sub = created.json()
    assert sub["subscription_status"] == "incomplete"
    (opening,) = client.post("/v1/invoices/search", json={"subscription_id": sub["id"]}, headers=key).json()[
        "items"
    ]
    assert (opening["amount_due"], opening["payment_status"]) == ("45.50", "PENDING")

    clock.set(at(4, 2))
    assert billing.run_due().invoices == []  # an incomplete subscription is not renewed

    paid = client.put(
        f"/v1/invoices/{opening['id']}/payment",
        json={"payment_status": "SUCCEEDED", "amount": "45.50"},
        headers=key,
    )
    assert paid.status_code == 200, paid.text
    got = client.get(f"/v1/subscriptions/{sub['id']}", headers=key).json()
    assert got["subscription_status"] == "active"
    env = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    (activated,) = env.notifications.list(event_type="subscription.activated").items
    assert activated.payload["event_type"] == "subscription.activated"
    assert activated.payload["subscription"]["id"] == sub["id"]
    assert activated.payload["subscription"]["subscription_status"] == "active"
    assert activated.payload["subscription"]["customer"]["id"] == customer["id"]
    # Billing catches up: the period that ended while it waited, 45.50 in advance for April.
    (april,) = billing.run_due().invoices
    assert (april.period_start, april.period_end, april.amount_due) == (at(3, 1), at(4, 1), D("45.50"))
