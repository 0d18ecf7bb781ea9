"""Cancelling subscriptions and their schedules through the library, on every store: what each
cancellation type writes, what ends with the subscription, withdrawing a schedule, refusals that
write nothing, and the auto-cancellation setting."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit import InvalidOperation, NotFound, Settings, ValidationError
from billingkit.domain.addon_associations import AddonStatus
from billingkit.domain.credit_grant_applications import ApplicationStatus
from billingkit.domain.invoices import BillingReason, InvoiceStatus
from billingkit.domain.periods import BillingPeriod
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.domain.subscription_schedules import ScheduleStatus, ScheduleType
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.ports import Storage
from billingkit.services.subscription_schedules import ScheduleView
from billingkit.testing.contracts.storage import sample
from tests.cancellations import FEE, World, at, june, make_world

D = Decimal
MONTHLY_GRANT = {
    "name": "Monthly credits",
    "cadence": "RECURRING",
    "period": "MONTHLY",
    "credits": "5",
    "expiration_type": "NEVER",
}


@pytest.fixture
def world(storage: Storage) -> World:
    return make_world(storage)


def _add(world: World, kind: str, **fields: Any) -> Any:
    item = sample(kind, world.s.tenant_id, str(world.s.environment_id), **fields)
    with world.uow() as uow:
        getattr(uow, kind).add(item)
        uow.commit()
    return item


def _stored(world: World, kind: str, item_id: str) -> Any:
    with world.uow() as uow:
        return getattr(uow, kind).get(item_id)


def test_immediate_cancellation_ends_the_subscription_and_what_hangs_from_it(world: World) -> None:
    plan = world.s.plans.create(name="Pro", prices=[FEE], credit_grants=[MONTHLY_GRANT])
    sub = world.s.subscriptions.create(
        customer_id=world.customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    association = _add(world, "addon_associations", entity_id=sub.id, addon_id="addon_x", start_date=june(1))
    pending_addon = _add(
        world,
        "addon_associations",
        entity_id=sub.id,
        addon_id="addon_y",
        start_date=june(20),
        addon_status="pending",
    )
    addon_line = sub.line_items[0].model_copy(
        update={
            "id": "subs_line_addon",
            "entity_type": "addon",
            "entity_id": "addon_x",
            "addon_association_id": association.id,
        }
    )
    sub = world.store(sub, line_items=(*sub.line_items, addon_line))
    plan_change = _add(
        world,
        "subscription_schedules",
        subscription_id=sub.id,
        schedule_type="plan_change",
        scheduled_at=june(30),
        run_at=None,
    )
    (own_grant,) = world.s.subscriptions.get_v2(sub.id, expand="credit_grants").credit_grants
    next_cga = [c for c in world.s.subscriptions.upcoming_grants(sub.id)]
    assert next_cga, "the monthly grant has its July application pending"

    world.clock.set(june(11))
    result = world.s.subscriptions.cancel(sub.id, cancellation_type="immediate", reason="moving away")

    saved = world.sub(sub)
    assert result.subscription == saved and result.effective_date == june(11)
    assert saved.subscription_status is SubscriptionStatus.CANCELLED
    assert saved.cancel_at == saved.end_date == saved.cancelled_at == june(11)
    assert saved.next_run_at is None and saved.cancel_at_period_end is False
    assert [li.end_date for li in saved.line_items] == [june(11), june(11)]
    assert saved.metadata == {
        "cancellation_type": "immediate",
        "cancellation_reason": "moving away",
        "effective_date": "2026-06-11T00:00:00Z",
    }
    for made in (association, pending_addon):
        ended = _stored(world, "addon_associations", made.id)
        assert ended.addon_status is AddonStatus.CANCELLED
        assert ended.cancelled_at == june(11) and ended.cancellation_reason == "moving away"
    assert _stored(world, "addon_associations", association.id).end_date == june(11)
    assert _stored(world, "addon_associations", pending_addon.id).end_date == june(11)
    assert world.s.subscriptions.upcoming_grants(sub.id) == []
    (cga,) = [
        c
        for c in world.s.credit_grants.applications(subscription_ids=[sub.id]).items
        if c.id == next_cga[0].id
    ]
    assert (
        cga.application_status is ApplicationStatus.CANCELLED
        and cga.failure_reason == "subscription cancelled"
    )
    assert world.s.subscriptions.get_v2(sub.id, expand="credit_grants").credit_grants[0].end_date == june(11)
    assert own_grant.end_date is None
    withdrawn = _stored(world, "subscription_schedules", plan_change.id)
    assert withdrawn.schedule_status is ScheduleStatus.CANCELLED and withdrawn.cancelled_at == june(11)
    assert [
        e.payload["subscription"]["subscription_status"] for e in world.events("subscription.cancelled", sub)
    ] == ["cancelled"]
    assert len(world.events("subscription.updated", sub)) == 1
    # No invoice and no credit by default (policy skip, proration none).
    assert [inv.billing_reason for inv in world.invoices(sub)] == [BillingReason.SUBSCRIPTION_CREATE]
    assert result.proration_details == () and result.total_credit_amount == D("0.00")
    assert world.wallets() == [] or all(w.name != "Proration Credit Wallet" for w in world.wallets())


def test_the_worker_never_bills_a_cancelled_subscription(world: World) -> None:
    sub = world.subscribe()
    world.clock.set(june(11))
    world.s.subscriptions.cancel(sub.id, cancellation_type="immediate")
    report = world.run(at(8, 1))
    assert report.invoice_count == 0
    assert len(world.invoices(sub)) == 1


def test_scheduled_date_cancellation_is_kept_and_withdrawn(world: World) -> None:
    sub = world.subscribe()
    world.clock.set(june(5))
    result = world.s.subscriptions.cancel(
        sub.id, cancellation_type="scheduled_date", cancel_at=june(20), reason="r"
    )
    assert result.subscription.subscription_status is SubscriptionStatus.ACTIVE
    assert (result.subscription.cancel_at, result.subscription.end_date) == (june(20), june(20))
    assert result.subscription.current_period_end == june(20) and result.subscription.cancelled_at is None
    schedule = result.schedule
    assert schedule is not None and schedule.schedule_type is ScheduleType.CANCELLATION
    assert schedule.scheduled_at == june(20) and schedule.schedule_status is ScheduleStatus.PENDING

    listed = world.s.subscriptions.schedules(sub.id)
    assert [view.schedule.id for view in listed.schedules] == [schedule.id]
    view = world.s.subscriptions.get_schedule(schedule.id)
    assert isinstance(view, ScheduleView) and view.days_until_execution == 15 and view.can_be_cancelled
    assert view.to_dict()["status"] == "pending"
    assert world.s.subscriptions.list_schedules(pending_only=True).to_dict()["count"] == 1
    assert world.s.subscriptions.list_schedules(schedule_type="plan_change").schedules == ()

    with pytest.raises(ValidationError) as mismatch:
        world.s.subscriptions.cancel_schedule(schedule.id, subscription_id="subs_other")
    assert mismatch.value.field == "subscription_id"

    world.clock.set(june(8))
    withdrawn = world.s.subscriptions.cancel_schedule(schedule.id, schedule_type="cancellation")
    assert withdrawn.schedule.schedule_status is ScheduleStatus.CANCELLED and not withdrawn.can_be_cancelled
    restored = world.sub(sub)
    assert (restored.cancel_at, restored.end_date, restored.cancel_at_period_end) == (None, None, False)
    assert restored.current_period_end == at(7, 1)
    assert restored.next_run_at == june(28)  # the renewal notice, 3 days before the period end
    assert restored.metadata == {}
    assert len(world.events("subscription.updated", sub)) == 2
    with pytest.raises(InvalidOperation, match="only a pending schedule"):
        world.s.subscriptions.cancel_schedule(schedule.id)
    # Withdrawn, it can be scheduled again.
    again = world.s.subscriptions.cancel(sub.id, cancellation_type="end_of_period")
    assert again.subscription.cancel_at == at(7, 1)


def test_end_of_period_cancels_at_the_period_end_and_executes_the_schedule(world: World) -> None:
    plan = world.s.plans.create(name="Pro", prices=[FEE], credit_grants=[MONTHLY_GRANT])
    sub = world.s.subscriptions.create(
        customer_id=world.customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    association = _add(world, "addon_associations", entity_id=sub.id, addon_id="addon_x", start_date=june(1))
    world.clock.set(june(10))
    result = world.s.subscriptions.cancel(sub.id, cancellation_type="end_of_period")
    assert result.effective_date == at(7, 1) and result.subscription.cancel_at_period_end
    assert world.events("subscription.cancelled", sub) == []

    july = at(7, 1)
    report = world.run(july)
    # The June period closes with nothing (its fee was billed in advance) and no July fee.
    assert report.invoice_count == 0
    ended = world.sub(sub)
    assert ended.subscription_status is SubscriptionStatus.CANCELLED
    assert ended.cancelled_at == ended.end_date == ended.cancel_at == july
    assert [li.end_date for li in ended.line_items] == [july]
    (schedule,) = world.s.subscriptions.schedules(sub.id).schedules
    assert (
        schedule.schedule.schedule_status is ScheduleStatus.EXECUTED and schedule.schedule.executed_at == july
    )
    assert schedule.schedule.execution_result == {
        "subscription_status": "cancelled",
        "cancelled_at": "2026-07-01T00:00:00Z",
    }
    assert _stored(world, "addon_associations", association.id).addon_status is AddonStatus.CANCELLED
    assert world.s.subscriptions.upcoming_grants(sub.id) == []
    assert len(world.events("subscription.cancelled", sub)) == 1
    assert world.run(july.replace(month=9)).invoice_count == 0


def test_refusals_write_nothing(world: World) -> None:
    sub = world.subscribe()
    quarterly = sub.line_items[0].model_copy(
        update={"id": "subs_line_q", "billing_period": BillingPeriod.QUARTERLY}
    )
    sub = world.store(sub, line_items=(*sub.line_items, quarterly))
    world.clock.set(june(11))
    with pytest.raises(ValidationError) as caught:
        world.s.subscriptions.cancel(
            sub.id, cancellation_type="immediate", proration_behavior="create_prorations"
        )
    assert caught.value.field == "proration_behavior"
    assert world.sub(sub) == sub and world.wallets() == []
    with pytest.raises(ValidationError) as both:
        world.s.subscriptions.cancel(
            sub.id,
            cancellation_type="immediate",
            cancel_immediately_invoice_policy="skip",
            cancel_immediately_inovice_policy="generate_invoice",
        )
    assert both.value.field == "cancel_immediately_inovice_policy"
    with pytest.raises(NotFound):
        world.s.subscriptions.cancel("subs_missing", cancellation_type="immediate")
    world.s.subscriptions.cancel(sub.id, cancellation_type="end_of_period")
    with pytest.raises(InvalidOperation, match="already has a cancellation"):
        world.s.subscriptions.cancel(sub.id, cancellation_type="scheduled_date", cancel_at=june(20))
    (schedule,) = world.s.subscriptions.schedules(sub.id).schedules
    assert schedule.schedule.schedule_status is ScheduleStatus.PENDING
    # An immediate cancellation overrides the scheduled one, whose schedule is withdrawn.
    world.s.subscriptions.cancel(sub.id, cancellation_type="immediate")
    (schedule,) = world.s.subscriptions.schedules(sub.id).schedules
    assert schedule.schedule.schedule_status is ScheduleStatus.CANCELLED


def test_a_period_no_run_billed_yet_is_billed_before_an_immediate_cancellation(world: World) -> None:
    sub = world.subscribe()
    world.usage(40, june(3))
    world.clock.set(at(7, 3))  # 3 Jul: June ended, the worker has not run
    world.usage(10, at(7, 1, 1), prefix="july")
    result = world.s.subscriptions.cancel(
        sub.id, cancellation_type="immediate", cancel_immediately_invoice_policy="generate_invoice"
    )
    invoices = world.invoices(sub)
    # Opening 30.00; June closes with 40 calls x 0.10 + July's fee 30.00 = 34.00; the cancellation
    # bills July's 10 calls so far: 1.00.
    assert [(inv.billing_reason, inv.amount_due) for inv in invoices] == [
        (BillingReason.SUBSCRIPTION_CREATE, D("30.00")),
        (BillingReason.SUBSCRIPTION_CYCLE, D("34.00")),
        (BillingReason.SUBSCRIPTION_CYCLE, D("1.00")),
    ]
    assert result.invoice == invoices[-1]
    assert (invoices[-1].period_start, invoices[-1].period_end) == (
        at(7, 1),
        at(7, 3),
    )
    assert world.sub(sub).billing_sequence == 3


def test_a_trialing_subscription_gets_no_invoice_and_no_credit(world: World) -> None:
    sub = world.subscribe(trial_period_days=14)
    world.usage(5, june(2))
    world.clock.set(june(5))
    result = world.s.subscriptions.cancel(
        sub.id,
        cancellation_type="immediate",
        proration_behavior="create_prorations",
        cancel_immediately_inovice_policy="generate_invoice",
    )
    assert result.invoice is None and result.proration_details == ()
    assert world.invoices(sub) == [] and world.wallets() == []
    assert world.sub(sub).subscription_status is SubscriptionStatus.CANCELLED


def test_another_scope_cannot_cancel(world: World) -> None:
    sub = world.subscribe()
    with world.uow() as uow:
        environments = uow.for_scope(world.s.tenant_id, None).environments.list(ListQuery()).items
    other = next(env.id for env in environments if env.id != world.s.environment_id)
    prod = world.billing.scope(world.s.tenant_id, other)
    with pytest.raises(NotFound):
        prod.subscriptions.cancel(sub.id, cancellation_type="immediate")
    with pytest.raises(NotFound):
        prod.subscriptions.schedules(sub.id)


def test_grace_days_are_checked() -> None:
    assert Settings().auto_cancellation_grace_days is None
    assert Settings(auto_cancellation_grace_days=0).auto_cancellation_grace_days == 0
    for bad in (-1, True, 1.5, "3"):
        with pytest.raises(ValidationError) as caught:
            Settings(auto_cancellation_grace_days=bad)  # type: ignore[arg-type]
        assert caught.value.field == "auto_cancellation_grace_days"


def test_without_grace_days_unpaid_invoices_cancel_nothing(world: World) -> None:
    sub = world.subscribe(payment_terms="15 NET")
    world.run(at(9, 1))
    assert world.sub(sub).subscription_status is SubscriptionStatus.ACTIVE
    with world.uow() as uow:
        unpaid = uow.invoices.list(
            ListQuery(filters=(Filter("invoice_status", Op.EQ, InvoiceStatus.FINALIZED.value),))
        )
    assert unpaid.total >= 3


def test_grace_days_come_from_their_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from billingkit.cli import UsageError, _settings, build_parser

    parser = build_parser()
    monkeypatch.delenv("BILLINGKIT_AUTO_CANCELLATION_GRACE_DAYS", raising=False)
    assert _settings(parser.parse_args(["worker"])).auto_cancellation_grace_days is None
    monkeypatch.setenv("BILLINGKIT_AUTO_CANCELLATION_GRACE_DAYS", "3")
    assert _settings(parser.parse_args(["serve"])).auto_cancellation_grace_days == 3
    monkeypatch.setenv("BILLINGKIT_AUTO_CANCELLATION_GRACE_DAYS", "-1")
    with pytest.raises(UsageError, match="BILLINGKIT_AUTO_CANCELLATION_GRACE_DAYS='-1': must be whole days"):
        _settings(parser.parse_args(["worker"]))


def test_reaching_end_date_ends_what_hangs_from_the_subscription_too(world: World) -> None:
    plan = world.s.plans.create(name="Pro", prices=[FEE], credit_grants=[MONTHLY_GRANT])
    sub = world.s.subscriptions.create(
        customer_id=world.customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        end_date=at(8, 1),
    )
    association = _add(world, "addon_associations", entity_id=sub.id, addon_id="addon_x", start_date=june(1))
    world.run(at(7, 15))
    assert _stored(world, "addon_associations", association.id).addon_status is AddonStatus.ACTIVE
    world.run(at(8, 1))
    ended = world.sub(sub)
    assert ended.subscription_status is SubscriptionStatus.CANCELLED and ended.cancelled_at == at(8, 1)
    assert [li.end_date for li in ended.line_items] == [at(8, 1)]
    closed = _stored(world, "addon_associations", association.id)
    assert (closed.addon_status, closed.end_date, closed.cancellation_reason) == (
        AddonStatus.CANCELLED,
        at(8, 1),
        "subscription cancelled",
    )
    assert world.s.subscriptions.upcoming_grants(sub.id) == []


def test_a_threshold_subscription_keeps_its_usage_checks_when_a_cancellation_is_scheduled(
    world: World,
) -> None:
    from tests.cancellations import calls

    sub = world.subscribe([calls(world.meter_id)], auto_invoice_threshold="50")
    interval = world.billing.settings.auto_invoice_check_interval
    world.clock.set(june(10))
    scheduled = world.s.subscriptions.cancel(sub.id, cancellation_type="scheduled_date", cancel_at=june(20))
    assert scheduled.subscription.current_period_end == june(20)
    assert scheduled.subscription.next_run_at == june(10) + interval  # not the cut period's end
    world.clock.set(june(12))
    assert scheduled.schedule is not None
    world.s.subscriptions.cancel_schedule(scheduled.schedule.id)
    assert world.sub(sub).next_run_at == june(12) + interval
