"""Alerts: settings, the state machine, each evaluator, when they run, and one firing per change
(memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal

import pytest

from billingkit import Billing, NotFound, Scoped, TestClock, ValidationError
from billingkit.domain.alerts import AlertEntityType, AlertType
from billingkit.domain.wallets import AlertState
from billingkit.errors import AlreadyExists
from billingkit.services import alert_states
from billingkit.services.alert_runs import evaluate_settings
from tests.alert_story import AlertStory, Inbox, build_story, critical_at

SPEND_REACHED = "subscription.spend.threshold_reached"
SPEND_RECOVERED = "subscription.spend.threshold_recovered"


@pytest.fixture
def story(test_env: Scoped) -> AlertStory:
    return build_story(test_env)


@pytest.fixture
def inbox(billing: Billing) -> Inbox:
    received = Inbox()
    billing.subscribe("*", received)
    return received


def test_a_spend_threshold_crossed_by_usage_fires_once_and_recovers_once_in_a_new_period(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox
) -> None:
    scoped = story.scoped
    setting = scoped.alerts.create(
        entity_type="subscription", entity_id=story.subscription.id, config=critical_at("100.00")
    )
    start = clock.now()
    story.use(60, start + timedelta(hours=1))
    billing.run_due(clock.advance(timedelta(minutes=5)))
    assert inbox.of(SPEND_REACHED) == []
    assert scoped.alerts.get(setting.id).alert_state is AlertState.OK

    story.use(45, start + timedelta(hours=2))  # 105.00: over the threshold
    billing.run_due(clock.advance(timedelta(minutes=5)))
    (reached,) = inbox.of(SPEND_REACHED)
    payload = reached.payload
    assert payload["alert_type"] == "subscription_spend"
    assert payload["alert_status"] == "in_alarm"
    assert payload["current_spend"] == "105.00"
    assert payload["threshold"] == "100.00"
    assert payload["subscription"]["id"] == story.subscription.id
    assert payload["subscription"]["customer"]["external_id"] == "ada"
    assert payload["subscription_line_item_id"] is None and payload["group_id"] is None
    assert scoped.alerts.get(setting.id).alert_state is AlertState.IN_ALARM

    story.use(500, start + timedelta(hours=3))  # more usage: still in alarm, nothing new
    for _ in range(3):
        billing.run_due(clock.advance(timedelta(minutes=5)))
    assert len(inbox.of(SPEND_REACHED)) == 1

    # The period ends: it is billed, the new period has no usage yet.
    billing.run_due(clock.advance(months=1))
    (recovered,) = inbox.of(SPEND_RECOVERED)
    assert recovered.payload["alert_status"] == "ok"
    assert recovered.payload["current_spend"] == "0.00" or Decimal(recovered.payload["current_spend"]) == 0
    assert recovered.payload["threshold"] == "100.00"
    billing.run_due(clock.advance(timedelta(minutes=5)))
    assert len(inbox.of(SPEND_RECOVERED)) == 1 and len(inbox.of(SPEND_REACHED)) == 1

    history = scoped.alerts.logs(entity_id=story.subscription.id, order="asc").items
    assert [(h.alert_type, h.alert_status) for h in history] == [
        (AlertType.SUBSCRIPTION_SPEND, AlertState.IN_ALARM),
        (AlertType.SUBSCRIPTION_SPEND, AlertState.OK),
    ]
    assert history[0].alert_info.value == Decimal("105.00")


def test_ingestion_with_evaluate_alerts_immediately_fires_before_it_returns(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox
) -> None:
    story.scoped.alerts.create(
        entity_type="subscription", entity_id=story.subscription.id, config=critical_at("100")
    )
    at = clock.now() + timedelta(minutes=1)
    story.use(150, at)  # not asked: nothing until the worker runs
    assert inbox.of(SPEND_REACHED) == []
    story.use(1, at, immediately=True)
    assert len(inbox.of(SPEND_REACHED)) == 1
    story.use(1, at, immediately=True, n=1)
    billing.run_due(clock.advance(timedelta(minutes=5)))
    assert len(inbox.of(SPEND_REACHED)) == 1


def test_levels_escalate_and_each_change_fires_with_its_state(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox
) -> None:
    config = {
        "info": {"threshold": "10", "condition": "above"},
        "warning": {"threshold": "50", "condition": "above"},
        "critical": {"threshold": "100", "condition": "above"},
    }
    story.scoped.alerts.create(entity_type="subscription", entity_id=story.subscription.id, config=config)
    at = clock.now() + timedelta(minutes=1)
    for n, tokens in enumerate((20, 40, 50)):  # 20 -> info, 60 -> warning, 110 -> critical
        story.use(tokens, at, immediately=True, n=n)
    assert [(e.payload["alert_status"], e.payload["threshold"]) for e in inbox.of(SPEND_REACHED)] == [
        ("info", "10"),
        ("warning", "50"),
        ("in_alarm", "100"),
    ]


def test_line_item_and_group_spend_fire_their_own_kinds(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox
) -> None:
    scoped = story.scoped
    sub_id = story.subscription.id
    scoped.alerts.create(
        entity_type="subscription_line_item",
        entity_id=story.line_item_id,
        parent_entity_id=sub_id,
        config=critical_at("100.00"),
    )
    scoped.alerts.create(
        entity_type="group", entity_id=story.group_id, parent_entity_id=sub_id, config=critical_at("50")
    )
    start = clock.now()
    story.use(120, start + timedelta(minutes=1))
    billing.run_due(clock.advance(timedelta(minutes=5)))
    billing.run_due(clock.advance(timedelta(minutes=5)))
    (line,) = inbox.of("subscription.line_item_spend.threshold_reached")
    assert line.payload["subscription_line_item_id"] == story.line_item_id
    assert line.payload["alert_type"] == "subscription_line_item_spend"
    assert line.payload["current_spend"] == "120.00"
    (group,) = inbox.of("subscription.group_spend.threshold_reached")
    assert group.payload["group_id"] == story.group_id
    assert group.payload["alert_type"] == "subscription_group_spend"
    assert inbox.of(SPEND_REACHED) == []

    billing.run_due(clock.advance(months=1))
    assert len(inbox.of("subscription.line_item_spend.threshold_recovered")) == 1
    assert len(inbox.of("subscription.group_spend.threshold_recovered")) == 1


def test_wallet_credit_and_ongoing_balance_drop_and_recover(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox
) -> None:
    scoped = story.scoped
    wallet = scoped.wallets.create(
        customer_id=story.customer_id,
        currency="usd",
        initial_credits_to_load="50",
        alert_settings={
            "alert_enabled": True,
            "warning": {"threshold": "20", "condition": "below"},
            "critical": {"threshold": "5", "condition": "below"},
        },
    )
    billing.run_due(clock.advance(timedelta(minutes=1)))
    assert (
        inbox.of("wallet.credit_balance.dropped") == [] and inbox.of("wallet.ongoing_balance.dropped") == []
    )

    story.use(35, clock.now())  # ongoing balance 50 - 35 = 15: warning; credits untouched
    billing.run_due(clock.advance(timedelta(minutes=1)))
    (dropped,) = inbox.of("wallet.ongoing_balance.dropped")
    assert dropped.payload["wallet"]["id"] == wallet.id
    assert dropped.payload["alert"]["alert_type"] == "low_ongoing_balance"
    assert dropped.payload["alert"]["state"] == "warning"
    assert dropped.payload["alert"]["current_balance"] == "15.00"
    assert dropped.payload["alert"]["credit_balance"] == "50"
    assert inbox.of("wallet.credit_balance.dropped") == []
    assert scoped.wallets.get(wallet.id).alert_state is AlertState.WARNING

    story.use(12, clock.now())  # 3: in alarm, an update of a dropped balance
    billing.run_due(clock.advance(timedelta(minutes=1)))
    billing.run_due(clock.advance(timedelta(minutes=1)))
    (updated,) = inbox.of("wallet.ongoing_balance.updated")
    assert updated.payload["alert"]["state"] == "in_alarm"
    assert len(inbox.of("wallet.ongoing_balance.dropped")) == 1

    scoped.wallets.top_up(wallet.id, credits_to_add="100", transaction_reason="FREE_CREDIT_GRANT")
    billing.run_due(clock.advance(timedelta(minutes=1)))
    (recovered,) = inbox.of("wallet.ongoing_balance.recovered")
    assert recovered.payload["alert"]["state"] == "ok"
    assert scoped.wallets.get(wallet.id).alert_state is AlertState.OK


def test_wallet_credit_balance_alert_on_the_credits(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox
) -> None:
    scoped = story.scoped
    wallet = scoped.wallets.create(
        customer_id=story.customer_id,
        currency="usd",
        initial_credits_to_load="3",
        alert_settings={"alert_enabled": True, "critical": {"threshold": "5", "condition": "below"}},
    )
    billing.run_due(clock.advance(timedelta(minutes=1)))
    billing.run_due(clock.advance(timedelta(minutes=1)))
    (dropped,) = inbox.of("wallet.credit_balance.dropped")
    assert dropped.payload["alert"] == {
        "alert_settings": {
            "alert_enabled": True,
            "critical": {"threshold": "5", "condition": "below"},
            "warning": None,
            "info": None,
        },
        "alert_type": "low_credit_balance",
        "state": "in_alarm",
        "credit_balance": "3",
        "current_balance": "3.00",
    }
    scoped.wallets.top_up(wallet.id, credits_to_add="10", transaction_reason="FREE_CREDIT_GRANT")
    billing.run_due(clock.advance(timedelta(minutes=1)))
    assert len(inbox.of("wallet.credit_balance.recovered")) == 1
    assert len(inbox.of("wallet.credit_balance.dropped")) == 1


def test_feature_alert_settings_watch_the_wallets_of_its_users(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox
) -> None:
    scoped = story.scoped
    scoped.features.update(
        story.feature_id,
        alert_settings={"alert_enabled": True, "critical": {"threshold": "10", "condition": "below"}},
    )
    wallet = scoped.wallets.create(
        customer_id=story.customer_id,
        currency="usd",
        initial_credits_to_load="30",
        alert_settings={"alert_enabled": True, "critical": {"threshold": "0", "condition": "below"}},
    )
    story.use(25, clock.now())
    billing.run_due(clock.advance(timedelta(minutes=1)))
    billing.run_due(clock.advance(timedelta(minutes=1)))
    (alert,) = inbox.of("feature.wallet_balance.alert")
    assert alert.payload == {
        "event_type": "feature.wallet_balance.alert",
        "alert_type": "feature_wallet_balance",
        "alert_status": "in_alarm",
        "customer_id": story.customer_id,
        "feature_id": story.feature_id,
        "wallet_id": wallet.id,
        "credit_balance": "30",
        "current_balance": "5.00",
    }
    scoped.wallets.top_up(wallet.id, credits_to_add="100", transaction_reason="FREE_CREDIT_GRANT")
    billing.run_due(clock.advance(timedelta(minutes=1)))
    assert [e.payload["alert_status"] for e in inbox.of("feature.wallet_balance.alert")] == ["in_alarm", "ok"]


def test_entitlement_grant_exhaustion_fires_once_per_window(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox
) -> None:
    scoped = story.scoped
    setting = scoped.alerts.create(
        entity_type="entitlement_grant",
        entity_id=story.entitlement_id,
        parent_entity_id=story.subscription.id,
        config={"warning": {"threshold": "800", "condition": "above"}},
    )
    story.use(850, clock.now(), event_name="api.call")
    billing.run_due(clock.advance(timedelta(minutes=1)))
    assert inbox.of("entitlement.grant.exhausted") == []
    assert scoped.alerts.get(setting.id).alert_state is AlertState.WARNING

    story.use(150, clock.now(), immediately=True, event_name="api.call")  # 1,000 of 1,000
    (exhausted,) = inbox.of("entitlement.grant.exhausted")
    assert exhausted.payload["entitlement"]["id"] == story.entitlement_id
    assert exhausted.payload["usage"] == "1000" and exhausted.payload["usage_limit"] == "1000"
    assert exhausted.payload["subscription_id"] == story.subscription.id
    story.use(10, clock.now(), immediately=True, event_name="api.call")
    billing.run_due(clock.advance(timedelta(minutes=1)))
    assert len(inbox.of("entitlement.grant.exhausted")) == 1

    billing.run_due(clock.advance(months=1))  # a new window: back to ok, no notification
    story.use(1000, clock.now(), immediately=True, event_name="api.call")
    assert len(inbox.of("entitlement.grant.exhausted")) == 2
    kinds = [
        (h.alert_type, h.alert_status)
        for h in scoped.alerts.logs(alert_type="entitlement_grant_exhausted", order="asc").items
    ]
    assert kinds == [
        (AlertType.ENTITLEMENT_GRANT_EXHAUSTED, AlertState.IN_ALARM),
        (AlertType.ENTITLEMENT_GRANT_EXHAUSTED, AlertState.OK),
        (AlertType.ENTITLEMENT_GRANT_EXHAUSTED, AlertState.IN_ALARM),
    ]


def test_two_evaluators_that_saw_the_same_state_write_one_change(
    billing: Billing, clock: TestClock, story: AlertStory, monkeypatch: pytest.MonkeyPatch
) -> None:
    scoped = story.scoped
    setting = scoped.alerts.create(
        entity_type="subscription", entity_id=story.subscription.id, config=critical_at("10")
    )
    story.use(20, clock.now())
    ctx = billing.context(scoped.tenant_id, scoped.environment_id, scoped.actor)
    storage = billing.storage
    with storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as first:
        seen = first.alert_settings.get(setting.id)
    # Two evaluators read the alert's state (ok) before either wrote: the first writes the change.
    with storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
        evaluate_settings(uow, ctx, [seen], reschedule=False)
        uow.commit()
    # The second still sees ok (its read came before the first's commit): its write is refused.
    monkeypatch.setattr(alert_states, "current_states", lambda uow, keys: {})
    with storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow, pytest.raises(AlreadyExists):
        evaluate_settings(uow, ctx, [seen], reschedule=False)
    monkeypatch.undo()
    assert scoped.notifications.list(event_type=SPEND_REACHED).total == 1
    assert scoped.alerts.logs().total == 1
    assert scoped.alerts.get(setting.id).alert_state is AlertState.IN_ALARM


def test_settings_refuse_bad_input_and_name_the_field(story: AlertStory) -> None:
    scoped = story.scoped
    sub_id = story.subscription.id
    cases = [
        ({"entity_type": "wallet", "entity_id": "w", "config": critical_at("1")}, "entity_type"),
        ({"entity_type": "nope", "entity_id": sub_id, "config": critical_at("1")}, "entity_type"),
        ({"entity_type": "subscription", "entity_id": sub_id, "config": {"alert_enabled": True}}, "config"),
        (
            {
                "entity_type": "subscription",
                "entity_id": sub_id,
                "config": {"warning": {"threshold": "100"}, "critical": {"threshold": "50"}},
            },
            "config.critical.threshold",
        ),
        (
            {
                "entity_type": "subscription",
                "entity_id": sub_id,
                "config": {"critical": {"threshold": "1", "condition": "sideways"}},
            },
            "config.critical.condition",
        ),
        (
            {"entity_type": "subscription", "entity_id": sub_id, "config": {"critical": {"threshold": "x"}}},
            "config.critical.threshold",
        ),
        (
            {
                "entity_type": "subscription_line_item",
                "entity_id": story.line_item_id,
                "config": critical_at("1"),
            },
            "parent_entity_id",
        ),
        ({"entity_type": "subscription", "entity_id": sub_id}, "config"),
    ]
    for body, field in cases:
        with pytest.raises(ValidationError) as caught:
            scoped.alerts.create(**body)
        assert caught.value.field == field, body
    with pytest.raises(NotFound):
        scoped.alerts.create(entity_type="subscription", entity_id="subs_missing", config=critical_at("1"))
    with pytest.raises(NotFound):
        scoped.alerts.create(
            entity_type="subscription_line_item",
            entity_id="li_x",
            parent_entity_id=sub_id,
            config=critical_at("1"),
        )
    assert scoped.alerts.search().total == 0


def test_settings_crud_search_and_scopes(story: AlertStory, prod_env: Scoped, clock: TestClock) -> None:
    scoped = story.scoped
    sub_id = story.subscription.id
    setting = scoped.alerts.create(entity_type="subscription", entity_id=sub_id, config=critical_at("100"))
    assert setting.config.alert_enabled is True and setting.enabled is True
    assert setting.alert_state is AlertState.OK and setting.customer_id == story.customer_id
    group = scoped.alerts.create(
        entity_type="group", entity_id=story.group_id, parent_entity_id=sub_id, config=critical_at("5")
    )
    assert group.parent_entity_type is AlertEntityType.SUBSCRIPTION

    changed = scoped.alerts.update(setting.id, config={"warning": {"threshold": "50"}})
    assert changed.config.critical is not None and changed.config.critical.threshold == Decimal("100")
    assert changed.config.warning is not None and changed.config.warning.threshold == Decimal("50")
    off = scoped.alerts.update(setting.id, enabled=False)
    assert off.enabled is False and off.next_check_at is None

    assert [s.id for s in scoped.alerts.search(entity_type="group").items] == [group.id]
    assert [s.id for s in scoped.alerts.search(parent_entity_ids=[sub_id]).items] == [group.id]
    assert {s.id for s in scoped.alerts.search(entity_ids=[sub_id, story.group_id]).items} == {
        setting.id,
        group.id,
    }
    assert [s.id for s in scoped.alerts.search(enabled=False).items] == [setting.id]

    # Another environment sees none of it.
    with pytest.raises(NotFound):
        prod_env.alerts.get(setting.id)
    assert prod_env.alerts.search().total == 0
    with pytest.raises(NotFound):
        prod_env.alerts.delete(setting.id)

    scoped.alerts.delete(setting.id)
    with pytest.raises(NotFound):
        scoped.alerts.get(setting.id)
    assert [s.id for s in scoped.alerts.search().items] == [group.id]


def test_two_concurrent_evaluations_on_postgresql_fire_once(
    billing: Billing, clock: TestClock, story: AlertStory, inbox: Inbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ingestion calls evaluate ada's alert at the same moment, both having read ``ok``: the
    database's unique (alert, sequence) lets one write the change; the other's unit of work fails
    whole, and ingestion's retry finds nothing left to record."""
    from billingkit.storage.sql import SqlStorage

    if not isinstance(billing.storage, SqlStorage) or billing.storage.engine.dialect.name != "postgresql":
        pytest.skip("concurrent writers that both read first: PostgreSQL (SQLite and memory serialise them)")
    story.scoped.alerts.create(
        entity_type="subscription", entity_id=story.subscription.id, config=critical_at("10")
    )
    story.use(20, clock.now())
    barrier = threading.Barrier(2, timeout=30)
    read = alert_states.current_states
    reads: list[int] = []

    def read_then_wait(uow, keys):  # type: ignore[no-untyped-def]
        found = read(uow, keys)
        reads.append(len(found))
        if not found:  # the first reads (both see ok) meet here; the retry's read passes by
            barrier.wait()
        return found

    monkeypatch.setattr(alert_states, "current_states", read_then_wait)
    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(story.scoped.events._evaluate_alerts, {"ada"}) for _ in range(2)]:
            future.result()
    assert sorted(reads) == [0, 0, 1]  # both read ok; the loser's retry read the winner's change
    assert len(inbox.of(SPEND_REACHED)) == 1
    assert story.scoped.alerts.logs().total == 1
