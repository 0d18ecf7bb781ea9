"""Subscription billing end to end, through the library, on every store (memory, SQLite, PostgreSQL).

A ``TestClock`` moves time; ``Billing.run_due`` bills whatever fell due. Money is checked exactly
(``Decimal``) with the arithmetic next to it; instants are UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

import billingkit.services.billing_runs as billing_runs
from billingkit import Billing, Scoped, TestClock
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import BillingReason, Invoice, InvoiceStatus
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.errors import ValidationError


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


D = Decimal


@dataclass
class World:
    clock: TestClock
    billing: Billing
    s: Scoped
    customer: Customer
    meter_id: str

    def run(self, when: datetime | None = None) -> billing_runs.RunReport:
        if when is not None:
            self.clock.set(when)
        return self.billing.run_due()

    def invoices(self, sub: Subscription) -> list[Invoice]:
        """The subscription's invoices in billing order."""
        items = self.s.invoices.list(subscription_id=sub.id, order="asc", limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def sub(self, sub: Subscription) -> Subscription:
        return self.s.subscriptions.get(sub.id)

    def usage(self, count: int, start: datetime, *, prefix: str = "e", customer: str = "c1") -> None:
        """``count`` API calls, one a minute from ``start``."""
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": customer,
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{prefix}{i}",
                }
                for i in range(count)
            ]
        )

    def events(self, event_type: str | None = None) -> list[NotificationEvent]:
        return list(self.s.notifications.list(event_type=event_type, limit=500).items)


def fee(amount: str = "20", *, period: str = "MONTHLY", count: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": period,
        "billing_period_count": count,
        "invoice_cadence": "ADVANCE",
        "display_name": "Base",
        **extra,
    }


def calls(meter_id: str) -> dict[str, Any]:
    """0.10 a call for the first 100, 0.05 after (SLAB), billed in arrears."""
    return {
        "type": "USAGE",
        "billing_model": "TIERED",
        "tier_mode": "SLAB",
        "tiers": [{"up_to": 100, "unit_amount": "0.1"}, {"up_to": None, "unit_amount": "0.05"}],
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
    }


@pytest.fixture
def make_world(storage: Any) -> Callable[[datetime], World]:
    def make(start: datetime) -> World:
        clock = TestClock(start)
        billing = Billing(storage, clock)
        setup = billing.bootstrap()
        s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
        meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
        customer = s.customers.create(external_id="c1", name="Ada")
        return World(clock, billing, s, customer, meter.id)

    return make


def subscribe(w: World, prices: list[dict[str, Any]], **fields: Any) -> Subscription:
    plan = w.s.plans.create(name="Pro", prices=prices)
    fields.setdefault("billing_period", "MONTHLY")
    return w.s.subscriptions.create(customer_id=w.customer.id, plan_id=plan.id, currency="usd", **fields)


def periods(invoices: list[Invoice]) -> list[tuple[datetime | None, datetime | None]]:
    return [(inv.period_start, inv.period_end) for inv in invoices]


# -- period boundaries ---------------------------------------------------------------------------


def test_monthly_anniversary_from_31_january_clamps_and_recovers(make_world: Any) -> None:
    start = at(2024, 1, 31, 10)
    w = make_world(start)
    sub = subscribe(w, [fee()])
    assert (sub.current_period_start, sub.current_period_end) == (start, at(2024, 2, 29, 10))

    ends = [at(2024, 2, 29, 10), at(2024, 3, 31, 10), at(2024, 4, 30, 10), at(2024, 5, 31, 10)]
    seen = [w.sub(sub).current_period_end]
    for end in ends:
        report = w.run(end)
        assert len(report.invoices) == 1
        seen.append(w.sub(sub).current_period_end)
    # Each boundary is anchor + k months, clamped: the day comes back to 31 after February/April.
    assert seen == [*ends, at(2024, 6, 30, 10)]

    invoices = w.invoices(sub)
    assert [inv.billing_reason for inv in invoices] == [
        BillingReason.SUBSCRIPTION_CREATE,
        *[BillingReason.SUBSCRIPTION_CYCLE] * 4,
    ]
    # The opening invoice covers the first period; each cycle invoice is its closing period.
    assert periods(invoices) == [
        (start, at(2024, 2, 29, 10)),
        (start, at(2024, 2, 29, 10)),
        (at(2024, 2, 29, 10), at(2024, 3, 31, 10)),
        (at(2024, 3, 31, 10), at(2024, 4, 30, 10)),
        (at(2024, 4, 30, 10), at(2024, 5, 31, 10)),
    ]
    # ... and carries the next period's ADVANCE fee.
    advance = [(inv.line_items[0].period_start, inv.line_items[0].period_end) for inv in invoices[1:]]
    assert advance == [
        (at(2024, 2, 29, 10), at(2024, 3, 31, 10)),
        (at(2024, 3, 31, 10), at(2024, 4, 30, 10)),
        (at(2024, 4, 30, 10), at(2024, 5, 31, 10)),
        (at(2024, 5, 31, 10), at(2024, 6, 30, 10)),
    ]
    assert [inv.amount_due for inv in invoices] == [D("20.00")] * 5


def test_calendar_monthly_started_mid_month_has_a_short_first_period(make_world: Any) -> None:
    start = at(2024, 3, 10, 15)
    w = make_world(start)
    sub = subscribe(w, [fee()], billing_cycle="calendar")
    assert (sub.current_period_start, sub.current_period_end) == (start, at(2024, 4, 1))
    assert sub.billing_anchor == at(2024, 4, 1)

    for month in (4, 5, 6):
        w.run(at(2024, month, 1))
    assert (w.sub(sub).current_period_start, w.sub(sub).current_period_end) == (
        at(2024, 6, 1),
        at(2024, 7, 1),
    )
    assert periods(w.invoices(sub)) == [
        (start, at(2024, 4, 1)),  # opening
        (start, at(2024, 4, 1)),
        (at(2024, 4, 1), at(2024, 5, 1)),
        (at(2024, 5, 1), at(2024, 6, 1)),
    ]


def test_weekly_periods_keep_the_weekday_and_time(make_world: Any) -> None:
    start = at(2024, 1, 3, 8)  # a Wednesday
    w = make_world(start)
    sub = subscribe(w, [fee("5", period="WEEKLY")], billing_period="WEEKLY")
    assert sub.current_period_end == at(2024, 1, 10, 8)

    report = w.run(at(2024, 1, 25))  # three weeks have ended
    assert len(report.invoices) == 3
    assert periods(w.invoices(sub))[1:] == [
        (at(2024, 1, 3, 8), at(2024, 1, 10, 8)),
        (at(2024, 1, 10, 8), at(2024, 1, 17, 8)),
        (at(2024, 1, 17, 8), at(2024, 1, 24, 8)),
    ]
    assert (w.sub(sub).current_period_start, w.sub(sub).current_period_end) == (
        at(2024, 1, 24, 8),
        at(2024, 1, 31, 8),
    )


def test_annual_from_29_february_renews_on_28_february_and_29_in_leap_years(make_world: Any) -> None:
    start = at(2024, 2, 29)
    w = make_world(start)
    sub = subscribe(w, [fee("200", period="ANNUAL")], billing_period="ANNUAL")
    assert sub.current_period_end == at(2025, 2, 28)

    w.run(at(2028, 3, 1))
    assert periods(w.invoices(sub))[1:] == [
        (at(2024, 2, 29), at(2025, 2, 28)),
        (at(2025, 2, 28), at(2026, 2, 28)),
        (at(2026, 2, 28), at(2027, 2, 28)),
        (at(2027, 2, 28), at(2028, 2, 29)),
    ]
    assert w.sub(sub).current_period_end == at(2029, 2, 28)


def test_billing_period_count_3_gives_quarterly_boundaries(make_world: Any) -> None:
    start = at(2024, 1, 31)
    w = make_world(start)
    sub = subscribe(w, [fee("50", count=3)], billing_period_count=3)
    assert sub.current_period_end == at(2024, 4, 30)

    report = w.run(at(2024, 11, 1))
    assert len(report.invoices) == 3
    assert periods(w.invoices(sub))[1:] == [
        (at(2024, 1, 31), at(2024, 4, 30)),
        (at(2024, 4, 30), at(2024, 7, 31)),
        (at(2024, 7, 31), at(2024, 10, 31)),
    ]
    assert w.sub(sub).current_period_end == at(2025, 1, 31)


# -- money -----------------------------------------------------------------------------------------


def test_advance_fee_and_tiered_usage_in_arrears(make_world: Any) -> None:
    start = at(2024, 1, 31, 10)
    w = make_world(start)
    sub = subscribe(w, [fee(), calls(w.meter_id)])

    (opening,) = w.invoices(sub)
    assert opening.billing_reason is BillingReason.SUBSCRIPTION_CREATE
    assert opening.invoice_status is InvoiceStatus.FINALIZED
    assert opening.invoice_number == "INV-202401-00001"
    assert (opening.subtotal, opening.amount_due) == (D("20.00"), D("20.00"))  # the fee alone
    assert [line.display_name for line in opening.line_items] == ["Base"]

    w.usage(150, at(2024, 2, 10))
    w.usage(7, at(2024, 3, 1, 10), prefix="later")  # period 2: not on the second invoice
    w.run(at(2024, 2, 29, 10))
    second = w.invoices(sub)[1]
    assert second.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
    assert (second.period_start, second.period_end) == (start, at(2024, 2, 29, 10))
    lines = {line.display_name: line for line in second.line_items}
    usage_line = lines["API calls"]
    assert usage_line.quantity == D(150)
    assert usage_line.amount == D("12.50")  # 100 x 0.10 + 50 x 0.05 = 10.00 + 2.50
    assert (usage_line.period_start, usage_line.period_end) == (start, at(2024, 2, 29, 10))
    assert lines["Base"].amount == D("20.00")
    assert (lines["Base"].period_start, lines["Base"].period_end) == (
        at(2024, 2, 29, 10),
        at(2024, 3, 31, 10),
    )
    assert second.subtotal == second.total == second.amount_due == D("32.50")  # 12.50 + 20.00
    assert second.due_date == at(2024, 3, 1, 10)  # period end + 1 day without payment terms

    w.run(at(2024, 3, 31, 10))
    third = w.invoices(sub)[2]
    assert third.amount_due == D("20.70")  # 7 x 0.10 = 0.70 + 20.00


def test_trial_inherited_from_the_plan(make_world: Any) -> None:
    start = at(2024, 1, 31, 10)
    trial_end = at(2024, 2, 14, 10)  # 31 Jan + 14 days
    w = make_world(start)
    sub = subscribe(w, [fee(trial_period_days=14), calls(w.meter_id)])
    assert sub.subscription_status is SubscriptionStatus.TRIALING
    assert (sub.trial_start, sub.trial_end) == (start, trial_end)
    assert (sub.current_period_start, sub.current_period_end) == (start, trial_end)
    assert w.invoices(sub) == []

    w.usage(30, at(2024, 2, 5))  # during the trial: never billed
    assert w.run(at(2024, 2, 14, 9)).invoices == []  # an hour before the trial ends
    report = w.run(at(2024, 2, 15))
    assert len(report.invoices) == 1
    after = w.sub(sub)
    assert after.subscription_status is SubscriptionStatus.ACTIVE
    assert after.billing_anchor == trial_end
    assert (after.current_period_start, after.current_period_end) == (trial_end, at(2024, 3, 14, 10))
    (first,) = w.invoices(sub)
    assert first.billing_reason is BillingReason.SUBSCRIPTION_TRIAL_END
    assert (first.period_start, first.period_end) == (trial_end, at(2024, 3, 14, 10))
    assert first.amount_due == D("20.00")  # the fee; no usage line on an opening invoice
    assert first.billing_sequence == 1

    w.usage(150, at(2024, 2, 20), prefix="paid")
    w.run(at(2024, 3, 14, 10))
    second = w.invoices(sub)[1]
    assert (second.period_start, second.period_end) == (trial_end, at(2024, 3, 14, 10))
    usage_line = next(line for line in second.line_items if line.display_name == "API calls")
    # Only the 150 calls after the trial: 100 x 0.10 + 50 x 0.05 = 12.50 (with the trial's 30 it
    # would be 100 x 0.10 + 80 x 0.05 = 14.00).
    assert usage_line.quantity == D(150)
    assert second.amount_due == D("32.50")  # 12.50 + 20.00


def test_draft_is_not_billed_until_activated_with_a_new_start(make_world: Any) -> None:
    w = make_world(at(2024, 1, 31, 10))
    sub = subscribe(w, [fee(), calls(w.meter_id)], subscription_status="draft")
    assert sub.subscription_status is SubscriptionStatus.DRAFT
    assert sub.next_run_at is None
    assert w.invoices(sub) == []

    report = w.run(at(2024, 3, 15))  # well past the draft's first period end
    assert (report.subscription_count, report.invoices, report.notification_count) == (0, [], 0)
    draft = w.sub(sub)
    assert draft.subscription_status is SubscriptionStatus.DRAFT
    assert draft.version == 1
    assert w.invoices(sub) == []

    new_start = at(2024, 3, 20)
    active = w.s.subscriptions.activate(sub.id, start_date=new_start)
    assert active.subscription_status is SubscriptionStatus.ACTIVE
    assert (active.start_date, active.billing_anchor) == (new_start, new_start)
    assert (active.current_period_start, active.current_period_end) == (new_start, at(2024, 4, 20))
    assert active.version == 2
    (opening,) = w.invoices(sub)
    assert opening.billing_reason is BillingReason.SUBSCRIPTION_CREATE
    assert (opening.period_start, opening.period_end) == (new_start, at(2024, 4, 20))
    assert opening.amount_due == D("20.00")
    assert w.run(at(2024, 4, 1)).invoices == []
    assert len(w.run(at(2024, 4, 20)).invoices) == 1


def test_several_elapsed_periods_in_one_run(make_world: Any) -> None:
    start = at(2024, 1, 31, 10)
    w = make_world(start)
    sub = subscribe(w, [fee(), calls(w.meter_id)])
    w.usage(150, at(2024, 2, 1))  # period 1
    w.usage(20, at(2024, 4, 2), prefix="april")  # period 3: [31 Mar, 30 Apr)

    report = w.run(at(2024, 6, 1))
    assert len(report.invoices) == 4
    invoices = w.invoices(sub)
    assert [inv.billing_sequence for inv in invoices] == [1, 2, 3, 4, 5]
    assert [inv.invoice_number for inv in invoices] == [
        "INV-202401-00001",  # opening, numbered in January
        "INV-202406-00001",  # the run's invoices, numbered in June without gaps
        "INV-202406-00002",
        "INV-202406-00003",
        "INV-202406-00004",
    ]
    assert [inv.id for inv in report.invoices] == [inv.id for inv in invoices[1:]]
    assert periods(invoices)[1:] == [
        (start, at(2024, 2, 29, 10)),
        (at(2024, 2, 29, 10), at(2024, 3, 31, 10)),
        (at(2024, 3, 31, 10), at(2024, 4, 30, 10)),
        (at(2024, 4, 30, 10), at(2024, 5, 31, 10)),
    ]
    assert [inv.amount_due for inv in invoices[1:]] == [
        D("32.50"),  # 100 x 0.10 + 50 x 0.05 + 20.00
        D("20.00"),  # no usage + 20.00
        D("22.00"),  # 20 x 0.10 + 20.00
        D("20.00"),
    ]
    after = w.sub(sub)
    assert (after.current_period_start, after.current_period_end) == (
        at(2024, 5, 31, 10),
        at(2024, 6, 30, 10),
    )
    assert after.version == 2  # one update for the whole catch-up


def test_end_date_bills_the_last_period_then_cancels(make_world: Any) -> None:
    start = at(2024, 1, 31, 10)
    end = at(2024, 4, 15)
    w = make_world(start)
    sub = subscribe(w, [fee(), calls(w.meter_id)], end_date=end)
    w.usage(10, at(2024, 4, 1))  # in the last, short period [31 Mar, 15 Apr)
    w.usage(5, at(2024, 4, 20), prefix="late")  # after the end: never billed

    report = w.run(at(2024, 6, 15))
    assert len(report.invoices) == 3
    invoices = w.invoices(sub)
    assert periods(invoices)[1:] == [
        (start, at(2024, 2, 29, 10)),
        (at(2024, 2, 29, 10), at(2024, 3, 31, 10)),
        (at(2024, 3, 31, 10), end),
    ]
    # The fee of the short last period is billed in advance on the second cycle invoice (in full:
    # this version does not prorate a period cut short by the end date).
    fee_line = next(line for line in invoices[2].line_items if line.display_name == "Base")
    assert (fee_line.period_start, fee_line.period_end, fee_line.amount) == (
        at(2024, 3, 31, 10),
        end,
        D("20.00"),
    )
    last = invoices[3]
    assert [line.display_name for line in last.line_items] == ["API calls"]  # no next period
    assert last.amount_due == D("1.00")  # 10 x 0.10

    ended = w.sub(sub)
    assert ended.subscription_status is SubscriptionStatus.CANCELLED
    assert ended.cancelled_at == end
    assert ended.next_run_at is None
    assert [e.entity_id for e in w.events("subscription.cancelled")] == [sub.id]

    report = w.run(at(2024, 12, 1))
    assert (report.subscription_count, report.invoices) == (0, [])
    assert len(w.invoices(sub)) == 4


def test_usage_only_periods_without_usage_are_skipped_and_not_numbered(make_world: Any) -> None:
    start = at(2024, 1, 31, 10)
    w = make_world(start)
    sub = subscribe(w, [calls(w.meter_id)])
    assert w.invoices(sub) == []  # nothing is billed in advance: no opening invoice
    w.usage(3, at(2024, 3, 5))  # the second period only

    report = w.run(at(2024, 5, 1))
    assert len(report.invoices) == 3
    invoices = w.invoices(sub)
    assert [
        (inv.billing_sequence, inv.invoice_status, inv.invoice_number, inv.amount_due) for inv in invoices
    ] == [
        (1, InvoiceStatus.SKIPPED, None, D("0.00")),
        (2, InvoiceStatus.FINALIZED, "INV-202405-00001", D("0.30")),  # 3 x 0.10
        (3, InvoiceStatus.SKIPPED, None, D("0.00")),
    ]
    assert len(w.events("invoice.update")) == 2
    assert len(w.events("invoice.update.finalized")) == 1
    assert w.run().invoices == []


# -- exactly once ----------------------------------------------------------------------------------


def test_crash_between_computing_and_storing_bills_nothing_then_exactly_once(
    make_world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = make_world(at(2024, 1, 31, 10))
    sub = subscribe(w, [fee(), calls(w.meter_id)])
    other_customer = w.s.customers.create(external_id="c2", name="Bob")
    other = w.s.subscriptions.create(
        customer_id=other_customer.id, plan_id=sub.plan_id, currency="usd", billing_period="MONTHLY"
    )
    w.usage(150, at(2024, 2, 1))
    before = {s.id: w.sub(s) for s in (sub, other)}

    real_numbers = billing_runs.finalize_or_hold  # type: ignore[attr-defined]  # the names the run calls
    real_record = billing_runs.notifications.record_many
    attempts: list[str | None] = []

    def numbered(uow: Any, ctx: Any, invoices: Any, delay: Any) -> Any:
        issued = real_numbers(uow, ctx, invoices, delay)
        attempts.extend(invoice.invoice_number for invoice in issued)
        return issued

    def power_cut(uow: Any, ctx: Any, events: Any) -> None:
        # Reached after the run stored its invoices and subscriptions in its transaction ...
        cycle_only = Filter("billing_reason", Op.EQ, BillingReason.SUBSCRIPTION_CYCLE)
        assert uow.invoices.list(ListQuery(filters=(cycle_only,))).total == 2
        raise RuntimeError("power cut")  # ... which never commits

    monkeypatch.setattr(billing_runs, "finalize_or_hold", numbered)
    monkeypatch.setattr(billing_runs.notifications, "record_many", power_cut)
    with pytest.raises(RuntimeError, match="power cut"):
        w.run(at(2024, 3, 1))
    assert attempts == ["INV-202403-00001", "INV-202403-00002"]
    cycle = w.s.invoices.list(billing_reason="SUBSCRIPTION_CYCLE", limit=100).items
    assert cycle == []
    for s in (sub, other):
        now = w.sub(s)
        assert (now.current_period_start, now.current_period_end, now.version, now.billing_sequence) == (
            before[s.id].current_period_start,
            before[s.id].current_period_end,
            before[s.id].version,
            before[s.id].billing_sequence,
        )
    assert w.events("invoice.update.finalized") and all(
        e.payload["invoice"]["billing_reason"] == "SUBSCRIPTION_CREATE"
        for e in w.events("invoice.update.finalized")
    )

    monkeypatch.setattr(billing_runs.notifications, "record_many", real_record)
    report = w.run()
    assert len(report.invoices) == 2
    assert w.run().invoices == []
    for s in (sub, other):
        (closing,) = [inv for inv in w.invoices(s) if inv.billing_reason is BillingReason.SUBSCRIPTION_CYCLE]
        assert (closing.period_start, closing.period_end) == (at(2024, 1, 31, 10), at(2024, 2, 29, 10))
        assert w.sub(s).current_period_end == at(2024, 3, 31, 10)
    # The number the failed attempt drew was given back: the month's sequence starts at 1, no gap.
    numbers = sorted(inv.invoice_number or "" for inv in report.invoices)
    assert numbers == ["INV-202403-00001", "INV-202403-00002"]
    mine = next(inv for inv in report.invoices if inv.subscription_id == sub.id)
    assert mine.amount_due == D("32.50")  # 100 x 0.10 + 50 x 0.05 + 20.00


def _break_line(w: World, sub: Subscription, **change: str) -> None:
    """Point the subscription's line items at a price or meter that does not exist (a catalogue
    row lost outside billingkit): the only way to make a subscription unbillable on purpose."""
    scope = (w.s.tenant_id, w.s.environment_id)
    with w.billing.storage.unit_of_work(*scope) as uow:
        stored = uow.subscriptions.get(sub.id)
        lines = tuple(
            line.model_copy(update=change) if line.meter_id or "price_id" in change else line
            for line in stored.line_items
        )
        uow.subscriptions.update(
            stored.model_copy(update={"line_items": lines}), expected_version=stored.version
        )
        uow.commit()


@pytest.mark.parametrize(
    "change",
    [{"price_id": "price_gone"}, {"meter_id": "meter_gone"}],
    ids=["missing price (pricing fails)", "missing meter (usage read fails)"],
)
def test_an_unbillable_subscription_is_reported_stays_due_and_the_others_are_billed(
    make_world: Any, change: dict[str, str]
) -> None:
    w = make_world(at(2024, 1, 31, 10))
    good = subscribe(w, [fee(), calls(w.meter_id)])
    bad = subscribe(w, [fee(), calls(w.meter_id)])
    w.usage(150, at(2024, 2, 1))
    _break_line(w, bad, **change)
    broken = w.sub(bad)

    report = w.run(at(2024, 3, 1))
    assert [inv.subscription_id for inv in report.invoices] == [good.id]
    assert report.invoices[0].amount_due == D("32.50")  # 100 x 0.10 + 50 x 0.05 + 20.00
    assert [(sub_id, code) for sub_id, code, _ in report.failures] == [(bad.id, "validation_error")]
    assert report.subscription_count == 1
    still = w.sub(bad)
    assert (still.version, still.current_period_end, still.next_run_at) == (
        broken.version,
        broken.current_period_end,
        broken.next_run_at,
    )
    assert [inv.billing_reason for inv in w.invoices(bad)] == [BillingReason.SUBSCRIPTION_CREATE]
    # It stays due: the next run tries again (and fails again) without billing anyone twice.
    again = w.run()
    assert (again.invoices, [f[0] for f in again.failures]) == ([], [bad.id])


def test_a_run_can_count_invoices_without_keeping_them(make_world: Any) -> None:
    w = make_world(at(2024, 1, 31, 10))
    subs = [subscribe(w, [fee()]) for _ in range(3)]
    with pytest.raises(ValidationError):
        w.billing.run_due(at(2024, 3, 1), batch_size=0)
    w.clock.set(at(2024, 3, 1))
    report = w.billing.run_due(batch_size=2, keep_invoices=False)  # two batches
    assert (report.subscription_count, report.invoices, report.invoice_count) == (3, [], 3)
    assert report.notification_count == 3
    assert repr(report) == "<RunReport 3 subscriptions, 3 invoices, 3 notifications, 0 failures>"
    for sub in subs:
        cycle = [inv for inv in w.invoices(sub) if inv.billing_reason is BillingReason.SUBSCRIPTION_CYCLE]
        assert [inv.amount_due for inv in cycle] == [D("20.00")]


def test_rerun_at_the_same_instant_issues_nothing(make_world: Any) -> None:
    w = make_world(at(2024, 1, 31, 10))
    sub = subscribe(w, [fee(), calls(w.meter_id)])
    w.usage(150, at(2024, 2, 1))
    first = w.run(at(2024, 4, 1))
    assert len(first.invoices) == 2
    stored = [inv.id for inv in w.invoices(sub)]
    version = w.sub(sub).version
    notified = len(w.events())

    second = w.run()
    assert (second.subscription_count, second.notification_count) == (0, 0)
    assert (second.invoices, second.failures) == ([], [])
    assert [inv.id for inv in w.invoices(sub)] == stored
    assert w.sub(sub).version == version
    assert len(w.events()) == notified


# -- notifications ---------------------------------------------------------------------------------


def test_notifications_recorded_along_the_lifecycle(make_world: Any) -> None:
    start = at(2024, 1, 31, 10)
    w = make_world(start)
    plan = w.s.plans.create(name="Pro", prices=[fee(trial_period_days=14)])
    base = {"customer_id": w.customer.id, "plan_id": plan.id, "currency": "usd", "billing_period": "MONTHLY"}
    active = w.s.subscriptions.create(**base, trial_period_days=0)
    draft = w.s.subscriptions.create(**base, subscription_status="draft")
    trial = w.s.subscriptions.create(**base)

    assert {e.entity_id for e in w.events("subscription.created")} == {active.id, trial.id}
    created = next(e for e in w.events("subscription.created") if e.entity_id == active.id)
    assert created.payload["event_type"] == "subscription.created"
    assert created.payload["subscription"]["id"] == active.id
    assert created.payload["subscription"]["subscription_status"] == "active"
    assert created.payload["subscription"]["customer"]["external_id"] == "c1"
    assert [e.entity_id for e in w.events("subscription.draft.created")] == [draft.id]

    (finalized,) = w.events("invoice.update.finalized")
    (opening,) = w.invoices(active)
    assert finalized.entity_type == "invoice"
    assert finalized.entity_id == opening.id
    assert finalized.payload["event_type"] == "invoice.update.finalized"
    invoice = finalized.payload["invoice"]
    assert invoice["id"] == opening.id
    assert invoice["invoice_number"] == "INV-202401-00001"
    assert invoice["subscription_id"] == active.id
    assert invoice["invoice_status"] == "FINALIZED"
    assert D(invoice["amount_due"]) == D("20.00")
    assert all("trace" not in line for line in invoice["line_items"])

    w.clock.set(at(2024, 2, 1))
    w.s.subscriptions.activate(draft.id)
    (activated,) = w.events("subscription.activated")
    assert activated.entity_id == draft.id
    assert activated.payload["subscription"]["subscription_status"] == "trialing"  # inherited trial

    # The active subscription's period ends 29 Feb 10:00: the notice is due from 26 Feb 10:00.
    w.run(at(2024, 2, 26, 9))
    assert w.events("subscription.renewal.due") == []
    report = w.run(at(2024, 2, 26, 12))
    assert report.invoices == []
    (due,) = w.events("subscription.renewal.due")
    assert due.entity_id == active.id
    assert due.payload["event_type"] == "subscription.renewal.due"
    assert due.payload["subscription"]["current_period_end"].startswith("2024-02-29T10:00:00")
    w.run(at(2024, 2, 27))
    assert len(w.events("subscription.renewal.due")) == 1  # once per period

    # Both 14-day trials (the draft kept its start, 31 Jan 10:00) ended on 14 Feb 10:00.
    assert {e.entity_id for e in w.events("subscription.updated")} == {trial.id, draft.id}
    converted = next(e for e in w.events("subscription.updated") if e.entity_id == trial.id)
    assert converted.payload["subscription"]["subscription_status"] == "active"
    trial_invoices = [
        e for e in w.events("invoice.update.finalized") if e.payload["invoice"]["subscription_id"] == trial.id
    ]
    assert [e.payload["invoice"]["billing_reason"] for e in trial_invoices] == ["SUBSCRIPTION_TRIAL_END"]
