"""The due-work runner: kinds and handlers, batches, per-batch failures, what handlers receive."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from billingkit import Billing, Settings, TestClock
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import ListQuery
from billingkit.domain.resources import Record
from billingkit.domain.subscriptions import Subscription
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import due_work, webhook_dispatch
from billingkit.services.billing_runs import BatchResult, bill_due_subscriptions
from billingkit.services.context import DueRun
from billingkit.services.credit_grant_applications import apply_due_applications
from billingkit.services.subscription_pauses import run_due_pauses
from billingkit.storage.kinds import KINDS
from billingkit.testing.contracts.storage import sample
from tests.stories import weekly_subscription


def test_every_kind_that_carries_due_work_has_its_handler() -> None:
    declared = {name for name, kind in KINDS.items() if kind.due_at is not None}
    # The webhook dispatcher claims its own kinds: it sends outside any unit of work.
    assert set(due_work.HANDLERS) | set(webhook_dispatch.CLAIMED) == declared
    assert not set(due_work.HANDLERS) & set(webhook_dispatch.CLAIMED)
    assert due_work.HANDLERS["subscriptions"] is bill_due_subscriptions
    assert due_work.HANDLERS["credit_grant_applications"] is apply_due_applications
    assert due_work.HANDLERS["subscription_pauses"] is run_due_pauses
    order = list(due_work.HANDLERS)
    # Billing before grants: a period's closing invoice never sees the next period's credits.
    assert order.index("subscriptions") < order.index("credit_grant_applications")
    # Pauses first: one starting or ending before the billing run moves what it bills.
    assert order[0] == "subscription_pauses"


def _due_subscriptions(billing: Billing, count: int) -> list[Subscription]:
    """``count`` subscriptions of two scopes, due a minute apart (earliest first), stored as is."""
    now = billing.clock.now()
    subs = [
        sample(
            "subscriptions",
            tenant_id=f"tenant_{i % 2}",
            environment_id=f"env_{i % 2}",
            next_run_at=now - timedelta(minutes=count - i),
        )
        for i in range(count)
    ]
    for sub in subs:
        with billing.storage.unit_of_work(sub.tenant_id, sub.environment_id) as uow:
            uow.subscriptions.add(sub)
            uow.commit()
    return subs


class Recorder:
    """A handler that records each batch and the run it was given, and marks the items done."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.runs: list[DueRun] = []

    def __call__(self, uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
        self.batches.append([item.id for item in items])
        self.runs.append(run)
        for item in items:
            assert isinstance(item, Subscription)
            done = item.model_copy(update={"next_run_at": None})
            uow.for_scope(item.tenant_id, item.environment_id).subscriptions.update_many([(item, done)])
        result = BatchResult()
        result.report.subscription_count = len(items)
        return result


def test_the_runner_claims_batches_of_the_settings_size_and_hands_them_to_the_kinds_handler(
    billing: Billing, monkeypatch: pytest.MonkeyPatch
) -> None:
    subs = _due_subscriptions(billing, 5)
    recorder = Recorder()
    monkeypatch.setattr(due_work, "HANDLERS", {"subscriptions": recorder})
    billing.settings = billing.settings.replace(run_batch_size=2)

    report = billing.run_due()

    ids = [sub.id for sub in subs]
    assert recorder.batches == [ids[:2], ids[2:4], ids[4:]]  # earliest first, across scopes
    assert report.subscription_count == 5
    # Every handler call of the run shares one DueRun: the run's instant, settings and parties.
    assert {id(run) for run in recorder.runs} == {id(recorder.runs[0])}
    run = recorder.runs[0]
    assert (run.now, run.settings, run.providers) == (
        billing.clock.now(),
        billing.settings,
        billing.providers,
    )
    ctx = run.context("tenant_0", "env_0")
    assert (ctx.settings, ctx.providers, ctx.actor.id) == (billing.settings, billing.providers, "system")
    assert billing.run_due(batch_size=3).subscription_count == 0  # all done: nothing claimed again


def test_a_failing_batch_is_rolled_back_and_retried_one_item_at_a_time(
    billing: Billing, clock: TestClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    billing.renewal_notice = None
    subs = [weekly_subscription(billing, f"w-{i}")[1] for i in range(3)]
    bad = subs[1]
    calls: list[list[str]] = []

    def fails_with_bad(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
        calls.append([item.id for item in items])
        result = bill_due_subscriptions(uow, items, run)  # writes invoices, then fails the batch
        if any(item.id == bad.id for item in items):
            raise InvalidOperation("the ledger refused it")
        return result

    monkeypatch.setattr(due_work, "HANDLERS", {"subscriptions": fails_with_bad})
    heard: list[NotificationEvent] = []
    billing.subscribe("*", heard.append)
    clock.advance(weeks=1, hours=1)

    report = billing.run_due()

    ids = [sub.id for sub in subs]
    assert calls == [ids, [ids[0]], [ids[1]], [ids[2]]]
    assert report.failures == [(bad.id, "invalid_operation", "the ledger refused it")]
    assert report.subscription_count == 2
    assert sorted(inv.subscription_id or "" for inv in report.invoices) == sorted([ids[0], ids[2]])
    # Only committed work was heard of: the rolled-back batch's notifications never went out.
    assert len(heard) == report.notification_count == 2
    with billing.storage.unit_of_work(bad.tenant_id, bad.environment_id) as uow:
        still = uow.subscriptions.get(bad.id)
        invoices = uow.invoices.list(ListQuery.where(subscription_id=bad.id)).items
    assert (still.version, still.next_run_at) == (bad.version, bad.next_run_at)  # untouched, still due
    assert [inv.billing_reason.value for inv in invoices] == ["SUBSCRIPTION_CREATE"]

    monkeypatch.undo()  # the real handler bills the one left due, and only it
    again = billing.run_due()
    assert ([inv.subscription_id for inv in again.invoices], again.failures) == ([bad.id], [])


def test_a_retried_item_that_is_no_longer_due_is_left_alone(billing: Billing) -> None:
    (sub,) = _due_subscriptions(billing, 1)
    later = sub.model_copy(update={"next_run_at": billing.clock.now() + timedelta(days=1)})
    run = DueRun(
        now=billing.clock.now(), ids=billing.ids, settings=billing.settings, providers=billing.providers
    )
    with billing.storage.unit_of_work(sub.tenant_id, sub.environment_id) as uow:
        result = bill_due_subscriptions(uow, [later], run)
        assert uow.subscriptions.get(sub.id) == sub
    assert (result.report.subscription_count, result.recorded) == (0, [])


def test_a_batch_size_below_one_is_refused(billing: Billing) -> None:
    with pytest.raises(ValidationError) as caught:
        billing.run_due(batch_size=0)
    assert caught.value.field == "batch_size"
    with pytest.raises(ValidationError) as caught:
        Billing(settings=Settings(run_batch_size=0))
    assert caught.value.field == "run_batch_size"
