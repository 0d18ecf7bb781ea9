"""Plan price sync through the library, on every store: new prices opened, ended prices closed,
overrides kept, ``synced_price_sequence`` moved, batches, retries, refusals.

The ``clock`` fixture starts at 2026-05-01 09:30 UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from billingkit import Billing, NotFound, PermissionDenied, Scoped, TestClock, ValidationError
from billingkit.domain.access import Actor, Role
from billingkit.domain.catalog import PriceEntityType
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionStatus
from billingkit.errors import VersionConflict
from billingkit.services import plan_price_sync
from billingkit.services.owned_prices import next_sequence
from billingkit.services.price_overrides import OverrideLineItem, override_lines

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
SYNC_AT = NOW + timedelta(days=4)


def fee(amount: str = "20", currency: str = "usd", **extra: Any) -> dict[str, Any]:
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": currency,
        "billing_period": "MONTHLY",
        "invoice_cadence": "ADVANCE",
        "display_name": "Base",
        **extra,
    }


def calls(meter_id: str, amount: str = "0.10", **extra: Any) -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "display_name": "Calls",
        **extra,
    }


def override(s: Scoped, sub: Subscription, price_id: str, amount: str) -> Subscription:
    """The subscription with its line of ``price_id`` overridden (a subscription-owned price)."""

    def apply(uow, ctx):  # type: ignore[no-untyped-def]
        current = uow.subscriptions.get(sub.id)
        lines = override_lines(
            uow,
            ctx,
            current.line_items,
            [OverrideLineItem.model_validate({"price_id": price_id, "amount": amount})],
        )
        return uow.subscriptions.update(
            current.model_copy(update={"line_items": lines}), expected_version=current.version
        )

    return s.run(apply)


class World:
    def __init__(self, s: Scoped, clock: TestClock) -> None:
        self.s, self.clock = s, clock
        self.meter_id = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"}).id
        self.plan = s.plans.create(
            name="Pro", prices=[fee(), calls(self.meter_id), fee("18", currency="eur")]
        )
        prices = {(p.currency, p.type.value): p for p in self.plan.prices}
        self.fee_id = prices[("usd", "FIXED")].id
        self.calls_id = prices[("usd", "USAGE")].id
        self.customers = [s.customers.create(external_id=f"c{i}", name=f"C{i}").id for i in range(4)]

    def subscribe(self, n: int, currency: str = "usd", **fields: Any) -> Subscription:
        return self.s.subscriptions.create(
            customer_id=self.customers[n],
            plan_id=self.plan.id,
            currency=currency,
            billing_period="MONTHLY",
            **fields,
        )

    def lines(self, sub: Subscription) -> list[SubscriptionLineItem]:
        return list(self.s.subscriptions.get(sub.id).line_items)

    def change_plan(self) -> tuple[str, str]:
        """At SYNC_AT: the fee goes to 25 (a new version), calls end, exports (1.00 each) begin.
        Returns the ids of the fee's successor and of the exports price."""
        self.clock.set(SYNC_AT)
        successor = self.s.prices.update(self.fee_id, amount="25")
        self.s.prices.delete(self.calls_id)
        exports = self.s.meters.create(name="Exports", event_name="export", aggregation={"type": "COUNT"})
        added = self.s.prices.create(
            entity_type="PLAN", entity_id=self.plan.id, **calls(exports.id, "1.00", display_name="Exports")
        )
        return successor.id, added.id


@pytest.fixture
def w(billing: Billing, setup: Any, clock: TestClock) -> World:
    return World(billing.scope(setup.tenant.id, setup.environments[0][0].id), clock)


def test_sync_opens_new_prices_closes_ended_ones_and_keeps_overrides(w: World) -> None:
    plain = w.subscribe(0)
    overridden = override(w.s, w.subscribe(1), w.fee_id, "15")
    euro = w.subscribe(2, currency="eur")
    (own_fee,) = [
        line.price_id for line in overridden.line_items if line.price_id not in (w.fee_id, w.calls_id)
    ]
    successor, exports = w.change_plan()
    highest = w.s.run(lambda uow, ctx: next_sequence(uow, PriceEntityType.PLAN, w.plan.id)) - 1
    assert all(w.s.subscriptions.get_v2(sub.id).plan_prices_out_of_sync for sub in (plain, overridden, euro))

    result = w.s.plans.sync_subscriptions(w.plan.id)
    assert (result.subscriptions_checked, result.subscriptions_updated) == (3, 2)
    # plain: fee and calls ended, successor and exports opened; overridden: calls ended, exports opened.
    assert (result.line_items_added, result.line_items_ended) == (3, 3)
    assert result.price_sequence == highest and result.run_id.startswith("sync_")

    spans = {line.price_id: (line.start_date, line.end_date) for line in w.lines(plain)}
    assert spans == {
        w.fee_id: (NOW, SYNC_AT),
        w.calls_id: (NOW, SYNC_AT),
        successor: (SYNC_AT, None),  # the successor goes on where its predecessor ended
        exports: (SYNC_AT, None),
    }
    spans = {line.price_id: (line.start_date, line.end_date) for line in w.lines(overridden)}
    assert spans == {own_fee: (NOW, None), w.calls_id: (NOW, SYNC_AT), exports: (SYNC_AT, None)}
    assert [line.price_id for line in w.lines(euro)] == [line.price_id for line in euro.line_items]
    for sub in (plain, overridden, euro):
        v2 = w.s.subscriptions.get_v2(sub.id)
        assert v2.plan_prices_out_of_sync is False
        assert v2.subscription.synced_price_sequence == highest
    # Version moved for every subscription written; updated only for those whose lines changed.
    assert w.s.subscriptions.get(plain.id).version == plain.version + 1
    assert w.s.subscriptions.get(euro.id).updated_at == euro.updated_at
    updated = w.s.notifications.list(event_type="subscription.updated").items
    assert sorted(e.entity_id for e in updated) == sorted([plain.id, overridden.id])
    payload = next(e for e in updated if e.entity_id == plain.id).payload["subscription"]
    assert payload["id"] == plain.id and payload["customer"]["id"] == w.customers[0]

    # The new lines are indexed: each can be found by its id alone.
    new_line = next(line for line in w.lines(plain) if line.price_id == exports)
    found = w.s.run(lambda uow, ctx: uow.line_item_owners.find(new_line.id))
    assert found is not None and found.subscription_id == plain.id

    again = w.s.plans.sync_subscriptions(w.plan.id)
    assert (again.subscriptions_checked, again.subscriptions_updated, again.line_items_added) == (0, 0, 0)


def test_a_price_starting_later_opens_at_its_start_and_a_past_window_opens_nothing(w: World) -> None:
    sub = w.subscribe(0)
    w.clock.set(SYNC_AT)
    later = w.s.prices.create(
        entity_type="PLAN",
        entity_id=w.plan.id,
        **fee("5", display_name="Support", start_date=(NOW + timedelta(days=20)).isoformat()),
    )
    brief = w.s.prices.create(entity_type="PLAN", entity_id=w.plan.id, **fee("9", display_name="Brief"))
    w.s.prices.delete(brief.id)  # archived at once: its window [SYNC_AT, SYNC_AT) is empty
    w.s.plans.sync_subscriptions(w.plan.id)
    spans = {line.price_id: (line.start_date, line.end_date) for line in w.lines(sub)}
    assert spans[later.id] == (NOW + timedelta(days=20), None)
    assert brief.id not in spans


def test_drafts_are_synced_and_cancelled_subscriptions_are_not(w: World, billing: Billing) -> None:
    draft = w.subscribe(0, subscription_status="draft", start_date=(NOW + timedelta(days=10)).isoformat())
    ended = w.subscribe(1)

    def cancel(uow, ctx):  # type: ignore[no-untyped-def]
        sub = uow.subscriptions.get(ended.id)
        changed = sub.model_copy(
            update={"subscription_status": SubscriptionStatus.CANCELLED, "next_run_at": None}
        )
        return uow.subscriptions.update(changed, expected_version=sub.version)

    w.s.run(cancel)
    _, exports = w.change_plan()
    result = w.s.plans.sync_subscriptions(w.plan.id)
    assert result.subscriptions_checked == 1
    spans = {line.price_id: (line.start_date, line.end_date) for line in w.lines(draft)}
    # The draft's period has not started: the new price opens with it, the ended ones end with it.
    assert spans[exports] == (NOW + timedelta(days=10), None)
    assert spans[w.calls_id] == (NOW + timedelta(days=10), NOW + timedelta(days=10))
    assert exports not in {line.price_id for line in w.lines(ended)}
    assert w.s.subscriptions.get_v2(ended.id).plan_prices_out_of_sync is True


@pytest.mark.parametrize("batch_size", [1, 2, 500])
def test_batches_of_any_size_sync_every_subscription_once(w: World, batch_size: int) -> None:
    subs = [w.subscribe(n) for n in range(4)]
    _, exports = w.change_plan()
    result = w.s.plans.sync_subscriptions(w.plan.id, batch_size=batch_size)
    assert (result.subscriptions_checked, result.subscriptions_updated, result.line_items_added) == (4, 4, 8)
    for sub in subs:
        assert [line.price_id for line in w.lines(sub)].count(exports) == 1


def test_a_batch_that_meets_a_concurrent_change_is_done_again(
    w: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = w.subscribe(0)
    _, exports = w.change_plan()
    real = plan_price_sync._candidates
    calls: list[int] = []

    def stale_first(uow, plan_id, target, after_id, limit):  # type: ignore[no-untyped-def]
        found = real(uow, plan_id, target, after_id, limit)
        calls.append(len(found))
        if len(calls) == 1:  # as if another writer saved the subscription after this read
            return [s.model_copy(update={"version": s.version - 1}) for s in found]
        return found

    monkeypatch.setattr(plan_price_sync, "_candidates", stale_first)
    result = w.s.plans.sync_subscriptions(w.plan.id)
    assert calls[:2] == [1, 1]  # read, conflict (rolled back), read again
    assert (result.subscriptions_checked, result.line_items_added) == (1, 2)
    assert [line.price_id for line in w.lines(sub)].count(exports) == 1


def test_a_stale_batch_writes_nothing(w: World) -> None:
    sub = w.subscribe(0)
    w.change_plan()
    sync = w.s.run(plan_price_sync.start_sync, plan_id=w.plan.id)

    def stale(uow, ctx):  # type: ignore[no-untyped-def]
        current = uow.subscriptions.get(sub.id)
        uow.subscriptions.update(
            current.model_copy(update={"metadata": {"k": "v"}}), expected_version=current.version
        )
        original = plan_price_sync._candidates
        try:
            plan_price_sync._candidates = lambda *a: [current]  # type: ignore[assignment]
            return plan_price_sync.sync_batch(uow, ctx, sync=sync, after_id=None, limit=10)
        finally:
            plan_price_sync._candidates = original

    with pytest.raises(VersionConflict):
        w.s.run(stale)
    assert w.s.subscriptions.get(sub.id) == sub  # the metadata write went with the rolled-back batch
    assert w.s.notifications.list(event_type="subscription.updated").items == []


def test_unknown_archived_and_forbidden(w: World, billing: Billing, setup: Any) -> None:
    with pytest.raises(NotFound):
        w.s.plans.sync_subscriptions("plan_missing")
    other = w.s.plans.create(name="Old")
    w.s.plans.delete(other.id)
    with pytest.raises(NotFound):
        w.s.plans.sync_subscriptions(other.id)
    reader = billing.scope(setup.tenant.id, setup.environments[0][0].id, actor=Actor("r", (Role.ALL_READER,)))
    with pytest.raises(PermissionDenied):
        reader.plans.sync_subscriptions(w.plan.id)
    with pytest.raises(ValidationError, match="batch_size"):
        w.s.plans.sync_subscriptions(w.plan.id, batch_size=0)


def test_phases_get_copies_of_new_prices_and_keep_their_overrides(w: World) -> None:
    # Created with the fee overridden at 15.00 (override_line_items) and a phase [+10 d, +20 d)
    # that re-prices the fee at 10.00 for its window.
    start, end = NOW + timedelta(days=10), NOW + timedelta(days=20)
    overridden = w.subscribe(1, override_line_items=[{"price_id": w.fee_id, "amount": "15"}])
    phased = w.subscribe(
        0,
        phases=[
            {
                "start_date": start.isoformat(),
                "end_date": end.isoformat(),
                "override_line_items": [{"price_id": w.fee_id, "amount": "10"}],
            }
        ],
    )
    (phase,) = w.s.subscriptions.phases(phased.id)
    phase_fee = next(
        li.price_id for li in phased.line_items if li.subscription_phase_id and li.meter_id is None
    )
    successor, exports = w.change_plan()  # at SYNC_AT = NOW + 4 days
    result = w.s.plans.sync_subscriptions(w.plan.id)
    assert (result.subscriptions_checked, result.subscriptions_updated) == (2, 2)

    spans = {(li.price_id, li.subscription_phase_id, li.start_date, li.end_date) for li in w.lines(phased)}
    assert spans == {
        # the fee: its plan pieces end (the later one at its own start), the phase keeps its 10.00
        (w.fee_id, None, NOW, SYNC_AT),
        (w.fee_id, None, end, end),
        (phase_fee, phase.id, start, end),
        # the fee's new version: plan time only (the phase overrides the fee's lineage)
        (successor, None, SYNC_AT, start),
        (successor, None, end, None),
        # calls ended: every piece and copy ends, none before its start
        (w.calls_id, None, NOW, SYNC_AT),
        (w.calls_id, phase.id, start, start),
        (w.calls_id, None, end, end),
        # exports: plan time and a copy in the phase
        (exports, None, SYNC_AT, start),
        (exports, phase.id, start, end),
        (exports, None, end, None),
    }
    # The subscription overriding the fee keeps its own fee and gets no successor.
    prices = {li.price_id for li in w.lines(overridden)}
    assert successor not in prices and w.fee_id not in prices and exports in prices
