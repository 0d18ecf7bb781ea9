"""Pausing and resuming subscriptions through the library, on every store: the modes, the worker's
start and auto-resume, the stretched period, dry runs that write nothing, the refusals, and the
pauses on the reads.

The ``clock`` fixture starts at 2026-05-01 09:30 UTC; subscriptions here start then, monthly, so
the first period is [1 May 09:30, 1 Jun 09:30).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from billingkit import Billing, InvalidOperation, NotFound, Scoped, TestClock, ValidationError
from billingkit.domain.queries import ListQuery
from billingkit.domain.subscription_pauses import PauseMode, ResumeMode, SubscriptionPause
from billingkit.domain.subscriptions import PauseStatus, Subscription, SubscriptionStatus, SubscriptionType

KINDS = ("subscriptions", "subscription_pauses", "invoices", "notifications", "payments")


def at(month: int, day: int, hour: int = 9, minute: int = 30) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


@dataclass
class World:
    s: Scoped
    clock: TestClock
    billing: Billing
    plan_id: str
    customer_id: str

    def subscribe(self, **fields: Any) -> Subscription:
        return self.s.subscriptions.create(
            customer_id=self.customer_id,
            plan_id=self.plan_id,
            currency="usd",
            billing_period="MONTHLY",
            **fields,
        )

    def sub(self, sub: Subscription) -> Subscription:
        return self.s.subscriptions.get(sub.id)

    def run(self, when: datetime) -> Any:
        self.clock.set(when)
        return self.billing.run_due()

    def events(self, sub: Subscription) -> list[str]:
        items = self.s.notifications.list(entity_id=sub.id, limit=200).items
        return [e.event_type for e in items]

    def invoices(self, sub: Subscription) -> list[Any]:
        items = self.s.invoices.list(subscription_id=sub.id, limit=100).items
        return sorted(items, key=lambda i: i.billing_sequence or 0)

    def rows(self) -> dict[str, list[Any]]:
        """Every row of the kinds a pause could touch, as stored."""
        with self.billing.storage.unit_of_work(self.s.tenant_id, self.s.environment_id) as uow:
            return {
                kind: sorted(
                    getattr(uow, kind).list(ListQuery(limit=1000, status=None)).items, key=lambda r: r.id
                )
                for kind in KINDS
            }


@pytest.fixture
def w(test_env: Scoped, clock: TestClock, billing: Billing) -> World:
    plan = test_env.plans.create(
        name="Pro",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "30",
                "currency": "usd",
                "billing_period": "MONTHLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    customer = test_env.customers.create(external_id="c1", name="Ada")
    return World(test_env, clock, billing, plan.id, customer.id)


# -- immediate pauses ----------------------------------------------------------------------------


def test_an_immediate_pause_for_some_days_pauses_now_and_the_worker_resumes_it(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    result = w.s.subscriptions.pause(sub.id, pause_days=10, reason="holiday", metadata={"by": "ada"})

    paused, pause = result.subscription, result.pause
    assert (paused.subscription_status, paused.pause_status, paused.active_pause_id) == (
        SubscriptionStatus.PAUSED,
        PauseStatus.ACTIVE,
        pause.id,
    )
    assert paused.next_run_at is None and paused.version == sub.version + 1
    assert (pause.pause_status, pause.pause_mode, pause.pause_start, pause.pause_end) == (
        PauseStatus.ACTIVE,
        PauseMode.IMMEDIATE,
        at(5, 11),
        at(5, 21),
    )
    assert (pause.original_period_start, pause.original_period_end) == (at(5, 1), at(6, 1))
    assert (pause.reason, pause.metadata, pause.run_at) == ("holiday", {"by": "ada"}, at(5, 21))
    assert result.billing_impact.to_dict() == {
        "period_start": "2026-05-01T09:30:00Z",
        "original_period_end": "2026-06-01T09:30:00Z",
        "adjusted_period_end": "2026-06-11T09:30:00Z",
        "pause_start": "2026-05-11T09:30:00Z",
        "pause_end": "2026-05-21T09:30:00Z",
        "pause_duration_seconds": 10 * 86400,
        "amount_invoiced": "0.00",
        "amount_credited": "0.00",
        "currency": "usd",
    }
    assert w.sub(sub) == paused
    assert w.events(sub)[-2:] == ["subscription.updated", "subscription.paused"]
    (event,) = w.s.notifications.list(event_type="subscription.paused").items
    assert event.payload["event_type"] == "subscription.paused"
    assert {k: event.payload["subscription"][k] for k in ("id", "subscription_status", "pause_status")} == {
        "id": sub.id,
        "subscription_status": "paused",
        "pause_status": "active",
    }
    assert event.payload["subscription"]["customer"]["id"] == w.customer_id
    assert len(w.invoices(sub)) == 1  # the opening invoice only: pausing bills nothing

    assert w.run(at(5, 21) - timedelta(seconds=1)).invoices == []
    assert w.sub(sub).subscription_status is SubscriptionStatus.PAUSED
    w.run(at(5, 21))
    resumed = w.sub(sub)
    assert (resumed.subscription_status, resumed.pause_status, resumed.active_pause_id) == (
        SubscriptionStatus.ACTIVE,
        PauseStatus.NONE,
        None,
    )
    # 10 days paused: [1 May, 1 Jun) becomes [1 May, 11 Jun); the anchor moves with it.
    assert (resumed.current_period_start, resumed.current_period_end) == (at(5, 1), at(6, 11))
    assert resumed.billing_anchor == at(6, 11)
    assert resumed.next_run_at is not None and resumed.next_run_at <= at(6, 11)
    (done,) = w.s.subscriptions.pauses(sub.id)
    assert (done.pause_status, done.resume_mode, done.resumed_at, done.run_at) == (
        PauseStatus.COMPLETED,
        ResumeMode.AUTO,
        at(5, 21),
        None,
    )
    assert w.events(sub)[-2:] == ["subscription.updated", "subscription.resumed"]
    assert len(w.invoices(sub)) == 1


def test_a_resume_by_hand_stretches_the_period_by_the_time_really_paused(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    w.s.subscriptions.pause(sub.id, pause_end=at(5, 25))
    w.clock.set(at(5, 16, 21, 30))  # 5 days 12 hours later
    result = w.s.subscriptions.resume(sub.id)
    assert result.subscription.current_period_end == at(6, 6, 21, 30)
    assert result.subscription.subscription_status is SubscriptionStatus.ACTIVE
    assert (result.pause.pause_status, result.pause.resume_mode, result.pause.resumed_at) == (
        PauseStatus.COMPLETED,
        ResumeMode.IMMEDIATE,
        at(5, 16, 21, 30),
    )
    assert result.pause.pause_end == at(5, 25)  # what was asked for stays on record
    impact = result.billing_impact.to_dict()
    assert (impact["adjusted_period_end"], impact["pause_duration_seconds"]) == (
        "2026-06-06T21:30:00Z",
        5 * 86400 + 12 * 3600,
    )
    # Nothing is left for the worker: the pause's own end passes without effect.
    w.run(at(5, 26))
    assert w.sub(sub).current_period_end == at(6, 6, 21, 30)
    assert w.sub(sub).subscription_status is SubscriptionStatus.ACTIVE


def test_an_open_ended_pause_lasts_until_resumed(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    result = w.s.subscriptions.pause(sub.id)
    assert (result.pause.pause_end, result.pause.run_at) == (None, None)
    impact = result.billing_impact.to_dict()
    assert (impact["pause_end"], impact["adjusted_period_end"], impact["pause_duration_seconds"]) == (
        None,
        None,
        None,
    )
    report = w.run(at(8, 1))  # three period ends pass: nothing is billed while paused
    assert report.invoices == [] and w.sub(sub).subscription_status is SubscriptionStatus.PAUSED
    w.clock.set(at(8, 11))
    resumed = w.s.subscriptions.resume(sub.id).subscription
    assert resumed.current_period_end == at(6, 1) + (at(8, 11) - at(5, 11))  # 92 days later: 1 Sep
    assert resumed.current_period_end == at(9, 1)


def test_a_pause_bills_first_what_fell_due_before_it(w: World) -> None:
    """The worker has not run since the period ended: the pause first bills that period end."""
    sub = w.subscribe()
    w.clock.set(at(6, 3))
    result = w.s.subscriptions.pause(sub.id, pause_days=5)
    invoices = w.invoices(sub)
    assert [(i.period_start, i.period_end, str(i.amount_due)) for i in invoices] == [
        (at(5, 1), at(6, 1), "30.00"),
        (at(5, 1), at(6, 1), "30.00"),  # closing [1 May, 1 Jun) with [1 Jun, 1 Jul) in advance
    ]
    assert [i.billing_reason.value for i in invoices] == ["SUBSCRIPTION_CREATE", "SUBSCRIPTION_CYCLE"]
    assert (result.pause.original_period_start, result.pause.original_period_end) == (at(6, 1), at(7, 1))
    w.run(at(6, 8))
    assert w.sub(sub).current_period_end == at(7, 6)


# -- scheduled and period-end pauses -------------------------------------------------------------


def test_a_scheduled_pause_starts_at_its_time_by_the_worker(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 5))
    result = w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(5, 20), pause_days=7)
    assert (result.subscription.subscription_status, result.subscription.pause_status) == (
        SubscriptionStatus.ACTIVE,
        PauseStatus.SCHEDULED,
    )
    assert result.subscription.active_pause_id == result.pause.id
    assert (result.pause.pause_status, result.pause.run_at) == (PauseStatus.SCHEDULED, at(5, 20))
    assert w.events(sub)[-1] == "subscription.updated"

    w.run(at(5, 19))
    assert w.sub(sub).subscription_status is SubscriptionStatus.ACTIVE
    w.run(at(5, 20))
    started = w.sub(sub)
    assert (started.subscription_status, started.pause_status) == (
        SubscriptionStatus.PAUSED,
        PauseStatus.ACTIVE,
    )
    (pause,) = w.s.subscriptions.pauses(sub.id)
    assert (pause.pause_status, pause.run_at) == (PauseStatus.ACTIVE, at(5, 27))
    assert w.events(sub)[-2:] == ["subscription.updated", "subscription.paused"]
    w.run(at(5, 27))
    assert w.sub(sub).current_period_end == at(6, 8)


def test_a_late_run_starts_and_ends_a_scheduled_pause_and_bills_around_it(w: World) -> None:
    """Nothing ran from 5 May to 10 Jul: the pause [20 May, 27 May) is carried out at its own
    instants, then the stretched periods are billed."""
    sub = w.subscribe()
    w.clock.set(at(5, 5))
    w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(5, 20), pause_end=at(5, 27))
    report = w.run(at(7, 10))
    # [1 May, 8 Jun) stretched by 7 days, then [8 Jun, 8 Jul), both closed by this run.
    assert [(i.period_start, i.period_end) for i in report.invoices] == [
        (at(5, 1), at(6, 8)),
        (at(6, 8), at(7, 8)),
    ]
    (pause,) = w.s.subscriptions.pauses(sub.id)
    assert (pause.pause_status, pause.resumed_at, pause.resume_mode) == (
        PauseStatus.COMPLETED,
        at(5, 27),
        ResumeMode.AUTO,
    )
    assert (w.sub(sub).current_period_start, w.sub(sub).current_period_end) == (at(7, 8), at(8, 8))


def test_a_period_end_pause_starts_once_the_period_is_billed(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 20))
    result = w.s.subscriptions.pause(sub.id, pause_mode="period_end", pause_days=10)
    assert (result.pause.pause_start, result.pause.pause_end) == (at(6, 1), at(6, 11))
    # The period it interrupts is the next one: [1 Jun, 1 Jul), which becomes [1 Jun, 11 Jul).
    assert (result.pause.original_period_start, result.pause.original_period_end) == (at(6, 1), at(7, 1))
    assert result.billing_impact.adjusted_period_end == at(7, 11)

    report = w.run(at(6, 1))
    assert [(i.period_start, i.period_end, str(i.amount_due)) for i in report.invoices] == [
        (at(5, 1), at(6, 1), "30.00")
    ]
    paused = w.sub(sub)
    assert paused.subscription_status is SubscriptionStatus.PAUSED
    assert (paused.current_period_start, paused.current_period_end) == (at(6, 1), at(7, 1))
    w.run(at(6, 11))
    assert w.sub(sub).current_period_end == at(7, 11)
    assert w.run(at(7, 10)).invoices == []
    assert [(i.period_start, i.period_end) for i in w.run(at(7, 11)).invoices] == [(at(6, 1), at(7, 11))]


def test_resuming_a_scheduled_pause_withdraws_it(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 5))
    pause = w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(5, 20)).pause
    result = w.s.subscriptions.resume(sub.id, metadata={"why": "changed mind"})
    assert (result.pause.pause_status, result.pause.run_at, result.pause.metadata) == (
        PauseStatus.CANCELLED,
        None,
        {"why": "changed mind"},
    )
    assert (result.subscription.pause_status, result.subscription.active_pause_id) == (PauseStatus.NONE, None)
    assert result.subscription.current_period_end == at(6, 1)
    assert result.billing_impact.pause_duration_seconds == 0
    w.run(at(5, 21))
    assert w.sub(sub).subscription_status is SubscriptionStatus.ACTIVE
    assert w.s.subscriptions.pauses(sub.id)[0].id == pause.id
    assert w.s.subscriptions.pauses(sub.id)[0].pause_status is PauseStatus.CANCELLED
    # A new pause may be asked for again.
    assert w.s.subscriptions.pause(sub.id).subscription.subscription_status is SubscriptionStatus.PAUSED


def test_a_scheduled_pause_of_a_subscription_that_ended_first_is_cancelled(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 5))
    w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(5, 30))
    # The subscription is cut to end on 25 May (as a dated cancellation does) before it starts.
    with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
        stored = uow.subscriptions.get(sub.id)
        cut = {"end_date": at(5, 25), "current_period_end": at(5, 25), "next_run_at": at(5, 25)}
        uow.subscriptions.update(stored.model_copy(update=cut))
        uow.commit()
    w.run(at(5, 30))
    (pause,) = w.s.subscriptions.pauses(sub.id)
    assert (pause.pause_status, pause.run_at) == (PauseStatus.CANCELLED, None)
    ended = w.sub(sub)
    assert (ended.subscription_status, ended.pause_status, ended.active_pause_id) == (
        SubscriptionStatus.CANCELLED,
        PauseStatus.NONE,
        None,
    )


def test_a_pause_whose_subscription_moved_on_is_closed_without_touching_it(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 5))
    w.s.subscriptions.pause(sub.id, pause_days=3)
    with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
        stored = uow.subscriptions.get(sub.id)
        gone = {"subscription_status": "cancelled", "active_pause_id": None, "next_run_at": None}
        uow.subscriptions.update(stored.model_copy(update=gone))
        uow.commit()
    before = w.sub(sub)
    w.run(at(5, 8))
    (pause,) = w.s.subscriptions.pauses(sub.id)
    assert (pause.pause_status, pause.resumed_at, pause.run_at) == (PauseStatus.COMPLETED, None, None)
    assert w.sub(sub) == before


def test_a_pause_running_at_the_end_date_ends_there_and_the_subscription_ends(w: World) -> None:
    sub = w.subscribe(end_date=at(6, 15))
    w.clock.set(at(6, 5))
    w.run(at(6, 5))  # bills [1 May, 1 Jun); the last period is [1 Jun, 15 Jun)
    w.s.subscriptions.pause(sub.id, pause_days=30)
    (pause,) = w.s.subscriptions.pauses(sub.id)
    assert pause.run_at == at(6, 15)
    report = w.run(at(6, 15))
    ended = w.sub(sub)
    assert ended.subscription_status is SubscriptionStatus.CANCELLED
    assert (ended.current_period_end, ended.cancelled_at) == (at(6, 15), at(6, 15))
    assert report.invoices == []  # the closing period has no ARREAR charges; no period follows
    (pause,) = w.s.subscriptions.pauses(sub.id)
    assert (pause.pause_status, pause.resumed_at) == (PauseStatus.COMPLETED, at(6, 15))


# -- dry runs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["immediate", "scheduled", "period_end"])
def test_a_dry_run_pause_answers_what_would_happen_and_writes_nothing(w: World, mode: str) -> None:
    sub = w.subscribe()
    w.clock.set(at(6, 3))  # the period end of 1 Jun is not billed yet: a real pause would bill it
    fields: dict[str, Any] = {"pause_mode": mode, "pause_days": 4}
    if mode == "scheduled":
        fields["pause_start"] = at(6, 10)
    before = w.rows()
    preview = w.s.subscriptions.pause(sub.id, dry_run=True, **fields)
    assert w.rows() == before
    assert preview.dry_run is True and preview.to_dict()["dry_run"] is True
    real = w.s.subscriptions.pause(sub.id, **fields)
    skip = {"id", "created_at", "updated_at", "active_pause_id"}
    assert preview.subscription.model_dump(exclude=skip) == real.subscription.model_dump(exclude=skip)
    assert preview.pause.model_dump(exclude=skip) == real.pause.model_dump(exclude=skip)
    assert preview.billing_impact == real.billing_impact
    assert w.rows() != before


def test_a_dry_run_resume_writes_nothing(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    w.s.subscriptions.pause(sub.id)
    w.clock.set(at(5, 15))
    before = w.rows()
    preview = w.s.subscriptions.resume(sub.id, dry_run=True)
    assert w.rows() == before
    assert preview.subscription.current_period_end == at(6, 5)
    assert preview.pause.pause_status is PauseStatus.COMPLETED
    assert w.sub(sub).subscription_status is SubscriptionStatus.PAUSED
    assert w.s.subscriptions.resume(sub.id).subscription.current_period_end == at(6, 5)


def test_a_dry_run_notifies_no_subscriber(w: World) -> None:
    seen: list[str] = []
    w.billing.subscribe("subscription.paused", lambda event: seen.append(event.event_type))
    sub = w.subscribe()
    w.s.subscriptions.pause(sub.id, dry_run=True)
    assert seen == []
    w.s.subscriptions.pause(sub.id)
    assert seen == ["subscription.paused"]


# -- refusals ------------------------------------------------------------------------------------


def _refused(w: World, sub: Subscription, error: type[Exception], **fields: Any) -> Any:
    before = w.rows()
    with pytest.raises(error) as caught:
        w.s.subscriptions.pause(sub.id, **fields)
    assert w.rows() == before
    return caught.value


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"pause_end": at(5, 1)}, "pause_end"),  # before the start (now: 5 May)
        ({"pause_end": at(5, 5)}, "pause_end"),  # at the start
        ({"pause_end": at(5, 20), "pause_days": 3}, "pause_days"),
        ({"pause_days": 0}, "pause_days"),
        ({"pause_mode": "scheduled"}, "pause_start"),
        ({"pause_mode": "scheduled", "pause_start": at(5, 4)}, "pause_start"),
        ({"pause_mode": "scheduled", "pause_start": at(5, 10), "pause_end": at(5, 9)}, "pause_end"),
        ({"pause_start": at(5, 10)}, "pause_start"),
        ({"pause_mode": "period_end", "pause_start": at(6, 1)}, "pause_start"),
        ({"pause_mode": "period_end", "pause_end": at(5, 31)}, "pause_end"),
        ({"pause_mode": "sometimes"}, "pause_mode"),
        ({"reason": "x" * 256}, "reason"),
        ({"proration_behavior": "create_prorations"}, "proration_behavior"),
    ],
)
def test_bad_pause_requests_name_the_field(w: World, fields: dict[str, Any], field: str) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 5))
    error = _refused(w, sub, ValidationError, **fields)
    assert error.details["field"] == field


def test_only_active_subscriptions_are_paused(w: World) -> None:
    draft = w.subscribe(subscription_status="draft")
    error = _refused(w, draft, InvalidOperation)
    assert "only active subscriptions can be paused" in error.message and "draft" in error.message
    trial = w.subscribe(trial_period_days=7)
    assert "trialing" in _refused(w, trial, InvalidOperation).message
    sub = w.subscribe()
    w.s.subscriptions.pause(sub.id)
    assert "paused" in _refused(w, sub, InvalidOperation).message
    with pytest.raises(NotFound):
        w.s.subscriptions.pause("subs_missing")


def test_a_second_pause_waits_for_the_first(w: World) -> None:
    sub = w.subscribe()
    first = w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(5, 20)).pause
    error = _refused(w, sub, InvalidOperation, pause_days=2)
    assert "already has a scheduled pause" in error.message
    assert error.details["active_pause_id"] == first.id


def test_a_subscription_to_be_cancelled_or_ending_first_is_not_paused(w: World) -> None:
    sub = w.subscribe()
    with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
        stored = uow.subscriptions.get(sub.id)
        uow.subscriptions.update(
            stored.model_copy(update={"cancel_at": at(6, 1), "cancel_at_period_end": True})
        )
        uow.commit()
    assert "pending cancellation" in _refused(w, sub, InvalidOperation).message
    ending = w.subscribe(end_date=at(5, 20))
    error = _refused(w, ending, InvalidOperation, pause_mode="scheduled", pause_start=at(5, 25))
    assert "before the pause would start" in error.message


def test_resuming_needs_a_paused_subscription_or_a_scheduled_pause(w: World) -> None:
    sub = w.subscribe()
    before = w.rows()
    with pytest.raises(InvalidOperation) as caught:
        w.s.subscriptions.resume(sub.id)
    assert "only a paused subscription or one with a scheduled pause can be resumed" in caught.value.message
    w.s.subscriptions.pause(sub.id)
    w.s.subscriptions.resume(sub.id)
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.resume(sub.id)  # resumed already
    assert len(w.rows()["subscription_pauses"]) == 1 and before["subscription_pauses"] == []
    with pytest.raises(ValidationError) as bad:
        w.s.subscriptions.resume(sub.id, resume_mode="auto")
    assert bad.value.details["field"] == "resume_mode"
    with pytest.raises(NotFound):
        w.s.subscriptions.resume("subs_missing")


# -- reads ---------------------------------------------------------------------------------------


def test_the_v2_read_shows_the_pauses_while_there_is_a_pause_status(w: World) -> None:
    sub = w.subscribe()
    assert "pauses" not in w.s.subscriptions.get_v2(sub.id).to_dict()
    first = w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(5, 10)).pause
    w.s.subscriptions.resume(sub.id)
    assert "pauses" not in w.s.subscriptions.get_v2(sub.id).to_dict()
    second = w.s.subscriptions.pause(sub.id, pause_days=3).pause
    data = w.s.subscriptions.get_v2(sub.id).to_dict()
    assert [p["id"] for p in data["pauses"]] == [second.id, first.id]  # newest first
    assert data["pause_status"] == "active" and data["active_pause_id"] == second.id
    assert set(data["pauses"][0]) == set(SubscriptionPause.model_fields) - {"run_at", "version"}
    assert [p.id for p in w.s.subscriptions.pauses(sub.id)] == [second.id, first.id]
    with pytest.raises(NotFound):
        w.s.subscriptions.pauses("subs_missing")


# -- credit grants while paused ------------------------------------------------------------------

MONTHLY_CREDITS = {"name": "Monthly credits", "credits": "100", "cadence": "RECURRING", "period": "MONTHLY"}


def _granted(w: World) -> Subscription:
    fee = {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": "30",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
    }
    plan = w.s.plans.create(name="Granted", prices=[fee], credit_grants=[MONTHLY_CREDITS])
    return w.s.subscriptions.create(
        customer_id=w.customer_id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )


def _applications(w: World, sub: Subscription) -> list[tuple[datetime, str]]:
    items = w.s.credit_grants.applications(subscription_ids=[sub.id], limit=100).items
    return sorted((c.period_start, c.application_status.value) for c in items)


@pytest.mark.parametrize("on_time", [True, False], ids=["worker on time", "worker late"])
def test_credits_due_while_paused_are_skipped(w: World, on_time: bool) -> None:
    sub = _granted(w)
    w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(5, 25), pause_end=at(6, 5))
    if on_time:
        for day in (at(5, 25), at(6, 1), at(6, 5)):
            w.run(day)
    w.run(at(6, 10))
    assert _applications(w, sub) == [
        (at(5, 1), "applied"),
        (at(6, 1), "skipped"),  # due on 1 Jun, inside the pause [25 May, 5 Jun)
        (at(7, 1), "pending"),
    ]


def test_credits_due_before_a_pause_are_granted_even_when_carried_out_during_it(w: World) -> None:
    sub = _granted(w)
    w.clock.set(at(6, 3))  # the worker has not run since 1 Jun
    w.s.subscriptions.pause(sub.id)
    w.run(at(6, 4))
    assert _applications(w, sub) == [(at(5, 1), "applied"), (at(6, 1), "applied"), (at(7, 1), "pending")]


def test_auto_invoice_threshold_checks_stop_while_paused_and_start_again(w: World) -> None:
    meter = w.s.meters.create(name="Calls", event_name="api", aggregation={"type": "COUNT"})
    usage = {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": "0.1",
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter.id,
    }
    plan = w.s.plans.create(name="Metered", prices=[usage])
    sub = w.s.subscriptions.create(
        customer_id=w.customer_id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        auto_invoice_threshold="50",
    )
    interval = w.billing.settings.auto_invoice_check_interval
    assert sub.next_run_at == at(5, 1) + interval
    w.clock.set(at(5, 10))
    assert w.s.subscriptions.pause(sub.id).subscription.next_run_at is None
    w.clock.set(at(5, 12))
    resumed = w.s.subscriptions.resume(sub.id).subscription
    assert resumed.next_run_at == at(5, 12) + interval


# -- cancelling a paused subscription ------------------------------------------------------------


def test_an_immediate_cancel_ends_the_pause_first(w: World) -> None:
    sub = w.subscribe()
    w.clock.set(at(5, 11))
    pause = w.s.subscriptions.pause(sub.id).pause
    w.clock.set(at(5, 21))
    result = w.s.subscriptions.cancel(sub.id, cancellation_type="immediate")
    cancelled = result.subscription
    assert cancelled.subscription_status is SubscriptionStatus.CANCELLED
    assert (cancelled.pause_status, cancelled.active_pause_id) == (PauseStatus.NONE, None)
    assert cancelled.cancelled_at == at(5, 21)
    (done,) = w.s.subscriptions.pauses(sub.id)
    assert (done.id, done.pause_status, done.resumed_at, done.run_at) == (
        pause.id,
        PauseStatus.COMPLETED,
        at(5, 21),
        None,
    )
    assert w.events(sub)[-4:] == [
        "subscription.updated",
        "subscription.resumed",
        "subscription.updated",
        "subscription.cancelled",
    ]


def test_a_scheduled_cancel_of_a_paused_subscription_is_refused(w: World) -> None:
    sub = w.subscribe()
    w.s.subscriptions.pause(sub.id)
    before = w.rows()
    for kind in ("end_of_period", "scheduled_date"):
        fields: dict[str, Any] = {"cancel_at": at(7, 1)} if kind == "scheduled_date" else {}
        with pytest.raises(InvalidOperation) as caught:
            w.s.subscriptions.cancel(sub.id, cancellation_type=kind, **fields)
        assert "is paused" in caught.value.message
    assert w.rows() == before


def test_a_cancellation_closes_a_scheduled_pause(w: World) -> None:
    sub = w.subscribe()
    w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(5, 20), pause_days=5)
    w.clock.set(at(5, 10))
    cancelled = w.s.subscriptions.cancel(sub.id, cancellation_type="immediate").subscription
    assert (cancelled.pause_status, cancelled.active_pause_id) == (PauseStatus.NONE, None)
    (pause,) = w.s.subscriptions.pauses(sub.id)
    assert (pause.pause_status, pause.run_at) == (PauseStatus.CANCELLED, None)
    w.run(at(5, 25))  # nothing left for the worker
    assert w.s.subscriptions.pauses(sub.id)[0].pause_status is PauseStatus.CANCELLED


def test_a_scheduled_pause_ends_with_its_subscription_at_a_scheduled_cancellation(w: World) -> None:
    sub = w.subscribe()
    w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=at(6, 10), pause_days=5)
    w.s.subscriptions.cancel(sub.id, cancellation_type="end_of_period")  # at 1 Jun
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.pause(sub.id)  # one pause at a time, and a cancellation is pending
    w.run(at(6, 1))
    ended = w.sub(sub)
    assert (ended.subscription_status, ended.pause_status, ended.active_pause_id) == (
        SubscriptionStatus.CANCELLED,
        PauseStatus.NONE,
        None,
    )
    (pause,) = w.s.subscriptions.pauses(sub.id)
    assert (pause.pause_status, pause.run_at) == (PauseStatus.CANCELLED, None)


def test_a_child_of_a_hierarchy_is_not_paused(w: World) -> None:
    for kind in (SubscriptionType.GROUPED_INVOICING, SubscriptionType.INHERITED):
        sub = w.subscribe()
        with w.billing.storage.unit_of_work(w.s.tenant_id, w.s.environment_id) as uow:
            stored = uow.subscriptions.get(sub.id)
            child = {"subscription_type": kind, "parent_subscription_id": "subs_parent"}
            uow.subscriptions.update(stored.model_copy(update=child))
            uow.commit()
        error = _refused(w, sub, InvalidOperation)
        assert f"is a {kind.value} child" in error.message and "pause the parent" in error.message
