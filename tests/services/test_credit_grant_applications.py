"""Credit grants granted through the library, on every store: the credit grant applications
(CGAs) a subscription's start makes, what the worker does with them, and the wallet credits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Billing, NotFound, Scoped, TestClock, ValidationError
from billingkit.domain.catalog import CreditGrantScope
from billingkit.domain.credit_grant_applications import (
    ApplicationReason,
    ApplicationStatus,
    CreditGrantApplication,
)
from billingkit.domain.queries import ListQuery, Sort
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    Wallet,
    WalletPriceType,
    WalletTransaction,
    WalletType,
)
from billingkit.errors import VersionConflict
from billingkit.services import credit_grant_applications as cgas
from billingkit.services.context import DueRun

D = Decimal


def at(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


@dataclass
class World:
    clock: TestClock
    billing: Billing
    s: Scoped
    customer_id: str

    def uow(self) -> Any:
        return self.billing.storage.unit_of_work(self.s.tenant_id, self.s.environment_id)

    def cgas(self, sub: Subscription) -> list[CreditGrantApplication]:
        """The subscription's CGAs by period start."""
        page = self.s.credit_grants.applications(subscription_ids=[sub.id], limit=100)
        return sorted(page.items, key=lambda c: (c.period_start, c.credit_grant_id))

    def wallets(self) -> list[Wallet]:
        with self.uow() as uow:
            return list(uow.wallets.list(ListQuery(limit=100)).items)

    def credits(self) -> list[WalletTransaction]:
        """Every ledger row, oldest first."""
        with self.uow() as uow:
            query = ListQuery(
                sort=(Sort("created_at", descending=False), Sort("id", descending=False)), limit=500
            )
            return list(uow.wallet_transactions.list(query).items)

    def set_status(self, sub: Subscription, status: SubscriptionStatus) -> None:
        """Store ``sub`` in ``status`` (out of the billing run's way)."""
        with self.uow() as uow:
            stored = uow.subscriptions.get(sub.id)
            uow.subscriptions.update(
                stored.model_copy(update={"subscription_status": status, "next_run_at": None})
            )
            uow.commit()

    def run(self, when: datetime) -> Any:
        self.clock.set(when)
        return self.billing.run_due()


@pytest.fixture
def world(storage: Any) -> World:
    clock = TestClock(at(2024, 1, 1))
    billing = Billing(storage, clock, renewal_notice=None)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    customer = s.customers.create(external_id="c1", name="Ada")
    return World(clock, billing, s, customer.id)


FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "20",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}
MONTHLY = {"name": "Monthly credits", "credits": "100", "cadence": "RECURRING", "period": "MONTHLY"}
WELCOME = {"name": "Welcome", "credits": "25.5", "cadence": "ONETIME"}


def subscribe(w: World, grants: list[dict[str, Any]] | None = None, **fields: Any) -> Subscription:
    plan = w.s.plans.create(name="Pro", prices=[FEE], credit_grants=grants or [])
    return w.s.subscriptions.create(
        customer_id=w.customer_id, plan_id=plan.id, currency="usd", billing_period="MONTHLY", **fields
    )


def summary(items: list[CreditGrantApplication]) -> list[tuple[Any, ...]]:
    return [
        (c.period_start, c.period_end, c.application_status, c.application_reason, c.credits) for c in items
    ]


# -- on subscription create ----------------------------------------------------------------------


def test_a_onetime_plan_grant_lands_in_a_new_usage_only_wallet_at_create(world: World) -> None:
    grant = {**WELCOME, "priority": 2, "expiration_type": "DURATION", "expiration_duration": 30}
    grant["expiration_duration_unit"] = "DAY"
    sub = subscribe(world, [grant])

    (cga,) = world.cgas(sub)
    assert summary([cga]) == [
        (at(2024, 1, 1), None, ApplicationStatus.APPLIED, ApplicationReason.ONETIME, D("25.5"))
    ]
    assert (cga.applied_at, cga.run_at, cga.subscription_status_at_application) == (
        at(2024, 1, 1),
        None,
        "active",
    )
    assert cga.idempotency_key == f"credit_grant_application|{cga.id}"
    # The subscription's own copy of the plan grant is what was granted.
    (own,) = world.s.subscriptions.get_v2(sub.id, expand="credit_grants").credit_grants
    assert (own.scope, own.subscription_id, own.plan_id, own.name) == (
        CreditGrantScope.SUBSCRIPTION,
        sub.id,
        None,
        "Welcome",
    )
    assert cga.credit_grant_id == own.id

    (wallet,) = world.wallets()
    assert (wallet.customer_id, wallet.currency, wallet.wallet_type, wallet.credit_balance) == (
        world.customer_id,
        "usd",
        WalletType.PRE_PAID,
        D("25.5"),
    )
    assert wallet.config.allowed_price_types == (WalletPriceType.USAGE,)
    assert wallet.conversion_rate == D(1)
    assert wallet.next_expiry_at == at(2024, 1, 31)
    (row,) = world.credits()
    assert row.id == cga.wallet_transaction_id
    assert (row.wallet_id, row.credit_amount, row.amount, row.transaction_reason) == (
        wallet.id,
        D("25.5"),
        D("25.50"),
        TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
    )
    assert (row.expiry_date, row.priority, row.idempotency_key) == (at(2024, 1, 31), 2, cga.idempotency_key)
    assert (row.reference_type, row.reference_id) == (TransactionReferenceType.EXTERNAL, cga.id)
    assert row.metadata == {
        "credit_grant_id": own.id,
        "subscription_id": sub.id,
        "credit_grant_application_id": cga.id,
    }
    # Nothing more is due.
    world.run(at(2024, 3, 1))
    assert len(world.credits()) == 1 and len(world.cgas(sub)) == 1


def test_a_recurring_grant_applies_its_first_period_and_schedules_the_next(world: World) -> None:
    sub = subscribe(world, [{**MONTHLY, "conversion_rate": "0.5"}])
    first, second = world.cgas(sub)
    assert summary([first, second]) == [
        (
            at(2024, 1, 1),
            at(2024, 2, 1),
            ApplicationStatus.APPLIED,
            ApplicationReason.FIRST_TIME_RECURRING,
            D(100),
        ),
        (at(2024, 2, 1), at(2024, 3, 1), ApplicationStatus.PENDING, ApplicationReason.RECURRING, D(100)),
    ]
    assert (second.run_at, second.scheduled_for, second.applied_at) == (at(2024, 2, 1), at(2024, 2, 1), None)
    # The grant's rate picks (or makes) the wallet with that rate: 100 credits worth 50.00.
    (wallet,) = world.wallets()
    assert (wallet.conversion_rate, wallet.credit_balance) == (D("0.5"), D(100))
    assert world.credits()[0].amount == D("50.00")
    # Upcoming: the pending one, for the subscription and for the customer.
    assert [c.id for c in world.s.subscriptions.upcoming_grants(sub.id)] == [second.id]
    assert [c.id for c in world.s.customers.upcoming_grants(world.customer_id)] == [second.id]


def test_several_plan_grants_each_get_their_applications(world: World) -> None:
    sub = subscribe(world, [MONTHLY, WELCOME])
    assert sorted((c.application_reason, c.application_status, c.credits) for c in world.cgas(sub)) == [
        (ApplicationReason.FIRST_TIME_RECURRING, ApplicationStatus.APPLIED, D(100)),
        (ApplicationReason.ONETIME, ApplicationStatus.APPLIED, D("25.5")),
        (ApplicationReason.RECURRING, ApplicationStatus.PENDING, D(100)),
    ]
    (wallet,) = world.wallets()  # one wallet for both
    assert wallet.credit_balance == D("125.5")


def test_the_request_credit_grants_replace_the_plan_grants(world: World) -> None:
    plan = world.s.plans.create(name="Pro", prices=[FEE], credit_grants=[MONTHLY])
    sub = world.s.subscriptions.create(
        customer_id=world.customer_id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        credit_grants=[{**WELCOME, "scope": "SUBSCRIPTION", "proration_behavior": "none"}],
    )
    (own,) = world.s.subscriptions.get_v2(sub.id, expand="credit_grants").credit_grants
    assert (own.name, own.scope, own.subscription_id, own.credits) == (
        "Welcome",
        CreditGrantScope.SUBSCRIPTION,
        sub.id,
        D("25.5"),
    )
    assert summary(world.cgas(sub)) == [
        (at(2024, 1, 1), None, ApplicationStatus.APPLIED, ApplicationReason.ONETIME, D("25.5"))
    ]
    # The plan keeps its own grant; the subscription's is another record.
    assert [g.name for g in world.s.plans.credit_grants(plan.id)] == ["Monthly credits"]
    assert world.s.credit_grants.list(subscription_ids=[sub.id]).total == 1


@pytest.mark.parametrize(
    ("grant", "field"),
    [
        ({**WELCOME, "scope": "PLAN"}, "credit_grants[0].scope"),
        ({**WELCOME, "plan_id": "plan_x"}, "credit_grants[0].plan_id"),
        ({**WELCOME, "subscription_id": "subs_x"}, "credit_grants[0].subscription_id"),
        ({**WELCOME, "credits": "0"}, "credit_grants[0].credits"),
        ({**MONTHLY, "period": None}, "credit_grants[0].period"),
        ({**WELCOME, "expiration_type": "DURATION"}, "credit_grants[0].expiration_duration"),
    ],
)
def test_bad_request_grants_are_refused_and_nothing_is_written(
    world: World, grant: dict[str, Any], field: str
) -> None:
    plan = world.s.plans.create(name="Pro", prices=[FEE])
    with pytest.raises(ValidationError) as err:
        world.s.subscriptions.create(
            customer_id=world.customer_id,
            plan_id=plan.id,
            currency="usd",
            billing_period="MONTHLY",
            credit_grants=[grant],
        )
    assert err.value.field == field
    assert world.s.subscriptions.list().total == 0
    assert world.s.credit_grants.list(scope="SUBSCRIPTION").total == 0
    assert world.s.credit_grants.applications().total == 0
    assert world.wallets() == [] and world.credits() == []


def test_a_draft_gets_its_grants_but_no_applications_until_activated(world: World) -> None:
    sub = subscribe(world, [MONTHLY], subscription_status="draft")
    assert len(world.s.subscriptions.get_v2(sub.id, expand="credit_grants").credit_grants) == 1
    assert world.cgas(sub) == [] and world.wallets() == []
    world.run(at(2024, 2, 1))
    assert world.cgas(sub) == []

    world.clock.set(at(2024, 2, 10))
    world.s.subscriptions.activate(sub.id, start_date=at(2024, 2, 10))
    assert summary(world.cgas(sub)) == [
        (
            at(2024, 2, 10),
            at(2024, 3, 10),
            ApplicationStatus.APPLIED,
            ApplicationReason.FIRST_TIME_RECURRING,
            D(100),
        ),
        (at(2024, 3, 10), at(2024, 4, 10), ApplicationStatus.PENDING, ApplicationReason.RECURRING, D(100)),
    ]
    assert world.wallets()[0].credit_balance == D(100)


def test_a_trialing_subscription_gets_its_credits(world: World) -> None:
    sub = subscribe(world, [{**MONTHLY, "expiration_type": "BILLING_CYCLE"}], trial_period_days=14)
    assert sub.subscription_status is SubscriptionStatus.TRIALING
    first, _ = world.cgas(sub)
    assert (first.application_status, first.subscription_status_at_application) == (
        ApplicationStatus.APPLIED,
        "trialing",
    )
    # BILLING_CYCLE: the current period is the trial window, so the credits last until it ends.
    assert world.credits()[0].expiry_date == at(2024, 1, 15)


def test_a_future_start_waits_for_the_worker(world: World) -> None:
    sub = subscribe(world, [MONTHLY], start_date=at(2024, 1, 20))
    (pending,) = world.cgas(sub)
    assert (pending.application_status, pending.run_at) == (ApplicationStatus.PENDING, at(2024, 1, 20))
    world.run(at(2024, 1, 19))
    assert world.cgas(sub)[0].application_status is ApplicationStatus.PENDING and world.credits() == []
    world.run(at(2024, 1, 20))
    assert [c.application_status for c in world.cgas(sub)] == [
        ApplicationStatus.APPLIED,
        ApplicationStatus.PENDING,
    ]
    assert [row.credit_amount for row in world.credits()] == [D(100)]


def test_a_start_in_the_past_catches_up_at_create(world: World) -> None:
    world.clock.set(at(2024, 3, 15))
    sub = subscribe(world, [{**MONTHLY, "expiration_type": "BILLING_CYCLE"}], start_date=at(2024, 1, 15))
    # January's and February's credits expired before they could be granted; March's land.
    assert [(c.period_start, c.application_status) for c in world.cgas(sub)] == [
        (at(2024, 1, 15), ApplicationStatus.SKIPPED),
        (at(2024, 2, 15), ApplicationStatus.SKIPPED),
        (at(2024, 3, 15), ApplicationStatus.APPLIED),
        (at(2024, 4, 15), ApplicationStatus.PENDING),
    ]
    skipped = world.cgas(sub)[0]
    assert skipped.failure_reason == "credits expired at 2024-02-15T00:00:00+00:00 before they were granted"
    assert [(row.credit_amount, row.expiry_date) for row in world.credits()] == [(D(100), at(2024, 4, 15))]


def test_no_application_after_the_grant_or_the_subscription_ends(world: World) -> None:
    sub = subscribe(world, [{**MONTHLY, "end_date": at(2024, 2, 15).isoformat()}], end_date=at(2024, 6, 1))
    world.run(at(2024, 2, 1))
    world.run(at(2024, 3, 1))
    assert summary(world.cgas(sub)) == [
        (
            at(2024, 1, 1),
            at(2024, 2, 1),
            ApplicationStatus.APPLIED,
            ApplicationReason.FIRST_TIME_RECURRING,
            D(100),
        ),
        (at(2024, 2, 1), at(2024, 2, 15), ApplicationStatus.APPLIED, ApplicationReason.RECURRING, D(100)),
    ]


# -- the worker ----------------------------------------------------------------------------------


def test_the_worker_grants_each_period_once_however_often_it_runs(world: World) -> None:
    sub = subscribe(world, [{**MONTHLY, "priority": 1, "expiration_type": "BILLING_CYCLE"}])
    for month in (2, 3):
        world.run(at(2024, month, 1))
        world.run(at(2024, month, 1))  # again: nothing is due
        world.run(at(2024, month, 1, 12))
    assert summary(world.cgas(sub)) == [
        (
            at(2024, 1, 1),
            at(2024, 2, 1),
            ApplicationStatus.APPLIED,
            ApplicationReason.FIRST_TIME_RECURRING,
            D(100),
        ),
        (at(2024, 2, 1), at(2024, 3, 1), ApplicationStatus.APPLIED, ApplicationReason.RECURRING, D(100)),
        (at(2024, 3, 1), at(2024, 4, 1), ApplicationStatus.APPLIED, ApplicationReason.RECURRING, D(100)),
        (at(2024, 4, 1), at(2024, 5, 1), ApplicationStatus.PENDING, ApplicationReason.RECURRING, D(100)),
    ]
    assert [(row.credit_amount, row.expiry_date, row.priority) for row in world.credits()] == [
        (D(100), at(2024, 2, 1), 1),
        (D(100), at(2024, 3, 1), 1),
        (D(100), at(2024, 4, 1), 1),
    ]
    assert [c.applied_at for c in world.cgas(sub)[:3]] == [at(2024, 1, 1), at(2024, 2, 1), at(2024, 3, 1)]
    assert [c.version for c in world.cgas(sub)] == [1, 2, 2, 1]


def test_a_rerun_of_a_batch_already_carried_out_writes_nothing(world: World) -> None:
    sub = subscribe(world, [MONTHLY])
    claimed = world.cgas(sub)[1]  # the pending February one, as a runner claimed it
    world.clock.set(at(2024, 2, 1))
    run = DueRun(
        now=at(2024, 2, 1),
        ids=world.billing.ids,
        settings=world.billing.settings,
        providers=world.billing.providers,
    )
    for _ in range(2):
        with world.billing.storage.unit_of_work() as uow:
            stored = uow.for_scope(claimed.tenant_id, claimed.environment_id).credit_grant_applications.get(
                claimed.id
            )
            cgas.apply_due_applications(uow, [stored], run)
            uow.commit()
    # The second pass found it applied: still two credits, three CGAs.
    assert [row.credit_amount for row in world.credits()] == [D(100), D(100)]
    assert [c.application_status for c in world.cgas(sub)] == [
        ApplicationStatus.APPLIED,
        ApplicationStatus.APPLIED,
        ApplicationStatus.PENDING,
    ]
    # Handed the stale claimed copy (still pending in memory) the handler fails on the version
    # check instead of granting twice.
    with pytest.raises(VersionConflict), world.billing.storage.unit_of_work() as uow:
        cgas.apply_due_applications(uow, [claimed], run)
    assert len(world.credits()) == 2


def test_a_jump_over_several_periods_skips_what_expired_and_applies_the_current(world: World) -> None:
    sub = subscribe(world, [{**MONTHLY, "expiration_type": "BILLING_CYCLE"}])
    world.run(at(2024, 4, 1))
    assert [(c.period_start, c.application_status) for c in world.cgas(sub)] == [
        (at(2024, 1, 1), ApplicationStatus.APPLIED),
        (at(2024, 2, 1), ApplicationStatus.SKIPPED),
        (at(2024, 3, 1), ApplicationStatus.SKIPPED),
        (at(2024, 4, 1), ApplicationStatus.APPLIED),
        (at(2024, 5, 1), ApplicationStatus.PENDING),
    ]
    assert [row.expiry_date for row in world.credits()] == [at(2024, 2, 1), at(2024, 5, 1)]


def test_never_expiring_credits_of_missed_periods_are_all_granted(world: World) -> None:
    sub = subscribe(world, [MONTHLY])
    world.run(at(2024, 3, 20))
    assert [c.application_status for c in world.cgas(sub)] == [ApplicationStatus.APPLIED] * 3 + [
        ApplicationStatus.PENDING
    ]
    assert world.wallets()[0].credit_balance == D(300)


def test_a_paused_subscription_skips_the_period_and_the_next_one_follows(world: World) -> None:
    sub = subscribe(world, [MONTHLY])
    world.set_status(sub, SubscriptionStatus.PAUSED)
    world.run(at(2024, 2, 1))
    _, skipped, following = world.cgas(sub)
    assert (
        skipped.application_status,
        skipped.failure_reason,
        skipped.subscription_status_at_application,
    ) == (
        ApplicationStatus.SKIPPED,
        "subscription paused",
        "paused",
    )
    assert (following.period_start, following.application_status) == (
        at(2024, 3, 1),
        ApplicationStatus.PENDING,
    )
    assert len(world.credits()) == 1


def test_a_cancelled_subscription_cancels_the_application_and_makes_no_more(world: World) -> None:
    sub = subscribe(world, [MONTHLY])
    world.set_status(sub, SubscriptionStatus.CANCELLED)
    world.run(at(2024, 2, 1))
    world.run(at(2024, 3, 1))
    _, cancelled = world.cgas(sub)
    assert (cancelled.application_status, cancelled.failure_reason, cancelled.run_at) == (
        ApplicationStatus.CANCELLED,
        "subscription cancelled",
        None,
    )
    assert len(world.credits()) == 1
    assert world.s.subscriptions.upcoming_grants(sub.id) == []


def test_an_incomplete_subscription_defers_until_it_is_active(world: World) -> None:
    sub = subscribe(world, [MONTHLY])
    world.set_status(sub, SubscriptionStatus.INCOMPLETE)
    world.run(at(2024, 2, 1))
    _, deferred = world.cgas(sub)
    assert (deferred.application_status, deferred.retry_count, deferred.run_at) == (
        ApplicationStatus.PENDING,
        1,
        at(2024, 2, 1) + timedelta(minutes=15),
    )
    assert (deferred.failure_reason, deferred.subscription_status_at_application) == (
        "subscription incomplete",
        "incomplete",
    )
    world.run(at(2024, 2, 1, 0) + timedelta(minutes=15))
    assert world.cgas(sub)[1].retry_count == 2
    world.set_status(sub, SubscriptionStatus.ACTIVE)
    world.run(at(2024, 2, 1, 1))
    applied = world.cgas(sub)[1]
    assert (applied.application_status, applied.applied_at, applied.retry_count, applied.failure_reason) == (
        ApplicationStatus.APPLIED,
        at(2024, 2, 1, 1),
        2,
        None,
    )
    assert world.cgas(sub)[2].period_start == at(2024, 3, 1)
    assert [row.credit_amount for row in world.credits()] == [D(100), D(100)]


def test_an_application_of_a_deleted_grant_is_cancelled(world: World) -> None:
    sub = subscribe(world, [MONTHLY])
    (own,) = world.s.subscriptions.get_v2(sub.id, expand="credit_grants").credit_grants
    world.s.credit_grants.delete(own.id)
    world.run(at(2024, 2, 1))
    _, cancelled = world.cgas(sub)
    assert (cancelled.application_status, cancelled.failure_reason) == (
        ApplicationStatus.CANCELLED,
        "credit grant deleted",
    )
    assert len(world.cgas(sub)) == 2 and len(world.credits()) == 1


def test_the_worker_reports_the_wallet_notifications(world: World) -> None:
    subscribe(world, [MONTHLY])
    report = world.run(at(2024, 2, 1))
    events = world.s.notifications.list(event_type="wallet.transaction.created").items
    assert len(events) == 2  # the January credit at create, the February one by the worker
    assert report.failures == []


# -- reads ---------------------------------------------------------------------------------------


def test_applications_filter_by_status_grant_and_customer(world: World) -> None:
    sub = subscribe(world, [MONTHLY, WELCOME])
    applied = world.s.credit_grants.applications(application_status="applied")
    assert sorted(c.application_reason for c in applied.items) == [
        ApplicationReason.FIRST_TIME_RECURRING,
        ApplicationReason.ONETIME,
    ]
    monthly_grant = world.cgas(sub)[0].credit_grant_id
    assert world.s.credit_grants.applications(credit_grant_ids=[monthly_grant]).total == 2
    assert world.s.credit_grants.applications(customer_id=world.customer_id).total == 3
    assert world.s.credit_grants.applications(customer_id="cust_other").total == 0


def test_upcoming_grants_of_unknown_owners_are_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        world.s.subscriptions.upcoming_grants("subs_missing")
    with pytest.raises(NotFound):
        world.s.customers.upcoming_grants("cust_missing")


def test_the_wire_form_has_the_reference_fields(world: World) -> None:
    sub = subscribe(world, [MONTHLY])
    wire = world.cgas(sub)[1].to_dict()
    assert set(wire) == {
        "id",
        "tenant_id",
        "environment_id",
        "status",
        "created_at",
        "updated_at",
        "created_by",
        "updated_by",
        "credit_grant_id",
        "subscription_id",
        "scheduled_for",
        "period_start",
        "period_end",
        "applied_at",
        "application_status",
        "application_reason",
        "credits",
        "subscription_status_at_application",
        "retry_count",
        "failure_reason",
        "idempotency_key",
        "metadata",
    }
    assert (wire["credits"], wire["scheduled_for"], wire["application_status"]) == (
        "100",
        "2024-02-01T00:00:00Z",
        "pending",
    )
