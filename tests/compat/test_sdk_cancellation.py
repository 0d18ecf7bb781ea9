"""Cancellations and subscription schedules through the official SDK: an immediate cancellation
with a credit and an invoice, a scheduled one listed, read and withdrawn, and a refusal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code


def _subscription(sdk: Flexprice, env: Scoped) -> str:
    """A customer on 31.00 a month in advance plus 0.10 a call in arrears, with 30 calls."""
    calls = env.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    customer = sdk.customers.create_customer(external_id="cust-ada", name="Ada")
    plan = sdk.plans.create_plan(name="Pro")
    common = {"billing_period": "MONTHLY", "currency": "usd", "entity_type": "PLAN", "entity_id": plan.id}
    sdk.prices.create_price(
        **common,
        type_="FIXED",
        billing_model="FLAT_FEE",
        invoice_cadence="ADVANCE",
        amount="31.00",
        price_unit_type="FIAT",
    )
    sdk.prices.create_price(
        **common,
        type_="USAGE",
        billing_model="FLAT_FEE",
        invoice_cadence="ARREAR",
        amount="0.10",
        meter_id=calls.id,
        price_unit_type="FIAT",
    )
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        billing_period_count=1,
    )
    env.events.ingest_bulk(
        [
            {"event_name": "api.call", "external_customer_id": "cust-ada", "event_id": f"e{i}"}
            for i in range(30)
        ]
    )
    return sub.id


def test_cancel_immediately_with_credit_and_invoice(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    sub_id = _subscription(sdk, env)
    clock.advance(timedelta(days=11))  # 20 of 31 days unused
    result = known(
        sdk.subscriptions.cancel_subscription(
            id=sub_id,
            cancellation_type="immediate",
            proration_behavior="create_prorations",
            cancel_immediately_invoice_policy="generate_invoice",
            reason="budget",
        )
    )
    assert isinstance(result, models.CancelSubscriptionResponse)
    assert (result.subscription_id, result.cancellation_type, result.status, result.reason) == (
        sub_id,
        "immediate",
        "cancelled",
        "budget",
    )
    assert result.effective_date == datetime(2026, 5, 12, 9, 30, tzinfo=UTC)
    # 31.00 x 20/31 = 20.00 to the wallet; the used part bills 30 calls x 0.10 = 3.00.
    (detail,) = result.proration_details or []
    assert (detail.credit_amount, detail.proration_days, detail.charge_amount) == ("20.00", 20, "0.00")
    assert result.total_credit_amount == "20.00"
    invoice = result.proration_invoice
    assert invoice is not None and Decimal(invoice.amount_due or "0") == Decimal("3.00")
    read = sdk.subscriptions.get_subscription(id=sub_id)
    assert read.subscription_status == "cancelled"

    with pytest.raises((errors.ErrorResponse, errors.FlexpriceDefaultError)) as caught:
        sdk.subscriptions.cancel_subscription(id=sub_id, cancellation_type="immediate")
    assert status_and_code(caught.value) == (400, "invalid_operation")


def test_scheduled_cancellation_listed_read_and_withdrawn(sdk: Flexprice, env: Scoped) -> None:
    sub_id = _subscription(sdk, env)
    at = datetime(2026, 5, 21, 9, 30, tzinfo=UTC)
    scheduled = known(
        sdk.subscriptions.cancel_subscription(id=sub_id, cancellation_type="scheduled_date", cancel_at=at)
    )
    assert (scheduled.status, scheduled.effective_date) == ("active", at)

    mine = known(sdk.subscriptions.list_subscription_schedules(id=sub_id))
    assert isinstance(mine, models.GetPendingSchedulesResponse) and mine.count == 1
    (schedule,) = mine.schedules or []
    assert (schedule.schedule_type, schedule.status, schedule.scheduled_at, schedule.can_be_cancelled) == (
        "cancellation",
        "pending",
        at,
        True,
    )
    everything = known(
        sdk.subscriptions.list_all_subscription_schedules(pending_only=True, subscription_id=sub_id)
    )
    assert [s.id for s in everything.schedules or []] == [schedule.id]
    one = known(sdk.subscriptions.get_subscription_schedule(schedule_id=schedule.id or ""))
    assert isinstance(one, models.SubscriptionScheduleResponse) and one.id == schedule.id

    withdrawn = known(
        sdk.subscriptions.cancel_subscription_schedule(
            schedule_id_param=schedule.id or "", subscription_id=sub_id, schedule_type="cancellation"
        )
    )
    assert isinstance(withdrawn, models.CancelScheduleResponse) and withdrawn.status == "cancelled"
    read = sdk.subscriptions.get_subscription(id=sub_id)
    assert (read.cancel_at, read.end_date) == (None, None)
    assert read.current_period_end == datetime(2026, 6, 1, 9, 30, tzinfo=UTC)
    assert known(sdk.subscriptions.list_all_subscription_schedules(pending_only=True)).count == 0
