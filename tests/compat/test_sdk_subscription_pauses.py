"""Pause and resume through the official SDK (``pauseSubscription``, ``resumeSubscription``): its
bodies carry no mode, so a pause is immediate and open-ended, and a resume is immediate; the
answers parse into the SDK's ``PauseSubscriptionResponse`` and ``ResumeSubscriptionResponse``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _subscription(sdk: Flexprice, env: Scoped) -> str:
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    plan = sdk.plans.create_plan(name="Pro", lookup_key="pro")
    sdk.prices.create_price(
        billing_period="MONTHLY",
        currency="usd",
        entity_type="PLAN",
        entity_id=plan.id,
        price_unit_type="FIAT",
        type_="FIXED",
        billing_model="FLAT_FEE",
        invoice_cadence="ADVANCE",
        amount="49.00",
    )
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    return sub.id


def test_pause_and_resume_round_trip(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    sub_id = _subscription(sdk, env)
    clock.advance(timedelta(days=10))
    paused = known(
        sdk.subscriptions.pause_subscription(
            id=sub_id, reason="Customer asked", metadata={"channel": "support"}
        )
    )
    assert isinstance(paused, models.PauseSubscriptionResponse)
    assert paused.subscription is not None and paused.pause is not None
    assert (paused.subscription.subscription_status, paused.subscription.pause_status) == ("paused", "active")
    assert paused.subscription.active_pause_id == paused.pause.id
    pause = paused.pause
    assert (pause.pause_status, pause.pause_mode, pause.reason, pause.metadata) == (
        "active",
        "immediate",
        "Customer asked",
        {"channel": "support"},
    )
    assert (pause.pause_start, pause.pause_end) == (datetime(2026, 5, 11, 9, 30, tzinfo=UTC), None)
    v2 = known(sdk.subscriptions.get_subscription_v2(id=sub_id))
    assert v2.pauses is not None and [p.id for p in v2.pauses] == [pause.id]

    clock.advance(timedelta(days=5))
    resumed = known(sdk.subscriptions.resume_subscription(id=sub_id, metadata={"resumed_by": "admin"}))
    assert isinstance(resumed, models.ResumeSubscriptionResponse)
    assert resumed.subscription is not None and resumed.pause is not None
    assert resumed.subscription.subscription_status == "active"
    # [1 May, 1 Jun) stretched by the 5 days paused.
    assert resumed.subscription.current_period_end == datetime(2026, 6, 6, 9, 30, tzinfo=UTC)
    assert (resumed.pause.pause_status, resumed.pause.resume_mode, resumed.pause.metadata) == (
        "completed",
        "immediate",
        {"channel": "support", "resumed_by": "admin"},
    )
    assert resumed.pause.resumed_at == datetime(2026, 5, 16, 9, 30, tzinfo=UTC)


def test_refusals_come_through_the_sdk(sdk: Flexprice, env: Scoped) -> None:
    sub_id = _subscription(sdk, env)
    with pytest.raises(errors.FlexpriceError) as not_paused:
        sdk.subscriptions.resume_subscription(id=sub_id)
    assert status_and_code(not_paused.value) == (400, "invalid_operation")
    with pytest.raises(errors.FlexpriceError) as prorating:
        sdk.subscriptions.pause_subscription(id=sub_id, proration_behavior="create_prorations")
    assert status_and_code(prorating.value) == (400, "validation_error")
    with pytest.raises(errors.FlexpriceError) as missing:
        sdk.subscriptions.pause_subscription(id="subs_missing")
    assert status_and_code(missing.value) == (404, "not_found")
