"""Every precondition of a plan change in place (notes §3.4) refused with a 400 naming the reason,
on every store, with nothing written (every table's rows are the same before and after)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from billingkit.domain.periods import BillingPeriod
from billingkit.domain.subscriptions import Subscription, SubscriptionType
from billingkit.errors import BillingError, InvalidOperation, ValidationError
from tests.cancellations import FEE, World, at, june, make_world
from tests.store_rows import every_row

UP = {"proration_behavior": "create_prorations"}


def _target(w: World) -> str:
    return w.s.plans.create(name="Max", prices=[{**FEE, "amount": "90.00"}]).id


def _active(w: World) -> tuple[Subscription, dict[str, Any]]:
    return w.subscribe(prices=[FEE]), {"target_plan_id": _target(w), **UP}


# Each case: build the state, and the request that must be refused; then the error expected.
Case = Callable[[World], tuple[Subscription, dict[str, Any]]]


def same_plan(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub = w.subscribe(prices=[FEE])
    return sub, {"target_plan_id": sub.plan_id, **UP}


def unknown_plan(w: World) -> tuple[Subscription, dict[str, Any]]:
    return w.subscribe(prices=[FEE]), {"target_plan_id": "plan_missing", **UP}


def archived_plan(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    w.s.plans.delete(request["target_plan_id"])
    return sub, request


def no_prices_in_currency(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub = w.subscribe(prices=[FEE])
    euro = w.s.plans.create(name="Euro", prices=[{**FEE, "currency": "eur"}])
    return sub, {"target_plan_id": euro.id, **UP}


def cancelled(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    w.s.subscriptions.cancel(sub.id, cancellation_type="immediate")
    return sub, request


def draft(w: World) -> tuple[Subscription, dict[str, Any]]:
    return w.subscribe(prices=[FEE], subscription_status="draft"), {"target_plan_id": _target(w), **UP}


def pending_cancellation(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    w.s.subscriptions.cancel(sub.id, cancellation_type="end_of_period")
    return sub, request


def paused(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    w.s.subscriptions.pause(sub.id, pause_mode="immediate", pause_days=5)
    return sub, request


def pause_scheduled(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    w.s.subscriptions.pause(sub.id, pause_mode="scheduled", pause_start=june(20), pause_days=3)
    return sub, request


def with_phases(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    w.s.subscriptions.add_phase(sub.id, start_date=at(7, 1).isoformat())
    return sub, request


def not_standalone(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    w.store(sub, subscription_type=SubscriptionType.PARENT)
    return sub, request


def plan_change_pending(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    w.s.subscriptions.change_plan(sub.id, **request, change_at="end_of_period")
    return sub, request


def mixed_periods(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    quarterly = sub.line_items[0].model_copy(
        update={"id": "subs_line_q", "billing_period": BillingPeriod.QUARTERLY}
    )
    w.store(sub, line_items=(*sub.line_items, quarterly))
    return sub, request


def unknown_addon_override(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    policies = {"addons": {"overrides": {"assoc_missing": "drop"}}}
    return sub, {**request, "entity_policies": policies}


def unsupported_field(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    return sub, {**request, "on_conflict_policies": {"on_pending_schedule": "supersede"}}


def missing_proration(w: World) -> tuple[Subscription, dict[str, Any]]:
    sub, request = _active(w)
    return sub, {"target_plan_id": request["target_plan_id"]}


CASES: list[tuple[Case, type[BillingError], str]] = [
    (same_plan, ValidationError, "target_plan_id"),
    (unknown_plan, ValidationError, "target_plan_id"),
    (archived_plan, ValidationError, "target_plan_id"),
    (no_prices_in_currency, ValidationError, "target_plan_id"),
    (cancelled, InvalidOperation, "is cancelled"),
    (draft, InvalidOperation, "is draft"),
    (pending_cancellation, InvalidOperation, "pending cancellation"),
    (paused, InvalidOperation, "is paused"),
    (pause_scheduled, InvalidOperation, "scheduled pause"),
    (with_phases, InvalidOperation, "has phases"),
    (not_standalone, InvalidOperation, "only a standalone"),
    (plan_change_pending, InvalidOperation, "pending plan change"),
    (mixed_periods, ValidationError, "proration_behavior"),
    (unknown_addon_override, ValidationError, "entity_policies.addons.overrides.assoc_missing"),
    (unsupported_field, ValidationError, "on_conflict_policies"),
    (missing_proration, ValidationError, "proration_behavior"),
]


@pytest.mark.parametrize(("case", "error", "reason"), CASES, ids=[case.__name__ for case, _, _ in CASES])
def test_refused_with_400_naming_the_reason_and_nothing_written(
    storage: Any, case: Case, error: type[BillingError], reason: str
) -> None:
    w = make_world(storage)
    sub, request = case(w)
    w.clock.set(june(16))
    before = every_row(storage)
    for call in (w.s.subscriptions.preview_plan_change, w.s.subscriptions.change_plan):
        with pytest.raises(error) as caught:
            call(sub.id, **request)
        assert caught.value.http_status == 400
        named = caught.value.details.get("field") if error is ValidationError else caught.value.message
        assert reason in str(named), caught.value.message
    assert every_row(storage) == before
