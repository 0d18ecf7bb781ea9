"""Plan change v2, in place, through the library on every store (notes §3.4): the money of an
upgrade and a downgrade at mid-period, idempotency, previews that write nothing, end-of-period
changes run by the worker, carried and replaced lines, add-ons carried or dropped.

June 2026 has 30 days: a change on 16 June leaves exactly half of the period.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit.domain.addon_associations import AddonStatus
from billingkit.domain.invoices import BillingReason, InvoiceType
from billingkit.domain.queries import ListQuery
from billingkit.domain.subscription_changes import ChangeKind, SubscriptionChange, SubscriptionChangeType
from billingkit.domain.subscription_schedules import ScheduleStatus
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.wallets import TransactionReason
from billingkit.errors import IdempotencyConflict, InvalidOperation
from billingkit.services.plan_change_in_place_results import PlanChangeResult
from tests.cancellations import FEE, World, at, calls, june, make_world
from tests.store_rows import every_row

D = Decimal
UP = {"proration_behavior": "create_prorations"}


def plan(w: World, name: str, *prices: dict[str, Any]) -> str:
    return w.s.plans.create(name=name, prices=list(prices)).id


def fee(amount: str, **extra: Any) -> dict[str, Any]:
    return {**FEE, "amount": amount, **extra}


def updates(w: World, sub: Subscription) -> list[Any]:
    return [i for i in w.invoices(sub) if i.billing_reason is BillingReason.SUBSCRIPTION_UPDATE]


def _changes(w: World) -> list[SubscriptionChange]:
    """Every recorded subscription change."""
    return list(w.s.run(lambda uow, ctx: uow.subscription_changes.list(ListQuery(limit=100)).items))


@pytest.fixture
def w(storage: Any) -> World:
    return make_world(storage)


# -- money -------------------------------------------------------------------------------------------


def test_upgrade_at_mid_period_is_one_net_invoice_and_a_retry_changes_nothing(w: World) -> None:
    sub = w.subscribe(prices=[FEE])  # 30.00 a month in advance
    target = plan(w, "Max", fee("90.00", display_name="Max"))
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, idempotency_key="up-1", **UP)

    assert result.change_type is SubscriptionChangeType.UPGRADE
    saved = result.subscription
    assert (saved.id, saved.plan_id, saved.version) == (sub.id, target, sub.version + 1)
    assert (saved.billing_anchor, saved.current_period_start, saved.current_period_end) == (
        sub.billing_anchor,
        sub.current_period_start,
        sub.current_period_end,
    )
    invoice = result.invoice
    assert invoice is not None and result.wallet_transaction is None
    # credit 30.00 x 15/30 = 15.00, charge 90.00 x 15/30 = 45.00: one invoice of 30.00 net
    assert [ln.amount for ln in invoice.line_items] == [D("45.00"), D("-15.00")]
    assert (invoice.subtotal, invoice.total) == (D("30.00"), D("30.00"))
    assert (invoice.invoice_type, invoice.billing_reason) == (
        InvoiceType.ONE_OFF,
        BillingReason.SUBSCRIPTION_UPDATE,
    )
    assert (invoice.period_start, invoice.period_end) == (june(16), at(7, 1))
    old, new = saved.line_items
    assert (old.id, old.end_date, new.start_date, new.price_id) == (
        sub.line_items[0].id,
        june(16),
        june(16),
        w.s.prices.list(plan_ids=[target]).items[0].id,
    )
    answer = result.to_dict()
    assert [(c["change_action"], c["id"]) for c in answer["changed_resources"]["line_items"]] == [
        ("ended", old.id),
        ("created", new.id),
    ]
    (changed,) = answer["changed_resources"]["invoices"]
    assert (changed["action"], changed["id"], changed["status"], changed["invoice"]["total"]) == (
        "created",
        invoice.id,
        "issued",
        "30.00",
    )
    assert (answer["from_plan"]["id"], answer["to_plan"]["name"], answer["is_scheduled"]) == (
        sub.plan_id,
        "Max",
        False,
    )

    before = every_row(w.billing.storage)
    again = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, idempotency_key="up-1", **UP)
    assert every_row(w.billing.storage) == before  # the same key and request: nothing written
    assert again.replayed and again.to_dict() == answer
    assert [i.id for i in updates(w, sub)] == [invoice.id]
    (row,) = _changes(w)
    assert (row.change_kind, row.idempotency_key, row.invoice_id, row.to_plan_id) == (
        ChangeKind.PLAN_CHANGE_V2,
        "up-1",
        invoice.id,
        target,
    )
    assert len(w.events("subscription.plan_changed", sub)) == 1


def test_the_same_key_with_another_request_is_refused(w: World) -> None:
    sub = w.subscribe(prices=[FEE])
    target = plan(w, "Max", fee("90.00"))
    w.clock.set(june(16))
    w.s.subscriptions.change_plan(sub.id, target_plan_id=target, idempotency_key="k", **UP)
    before = every_row(w.billing.storage)
    with pytest.raises(IdempotencyConflict) as caught:
        w.s.subscriptions.change_plan(
            sub.id, target_plan_id=target, idempotency_key="k", proration_behavior="none"
        )
    assert caught.value.details["field"] == "idempotency_key"
    assert every_row(w.billing.storage) == before


def test_downgrade_at_mid_period_credits_the_wallet_and_issues_no_invoice(w: World) -> None:
    sub = w.subscribe(prices=[fee("90.00")])
    target = plan(w, "Lite", fee("30.00"))
    w.clock.set(june(16))
    preview = w.s.subscriptions.preview_plan_change(sub.id, target_plan_id=target, **UP)
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, **UP)
    assert result.change_type is SubscriptionChangeType.DOWNGRADE
    # credit 45.00, charge 15.00: 30.00 to the wallet, never a negative invoice
    assert result.invoice is None and result.wallet_credit == D("30.00") == preview.wallet_credit
    assert updates(w, sub) == []
    (credit,) = w.credits()
    assert (credit.credit_amount, credit.transaction_reason) == (
        D("30.00"),
        TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
    )
    (changed,) = result.to_dict()["changed_resources"]["invoices"]
    assert (changed["action"], changed["id"], changed["status"]) == ("wallet_credit", credit.id, "issued")
    assert changed["wallet_transaction"]["credit_amount"] == "30.00"
    (previewed,) = preview.to_dict()["changed_resources"]["invoices"]
    assert (previewed["action"], previewed["status"], previewed["wallet_transaction"]["amount"]) == (
        "wallet_credit",
        "preview",
        "30.00",
    )
    (row,) = _changes(w)
    assert (row.wallet_transaction_id, row.invoice_id, row.idempotency_key) == (credit.id, None, None)


def test_no_proration_moves_no_money_and_the_renewal_bills_the_new_plan(w: World) -> None:
    sub = w.subscribe(prices=[FEE])
    target = plan(w, "Max", fee("90.00", display_name="Max"))
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, proration_behavior="none")
    assert result.invoice is None and result.wallet_transaction is None and w.credits() == []
    w.run(at(7, 1))
    renewal = w.invoices(sub)[-1]
    assert [(ln.display_name, ln.amount) for ln in renewal.line_items] == [("Max", D("90.00"))]


# -- preview --------------------------------------------------------------------------------------


def _figures(result: PlanChangeResult) -> tuple[Any, ...]:
    invoice = result.invoice
    assert invoice is not None
    return (
        result.change_type,
        result.subscription.plan_id,
        [
            (c.action, c.line.price_id, c.line.quantity, c.line.start_date, c.line.end_date)
            for c in result.line_changes
        ],
        [(ln.display_name, ln.amount, ln.period_start, ln.period_end) for ln in invoice.line_items],
        (invoice.subtotal, invoice.total_tax, invoice.total),
    )


def test_preview_shows_what_execute_does_and_writes_nothing(w: World) -> None:
    sub = w.subscribe(prices=[FEE, calls(w.meter_id)])
    target = plan(w, "Max", fee("90.00", display_name="Max"), calls(w.meter_id))
    w.clock.set(june(16))
    before = every_row(w.billing.storage)
    preview = w.s.subscriptions.preview_plan_change(sub.id, target_plan_id=target, idempotency_key="p", **UP)
    scheduled = w.s.subscriptions.preview_plan_change(
        sub.id, target_plan_id=target, change_at="end_of_period", **UP
    )
    assert every_row(w.billing.storage) == before  # every table's rows, on every store
    assert preview.preview and preview.invoice is not None
    (changed,) = preview.to_dict()["changed_resources"]["invoices"]
    assert (changed["status"], changed["invoice"]["total"]) == ("preview", "30.00")
    assert (scheduled.is_scheduled, scheduled.scheduled_at, scheduled.schedule) == (True, at(7, 1), None)
    assert scheduled.subscription.plan_id == sub.plan_id and scheduled.invoice is None

    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, idempotency_key="p", **UP)
    assert _figures(preview) == _figures(result)
    assert preview.subscription.version == result.subscription.version
    # the calls price is the same on both plans: carried, same line, no money
    carried = [c for c in result.line_changes if c.action.value == "updated"]
    assert [c.line.id for c in carried] == [sub.line_items[1].id]


# -- end of period ----------------------------------------------------------------------------------


def test_end_of_period_change_runs_at_the_boundary_before_the_renewal(w: World) -> None:
    sub = w.subscribe(prices=[FEE, calls(w.meter_id)])
    target = plan(w, "Max", fee("90.00", display_name="Max"), {**calls(w.meter_id), "amount": "0.20"})
    w.usage(10, june(10))
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, change_at="end_of_period", **UP)
    assert result.is_scheduled and result.scheduled_at == at(7, 1) and result.schedule is not None
    answer = result.to_dict()
    assert (answer["schedule_id"], answer["scheduled_at"]) == (result.schedule.id, "2026-07-01T00:00:00Z")
    assert w.sub(sub).plan_id == sub.plan_id and updates(w, sub) == []
    with pytest.raises(InvalidOperation, match="pending plan change"):
        w.s.subscriptions.change_plan(sub.id, target_plan_id=target, **UP)

    w.run(at(7, 1))
    now = w.sub(sub)
    assert (now.id, now.plan_id) == (sub.id, target)
    renewal = w.invoices(sub)[-1]
    assert renewal.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
    # June's calls on the old line (10 x 0.10), July's fee on the new plan; nothing prorated
    assert sorted((ln.display_name, ln.amount) for ln in renewal.line_items) == [
        ("Calls", D("1.00")),
        ("Max", D("90.00")),
    ]
    assert updates(w, sub) == [] and w.credits() == []
    schedule = w.s.subscriptions.get_schedule(result.schedule.id).schedule
    assert schedule.schedule_status is ScheduleStatus.EXECUTED
    assert len(w.events("subscription.plan_changed", sub)) == 1


def test_withdrawing_the_schedule_keeps_the_old_plan(w: World) -> None:
    sub = w.subscribe(prices=[FEE])
    target = plan(w, "Max", fee("90.00", display_name="Max"))
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, change_at="end_of_period", **UP)
    assert result.schedule is not None
    w.s.subscriptions.cancel_schedule(result.schedule.id)
    w.run(at(7, 1))
    assert w.sub(sub).plan_id == sub.plan_id
    assert [(ln.display_name, ln.amount) for ln in w.invoices(sub)[-1].line_items] == [("Base", D("30.00"))]


def test_a_schedule_that_can_no_longer_run_fails_with_its_reason(w: World) -> None:
    sub = w.subscribe(prices=[FEE])
    target = plan(w, "Max", fee("90.00"))
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, change_at="end_of_period", **UP)
    assert result.schedule is not None
    w.s.plans.delete(target)
    w.run(at(7, 1))
    schedule = w.s.subscriptions.get_schedule(result.schedule.id).schedule
    assert schedule.schedule_status is ScheduleStatus.FAILED and "not found" in (schedule.error_message or "")
    assert w.sub(sub).plan_id == sub.plan_id


# -- lines ------------------------------------------------------------------------------------------


def test_usage_lines_close_and_open_and_the_period_invoice_bills_each_for_its_time(w: World) -> None:
    sub = w.subscribe(prices=[FEE, calls(w.meter_id)])
    target = plan(w, "Max", FEE, {**calls(w.meter_id), "amount": "0.20", "display_name": "Calls+"})
    w.usage(10, june(10), prefix="a")
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, **UP)
    assert result.change_type is SubscriptionChangeType.LATERAL  # usage counts nothing
    base, old_calls, new_calls = result.subscription.line_items
    assert base.id == sub.line_items[0].id and base.end_date is None  # the same fee: carried
    assert (old_calls.end_date, new_calls.start_date) == (june(16), june(16))
    assert result.invoice is None and result.wallet_transaction is None
    w.usage(20, june(20), prefix="b")
    w.run(at(7, 1))
    renewal = w.invoices(sub)[-1]
    assert sorted((ln.display_name, ln.amount) for ln in renewal.line_items) == [
        ("Base", D("30.00")),
        ("Calls", D("1.00")),  # 10 calls before the change at 0.10
        ("Calls+", D("4.00")),  # 20 after at 0.20
    ]


def test_a_single_seat_line_replaced_keeps_its_quantity(w: World) -> None:
    seat = fee("10.00", display_name="Seat")
    sub = w.subscribe(prices=[seat])
    w.store(sub, line_items=(sub.line_items[0].model_copy(update={"quantity": D(5)}),))
    target = plan(w, "Team", fee("20.00", display_name="Team seat"))
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, proration_behavior="none")
    assert result.subscription.line_items[1].quantity == D(5)
    assert result.change_type is SubscriptionChangeType.UPGRADE  # 50.00 -> 100.00 a period
    assert result.warnings == ()


def test_a_trialing_subscription_changes_lines_and_moves_no_money(w: World) -> None:
    sub = w.subscribe(prices=[FEE], trial_period_days=20)
    target = plan(w, "Max", fee("90.00"))
    w.clock.set(june(10))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, **UP)
    assert result.subscription.subscription_status.value == "trialing"
    assert result.invoice is None and result.wallet_transaction is None and updates(w, sub) == []


# -- add-ons ----------------------------------------------------------------------------------------


def _with_addon(w: World) -> tuple[Subscription, str]:
    addon = w.s.addons.create(
        name="Support", lookup_key="support", prices=[fee("30.00", display_name="Support")]
    )
    sub = w.subscribe(prices=[FEE], addons=[{"addon_id": addon.id}])
    return sub, addon.id


def test_addons_are_carried_by_default(w: World) -> None:
    sub, _ = _with_addon(w)
    target = plan(w, "Max", fee("90.00"))
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(sub.id, target_plan_id=target, **UP)
    (association,) = w.s.subscriptions.addon_associations(sub.id)
    assert association.addon_status is AddonStatus.ACTIVE and association.end_date is None
    addon_line = next(li for li in result.subscription.line_items if li.addon_association_id)
    assert addon_line.end_date is None
    assert result.invoice is not None and result.invoice.subtotal == D("30.00")
    assert [e["behaviour"] for e in result.to_dict()["entity_changes"]] == ["carry"]


def test_a_dropped_addon_ends_and_is_credited_in_the_same_settlement(w: World) -> None:
    sub, addon_id = _with_addon(w)
    (association,) = w.s.subscriptions.addon_associations(sub.id)
    target = plan(w, "Max", fee("90.00"))
    w.clock.set(june(16))
    result = w.s.subscriptions.change_plan(
        sub.id,
        target_plan_id=target,
        entity_policies={"addons": {"default_behaviour": "carry", "overrides": {association.id: "drop"}}},
        **UP,
    )
    # charge 45.00 - credits 15.00 (base) - 15.00 (add-on) = 15.00
    assert result.invoice is not None
    assert sorted(ln.amount for ln in result.invoice.line_items) == [D("-15.00"), D("-15.00"), D("45.00")]
    assert result.invoice.subtotal == D("15.00")
    assert w.s.subscriptions.addon_associations(sub.id) == []
    addon_line = next(li for li in result.subscription.line_items if li.addon_association_id)
    assert addon_line.end_date == june(16)
    (entity,) = result.to_dict()["entity_changes"]
    assert (entity["behaviour"], entity["entity_id"], entity["reference_id"]) == (
        "drop",
        association.id,
        addon_id,
    )
