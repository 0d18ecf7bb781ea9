"""Customer and subscription views on the memory store (storage is the same reads the contract
suite covers): subscription usage against the invoice, the customer usage summary, the invoice
summary, usage records and the raw subscription update.

Worlds: tests/billed_world.py (a subscription billed through 1 June: opening invoice 1,322.15,
period-end invoice 1,483.93 with May's 150 calls, 12.50) and tests/entitlement_catalogue.py (Pro
grants 1,000 ``calls`` a month).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import MemoryStorage, Scoped, TestClock
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.subscription_schedules import ScheduleStatus
from billingkit.errors import InvalidOperation, NotFound, ValidationError, VersionConflict
from tests.billed_world import BILLED_AT, Billed, billed_world
from tests.entitlement_catalogue import EntitlementCatalogue, attach_addon, build_catalogue

D = Decimal


@pytest.fixture
def storage() -> Iterator[Any]:
    store = MemoryStorage()
    yield store
    store.close()


@pytest.fixture
def w(storage: Any) -> Billed:
    return billed_world(storage)


def _usage_total(lines: Any) -> Decimal:
    return sum((line.amount for line in lines if line.price_type is PriceType.USAGE), D(0))


# -- subscription usage -------------------------------------------------------------------------


def test_subscription_usage_is_what_the_period_invoice_charges(w: Billed) -> None:
    w.usage(230, datetime(2026, 6, 3, tzinfo=UTC), prefix="june")
    w.clock.set(datetime(2026, 6, 20, tzinfo=UTC))

    usage = w.s.subscriptions.usage(subscription_id=w.sub.id)
    preview = w.s.invoices.preview(w.sub.id)

    # 230 calls, SLAB: 100 x 0.10 + 130 x 0.05 = 16.50
    (charge,) = usage.charges
    assert (charge.line.quantity, charge.line.amount, charge.line.display_name) == (
        D("230"),
        D("16.50"),
        "Calls",
    )
    assert charge.price is not None and charge.price.id == charge.line.price_id
    assert (usage.amount, usage.currency) == (D("16.50"), "eur")
    assert usage.amount == _usage_total(preview.line_items)
    assert (usage.start_time, usage.end_time) == (BILLED_AT.replace(hour=0), datetime(2026, 7, 1, tzinfo=UTC))
    data = usage.to_dict()
    assert (data["amount"], data["display_amount"], data["has_overage"]) == ("16.50", "€16.50", False)
    assert data["charges"][0]["meter_id"] == w.meter_id

    w.clock.set(datetime(2026, 7, 1, 1, tzinfo=UTC))
    w.billing.run_due()
    july = [i for i in w.invoices() if i.period_end == datetime(2026, 7, 1, tzinfo=UTC)]
    (issued,) = july
    assert _usage_total(issued.line_items) == usage.amount


def test_subscription_usage_of_another_window_and_refusals(w: Billed) -> None:
    may = w.s.subscriptions.usage(
        subscription_id=w.sub.id,
        start_time=datetime(2026, 5, 1, tzinfo=UTC),
        end_time=datetime(2026, 6, 1, tzinfo=UTC),
    )
    assert may.amount == _usage_total(w.cycle().line_items) == D("12.50")
    with pytest.raises(ValidationError) as lifetime:
        w.s.subscriptions.usage(subscription_id=w.sub.id, lifetime_usage=True)
    assert lifetime.value.field == "lifetime_usage"
    with pytest.raises(ValidationError):
        w.s.subscriptions.usage(subscription_id=w.sub.id, start_time=datetime(2026, 5, 1, tzinfo=UTC))
    with pytest.raises(NotFound):
        w.s.subscriptions.usage(subscription_id="subs_missing")


# -- customer usage summary ---------------------------------------------------------------------


@pytest.fixture
def cat(billing: Any, setup: Any) -> EntitlementCatalogue:
    scoped: Scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    return build_catalogue(scoped)


def _calls(scoped: Scoped, count: int, start: datetime) -> None:
    scoped.events.ingest_bulk(
        [
            {
                "event_name": "api.call",
                "external_customer_id": "ada",
                "timestamp": (start + timedelta(minutes=i)).isoformat(),
                "event_id": f"c{i}",
            }
            for i in range(count)
        ]
    )


def test_the_usage_summary_measures_each_metered_feature_against_its_limit(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    s = cat.scoped
    _calls(s, 250, clock.now())
    clock.advance(timedelta(days=2))

    summary = s.customers.usage_summary(customer_id=cat.customer_id)

    by_key = {f.granted.feature.lookup_key: f for f in summary.features}
    assert set(by_key) == {"calls", "sso", "tier", "regions"}
    calls = by_key["calls"]
    # 250 of 1,000: 25.00 %; the window is the current period (reset MONTHLY)
    assert (calls.current_usage, calls.total_limit, calls.usage_percent) == (D("250"), 1000, D("25.00"))
    assert (calls.is_unlimited, calls.granted.entitlement.is_soft_limit) == (False, False)
    assert calls.window is not None and calls.window.end == cat.subscription.current_period_end
    sso = by_key["sso"]
    assert (sso.current_usage, sso.total_limit, sso.usage_percent, sso.window) == (D(0), None, None, None)
    data = summary.to_dict()
    assert data["period"] == {
        "start_time": "2026-05-01T09:30:00Z",
        "end_time": "2026-06-01T09:30:00Z",
        "period": "monthly",
    }
    assert data["pagination"] == {"limit": 4, "offset": 0, "total": 4}
    assert data["features"][0]["current_usage"] == "250"

    by_lookup = s.customers.usage_summary(customer_lookup_key="ada", feature_lookup_keys=["calls"])
    assert [f.granted.feature.id for f in by_lookup.features] == [cat.calls]
    assert (
        s.customers.usage_summary(customer_id=cat.customer_id, subscription_ids=["subs_other"]).features == ()
    )


def test_an_unlimited_source_makes_the_feature_unlimited(cat: EntitlementCatalogue, clock: TestClock) -> None:
    attach_addon(cat.scoped, cat.subscription.id, cat.unlimited, clock.now())
    _calls(cat.scoped, 5, clock.now())
    clock.advance(timedelta(hours=1))
    (calls,) = cat.scoped.customers.usage_summary(
        customer_id=cat.customer_id, feature_ids=[cat.calls]
    ).features
    assert (calls.current_usage, calls.total_limit, calls.is_unlimited, calls.usage_percent) == (
        D("5"),
        None,
        True,
        None,
    )


def test_the_usage_summary_needs_one_customer(cat: EntitlementCatalogue) -> None:
    s = cat.scoped
    with pytest.raises(ValidationError) as none:
        s.customers.usage_summary()
    assert none.value.field == "customer_id"
    with pytest.raises(ValidationError) as disagree:
        s.customers.usage_summary(customer_id=cat.customer_id, customer_lookup_key="bob")
    assert disagree.value.field == "customer_lookup_key"
    with pytest.raises(NotFound):
        s.customers.usage_summary(customer_lookup_key="nobody")


# -- invoice summary ----------------------------------------------------------------------------


def test_the_invoice_summary_sums_finalized_invoices_per_currency(w: Billed) -> None:
    opening, cycle = w.opening(), w.cycle()
    assert (opening.total, cycle.total) == (D("1322.15"), D("1483.93"))

    summary = w.s.customers.invoice_summary(w.customer.id)

    (eur,) = summary.summaries
    assert (summary.customer_id, summary.default_currency, eur.currency) == (w.customer.id, "eur", "eur")
    assert (eur.total_invoice_count, eur.total_revenue_amount) == (2, D("2806.08"))
    assert (eur.unpaid_invoice_count, eur.total_unpaid_amount) == (2, D("2806.08"))
    # usage: the 150 calls (12.50); fixed: May's Base after its 10 % coupon (1,111.05) + June's 1,234.50
    assert (eur.unpaid_usage_charges, eur.unpaid_fixed_charges) == (D("12.50"), D("2345.55"))
    overdue = [i for i in (opening, cycle) if i.due_date is not None and i.due_date < w.clock.now()]
    assert eur.overdue_invoice_count == len(overdue)

    w.clock.set(datetime(2026, 9, 1, tzinfo=UTC))  # both long past due (the billing run not run)
    later = w.s.customers.invoice_summary(w.customer.id).summaries[0]
    assert (later.overdue_invoice_count, later.total_overdue_amount) == (2, D("2806.08"))

    w.s.invoices.update_payment(opening.id, payment_status="SUCCEEDED", amount=str(opening.amount_due))
    paid = w.s.customers.invoice_summary(w.customer.id).summaries[0]
    assert (paid.unpaid_invoice_count, paid.total_unpaid_amount, paid.total_revenue_amount) == (
        1,
        D("1483.93"),
        D("2806.08"),
    )
    assert paid.to_dict()["total_unpaid_amount"] == "1483.93"
    with pytest.raises(NotFound):
        w.s.customers.invoice_summary("cust_missing")


# -- usage records ------------------------------------------------------------------------------


def test_usage_records_are_the_finalized_invoices_usage(w: Billed) -> None:
    cycle = w.cycle()
    page = w.s.usage.records()
    (record,) = page.items  # the opening invoice bills no usage
    assert (page.total, page.limit, page.offset) == (1, 50, 0)
    assert (record.subscription_id, record.customer_id, record.customer_external_id, record.plan_id) == (
        w.sub.id,
        w.customer.id,
        "c1",
        w.plan.id,
    )
    assert (record.period_start, record.period_end) == (cycle.period_start, cycle.period_end)
    assert (record.quantity, record.amount, record.currency, record.synced) == (
        D("150"),
        D("12.50"),
        "eur",
        False,
    )
    assert record.id == "usgrec_" + cycle.id.removeprefix("inv_")
    data = record.to_dict()
    assert (data["amount"], data["syncs"], data["status"]) == ("12.50", {}, "published")

    def count(**fields: Any) -> int:
        return w.s.usage.records(**fields).total

    assert count(subscription_id=w.sub.id, period_start=cycle.period_start, period_end=cycle.period_end) == 1
    assert count(plan_id="plan_other") == 0
    assert count(customer_external_id="c1") == 1 and count(customer_external_id="nobody") == 0
    assert count(currency="EUR") == 1 and count(currency="usd") == 0
    assert count(synced=True) == 0 and count(synced=False) == 1
    assert count(status="archived") == 0
    number = {"field": "amount", "data_type": "number"}
    assert count(filters=[{**number, "operator": "gt", "value": {"number": 12}}]) == 1
    assert count(filters=[{**number, "operator": "gt", "value": {"number": 12.5}}]) == 0
    assert count(filters=[{"field": "period_end", "operator": "after", "data_type": "date",
                           "value": {"date": "2026-05-31T00:00:00Z"}}]) == 1  # fmt: skip
    assert count(start_time=BILLED_AT + timedelta(hours=1)) == 0
    with pytest.raises(ValidationError) as unknown:
        w.s.usage.records(sort=[{"field": "nope", "direction": "asc"}])
    assert unknown.value.field == "sort"
    with pytest.raises(ValidationError) as bad:
        w.s.usage.records(filters=[{"field": "nope", "operator": "eq", "value": {"string": "x"}}])
    assert bad.value.field == "filters"


def test_usage_records_page_and_sort(w: Billed) -> None:
    w.usage(10, datetime(2026, 6, 3, tzinfo=UTC), prefix="june")
    w.clock.set(datetime(2026, 7, 1, 1, tzinfo=UTC))
    w.billing.run_due()
    newest = w.s.usage.records()
    assert [r.quantity for r in newest.items] == [D("10"), D("150")]
    asc = w.s.usage.records(sort=[{"field": "amount", "direction": "asc"}], limit=1, offset=0)
    assert ([r.amount for r in asc.items], asc.total) == ([D("1.00")], 2)
    second = w.s.usage.records(order="asc", limit=1, offset=1)
    assert [r.quantity for r in second.items] == [D("10")]


# -- the raw subscription update ----------------------------------------------------------------


def test_cancel_at_period_end_schedules_and_withdraws_the_cancellation(w: Billed) -> None:
    sub = w.s.subscriptions.get(w.sub.id)
    scheduled = w.s.subscriptions.update(sub.id, cancel_at_period_end=True, version=sub.version)
    assert scheduled.cancel_at_period_end and scheduled.cancel_at == sub.current_period_end
    (pending,) = w.s.subscriptions.schedules(sub.id).schedules
    assert pending.schedule.schedule_status is ScheduleStatus.PENDING
    # repeating it changes nothing
    assert w.s.subscriptions.update(sub.id, cancel_at_period_end=True) == scheduled

    withdrawn = w.s.subscriptions.update(sub.id, cancel_at_period_end=False)
    assert (withdrawn.cancel_at_period_end, withdrawn.cancel_at) == (False, None)
    (cancelled,) = w.s.subscriptions.schedules(sub.id).schedules
    assert cancelled.schedule.schedule_status is ScheduleStatus.CANCELLED

    at = datetime(2026, 6, 15, tzinfo=UTC)
    dated = w.s.subscriptions.update(sub.id, cancel_at=at)
    assert (dated.cancel_at, dated.end_date, dated.cancel_at_period_end) == (
        at,
        at,
        True,
    )  # the period ends then
    moved = w.s.subscriptions.update(sub.id, cancel_at=at + timedelta(days=2))
    assert moved.cancel_at == at + timedelta(days=2)
    statuses = sorted(v.schedule.schedule_status.value for v in w.s.subscriptions.schedules(sub.id).schedules)
    assert statuses == ["cancelled", "cancelled", "pending"]


def test_what_the_update_refuses_writes_nothing(w: Billed) -> None:
    sub = w.s.subscriptions.get(w.sub.id)
    with pytest.raises(VersionConflict):
        w.s.subscriptions.update(sub.id, cancel_at_period_end=True, version=sub.version - 1)
    with pytest.raises(ValidationError) as status:
        w.s.subscriptions.update(sub.id, status="paused")
    assert status.value.field == "status"
    with pytest.raises(ValidationError) as parent:
        w.s.subscriptions.update(sub.id, parent_subscription_id="subs_other")
    assert parent.value.field == "parent_subscription_id"
    with pytest.raises(ValidationError) as both:
        w.s.subscriptions.update(
            sub.id, cancel_at=datetime(2026, 6, 15, tzinfo=UTC), cancel_at_period_end=True
        )
    assert both.value.field == "cancel_at_period_end"
    with pytest.raises(ValidationError):
        w.s.subscriptions.update(sub.id, cancel_at=datetime(2026, 5, 15, tzinfo=UTC))  # in the past
    assert w.s.subscriptions.get(sub.id) == sub
    # unchanged values are accepted and change nothing
    assert w.s.subscriptions.update(sub.id, status="active", parent_subscription_id="") == sub
    w.s.subscriptions.cancel(sub.id, cancellation_type="immediate")
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.update(sub.id, cancel_at_period_end=True)
