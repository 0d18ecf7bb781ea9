"""Plan change v1 (archive and replace) through the library, on every store, in a 30-day June:
the old subscription cancelled with its usage invoiced, the new one opened with the old unused
time netted on its opening invoice, end-of-period changes run by the worker, previews that equal
the execution and write nothing, refusals that write nothing."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit import InvalidOperation, ValidationError
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.domain.subscription_changes import ChangeKind
from billingkit.domain.subscription_schedules import ScheduleStatus
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.ports import Storage
from tests.cancellations import FEE, World, at, calls, june, make_world
from tests.store_rows import every_row

D = Decimal
MONTHLY = {
    "billing_cadence": "RECURRING",
    "billing_cycle": "anniversary",
    "billing_period": "MONTHLY",
}


@pytest.fixture
def world(storage: Storage) -> World:
    return make_world(storage)


def _plan(w: World, name: str, amount: str) -> str:
    prices = [{**FEE, "amount": amount, "display_name": name}, calls(w.meter_id)]
    return w.s.plans.create(name=name, prices=prices).id


def _on(w: World, amount: str) -> Subscription:
    plan_id = _plan(w, f"Plan {amount}", amount)
    return w.s.subscriptions.create(
        customer_id=w.customer.id, plan_id=plan_id, currency="usd", billing_period="MONTHLY"
    )


def _amounts(invoice: Invoice) -> list[tuple[str, Decimal]]:
    return [(line.display_name, line.amount) for line in invoice.line_items]


def _change_rows(w: World, sub_id: str) -> list[Any]:
    with w.uow() as uow:
        query = ListQuery(filters=(Filter("subscription_id", Op.EQ, sub_id),), limit=100)
        return list(uow.subscription_changes.list(query).items)


def test_an_upgrade_cancels_the_old_subscription_and_nets_its_unused_time_on_the_new_opening(
    world: World,
) -> None:
    w = world
    old = _on(w, "30.00")
    target = _plan(w, "Max", "90.00")
    w.usage(100, june(5))  # 100 calls x 0.10 = 10.00 in arrears
    w.clock.set(june(16))  # 15 of 30 days used

    result = w.s.subscriptions.replace_plan(
        old.id, target_plan_id=target, proration_behavior="create_prorations", **MONTHLY
    )

    assert result.change_type.value == "upgrade" and not result.is_scheduled
    cancelled = w.sub(old)
    assert cancelled.subscription_status is SubscriptionStatus.CANCELLED
    assert cancelled.cancelled_at == june(16)
    assert cancelled.metadata["cancellation_reason"] == "subscription_change"
    # The old subscription: its opening 30.00, then its usage up to now, invoiced at the change.
    opening, used = w.invoices(old)
    assert (opening.billing_reason, opening.total) == (BillingReason.SUBSCRIPTION_CREATE, D("30.00"))
    assert _amounts(used) == [("Calls", D("10.00"))]
    assert (used.period_start, used.period_end) == (june(1), june(16))
    assert w.credits() == []  # no wallet credit: the unused 15.00 is netted on the new opening

    new = result.new_subscription
    assert new is not None and new.id != old.id
    new = w.sub(new)
    assert (new.subscription_status, new.plan_id) == (SubscriptionStatus.ACTIVE, target)
    assert (new.start_date, new.billing_anchor) == (june(16), june(16))
    assert (new.current_period_start, new.current_period_end) == (june(16), at(7, 16))
    assert new.trial_end is None
    (netted,) = w.invoices(new)
    assert netted.billing_reason is BillingReason.SUBSCRIPTION_UPDATE
    assert _amounts(netted) == [
        ("Remaining time on Max", D("90.00")),
        ("Unused time on Plan 30.00", D("-15.00")),
    ]
    assert (netted.subtotal, netted.total) == (D("75.00"), D("75.00"))
    assert (netted.period_start, netted.period_end) == (june(16), at(7, 16))
    assert result.invoice is not None and result.invoice.id == netted.id
    figures = result.proration
    assert (figures.credit_amount, figures.charge_amount, figures.net_amount) == (
        D("15.00"),
        D("90.00"),
        D("75.00"),
    )
    assert (figures.days_used, figures.days_remaining) == (15, 15)

    (row,) = _change_rows(w, old.id)
    assert (row.change_kind, row.new_subscription_id, row.invoice_id) == (
        ChangeKind.PLAN_CHANGE,
        new.id,
        netted.id,
    )
    assert (row.from_plan_id, row.to_plan_id, row.change_type.value) == (old.plan_id, target, "upgrade")
    assert len(w.events("subscription.cancelled", old)) == 1
    assert len(w.events("subscription.created", new)) == 1
    assert len(w.events("subscription.plan_changed", new)) == 1

    # The first renewal bills the next period only: its first period was paid by the netted invoice.
    w.usage(20, at(7, 1), prefix="july")
    w.run(at(7, 16))
    renewal = w.invoices(new)[1]
    assert (renewal.period_start, renewal.period_end) == (june(16), at(7, 16))
    assert sorted(_amounts(renewal)) == [("Calls", D("2.00")), ("Max", D("90.00"))]
    (fee,) = [line for line in renewal.line_items if line.display_name == "Max"]
    assert (fee.period_start, fee.period_end) == (at(7, 16), at(8, 16))
    assert len(w.invoices(new)) == 2


def test_without_proration_the_new_opening_invoice_is_the_usual_one(world: World) -> None:
    w = world
    old = _on(w, "30.00")
    target = _plan(w, "Max", "90.00")
    w.clock.set(june(16))
    result = w.s.subscriptions.replace_plan(
        old.id, target_plan_id=target, proration_behavior="none", **MONTHLY
    )
    assert result.new_subscription is not None
    (opening,) = w.invoices(result.new_subscription)
    assert opening.billing_reason is BillingReason.SUBSCRIPTION_CREATE
    assert (opening.total, _amounts(opening)) == (D("90.00"), [("Max", D("90.00"))])
    assert (result.proration.credit_amount, result.proration.charge_amount) == (D("0"), D("90.00"))
    assert w.credits() == []


def test_a_downgrade_with_a_credit_above_the_new_charge_puts_the_excess_in_the_wallet(world: World) -> None:
    w = world
    old = _on(w, "90.00")
    target = _plan(w, "Lite", "30.00")
    w.clock.set(june(16))
    result = w.s.subscriptions.replace_plan(old.id, target_plan_id=target, **MONTHLY)  # create_prorations
    assert result.change_type.value == "downgrade"
    assert result.new_subscription is not None
    # 45.00 unused on the old plan against a 30.00 opening: no invoice, 15.00 into the wallet.
    assert w.invoices(result.new_subscription) == []
    assert [row.credit_amount for row in w.credits()] == [D("15.00")]
    assert result.invoice is None and result.transaction is not None
    assert result.proration.net_amount == D("-15.00")


def test_the_preview_equals_the_execution_and_writes_nothing(world: World, storage: Storage) -> None:
    w = world
    old = _on(w, "30.00")
    target = _plan(w, "Max", "90.00")
    w.usage(100, june(5))
    w.clock.set(june(16))
    before = every_row(storage)
    preview = w.s.subscriptions.preview_replace_plan(old.id, target_plan_id=target, **MONTHLY)
    assert every_row(storage) == before
    assert w.s.notifications.list(event_type="subscription.plan_changed").items == []

    wire = preview.to_dict()
    assert wire["change_type"] == "upgrade"
    assert (wire["current_plan"]["id"], wire["target_plan"]["id"]) == (old.plan_id, target)
    details = wire["proration_details"]
    assert (details["credit_amount"], details["charge_amount"], details["net_amount"]) == (
        "15.00",
        "90.00",
        "75.00",
    )
    assert (details["days_used"], details["days_remaining"]) == (15, 15)
    invoice = wire["next_invoice_preview"]
    assert (invoice["subtotal"], D(invoice["tax_amount"]), invoice["total"]) == ("75.00", 0, "75.00")
    assert [(line["amount"], line["is_proration"]) for line in invoice["line_items"]] == [
        ("90.00", True),
        ("-15.00", True),
    ]
    assert wire["new_billing_cycle"]["period_start"] == "2026-06-16T00:00:00Z"
    assert wire["new_billing_cycle"]["period_end"] == "2026-07-16T00:00:00Z"

    result = w.s.subscriptions.replace_plan(old.id, target_plan_id=target, **MONTHLY)
    assert result.proration.to_dict() == preview.proration.to_dict()
    assert result.invoice is not None and result.invoice.total == D("75.00")


def test_an_end_of_period_change_runs_at_the_boundary_without_proration(world: World) -> None:
    w = world
    old = _on(w, "30.00")
    target = _plan(w, "Max", "90.00")
    w.clock.set(june(10))
    result = w.s.subscriptions.replace_plan(
        old.id, target_plan_id=target, change_at="end_of_period", **MONTHLY
    )
    assert result.is_scheduled and result.new_subscription is None
    assert result.schedule is not None and result.schedule.scheduled_at == at(7, 1)
    assert w.sub(old).subscription_status is SubscriptionStatus.ACTIVE
    with pytest.raises(InvalidOperation, match="pending plan change"):
        w.s.subscriptions.replace_plan(old.id, target_plan_id=target, change_at="end_of_period", **MONTHLY)

    w.usage(50, june(20))  # 5.00 of usage in the old subscription's last period
    w.run(at(7, 1))
    ended = w.sub(old)
    assert ended.subscription_status is SubscriptionStatus.CANCELLED and ended.cancelled_at == at(7, 1)
    last = [inv for inv in w.invoices(old) if inv.billing_reason is BillingReason.SUBSCRIPTION_CYCLE]
    assert len(last) == 1  # the last period billed once: its usage, no July fee of the old plan
    assert _amounts(last[0]) == [("Calls", D("5.00"))]
    schedule = w.s.subscriptions.get_schedule(result.schedule.id).schedule
    assert schedule.schedule_status is ScheduleStatus.EXECUTED
    new_id = schedule.execution_result["new_subscription_id"] if schedule.execution_result else ""
    new = w.s.subscriptions.get(new_id)
    assert (new.plan_id, new.start_date, new.current_period_end) == (target, at(7, 1), at(8, 1))
    (opening,) = w.invoices(new)
    assert (opening.billing_reason, opening.total) == (BillingReason.SUBSCRIPTION_CREATE, D("90.00"))
    assert w.credits() == []
    (row,) = _change_rows(w, old.id)
    assert (row.schedule_id, row.new_subscription_id) == (schedule.id, new.id)
    w.run(at(7, 2))  # nothing more
    assert len(w.invoices(old)) == 2 and len(w.invoices(new)) == 1


def test_a_withdrawn_end_of_period_change_keeps_the_old_subscription(world: World) -> None:
    w = world
    old = _on(w, "30.00")
    target = _plan(w, "Max", "90.00")
    result = w.s.subscriptions.replace_plan(
        old.id, target_plan_id=target, change_at="end_of_period", **MONTHLY
    )
    assert result.schedule is not None
    w.s.subscriptions.cancel_schedule(result.schedule.id)
    w.run(at(7, 1))
    renewed = w.sub(old)
    assert renewed.subscription_status is SubscriptionStatus.ACTIVE
    assert (renewed.plan_id, renewed.current_period_start) == (old.plan_id, at(7, 1))
    assert w.invoices(old)[-1].total == D("30.00")  # July's fee of the old plan
    assert ("Plan 30.00", D("30.00")) in _amounts(w.invoices(old)[-1])
    assert _change_rows(w, old.id) == []


@pytest.mark.parametrize(
    ("fields", "error", "reason"),
    [
        ({"target_plan_id": "plan_missing"}, ValidationError, "target_plan_id"),
        ({"billing_period": "ANNUAL"}, ValidationError, "billing_period"),
        ({"billing_period_count": 2}, ValidationError, "billing_period_count"),
        ({"billing_cadence": "ONETIME"}, ValidationError, "billing_cadence"),
        ({"same_plan": True}, InvalidOperation, "already on plan"),
    ],
)
def test_bad_requests_are_refused_and_write_nothing(
    world: World, storage: Storage, fields: dict[str, Any], error: type[Exception], reason: str
) -> None:
    w = world
    old = _on(w, "30.00")
    target = old.plan_id if fields.get("same_plan") else _plan(w, "Max", "90.00")
    fields = {key: value for key, value in fields.items() if key != "same_plan"}
    w.clock.set(june(16))
    before = every_row(storage)
    with pytest.raises(error) as raised:
        w.s.subscriptions.replace_plan(old.id, **{"target_plan_id": target, **MONTHLY, **fields})
    text = getattr(raised.value, "field", None) or str(raised.value)
    assert reason in text
    assert every_row(storage) == before


def test_subscriptions_that_cannot_change_plan_are_refused(world: World, storage: Storage) -> None:
    w = world
    target = _plan(w, "Max", "90.00")
    pending = _on(w, "30.00")
    w.s.subscriptions.cancel(pending.id, cancellation_type="end_of_period")
    gone = _on(w, "30.00")
    w.s.subscriptions.cancel(gone.id, cancellation_type="immediate")
    w.clock.set(june(16))
    before = every_row(storage)
    with pytest.raises(InvalidOperation, match="pending cancellation"):
        w.s.subscriptions.replace_plan(pending.id, target_plan_id=target, **MONTHLY)
    with pytest.raises(InvalidOperation, match="cancelled"):
        w.s.subscriptions.preview_replace_plan(gone.id, target_plan_id=target, **MONTHLY)
    assert every_row(storage) == before


def test_a_trialing_subscription_changes_without_credit(world: World) -> None:
    w = world
    plan_id = _plan(w, "Plan 30.00", "30.00")
    old = w.s.subscriptions.create(
        customer_id=w.customer.id,
        plan_id=plan_id,
        currency="usd",
        billing_period="MONTHLY",
        trial_period_days=14,
    )
    target = _plan(w, "Max", "90.00")
    w.clock.set(june(5))
    result = w.s.subscriptions.replace_plan(old.id, target_plan_id=target, **MONTHLY)
    assert result.proration.credit_amount == D("0")
    assert w.invoices(old) == []  # a trial bills nothing, not even at its cancellation
    assert result.new_subscription is not None
    (opening,) = w.invoices(result.new_subscription)
    assert (opening.billing_reason, opening.total) == (BillingReason.SUBSCRIPTION_UPDATE, D("90.00"))
    assert w.s.subscriptions.schedules(old.id).schedules == ()
