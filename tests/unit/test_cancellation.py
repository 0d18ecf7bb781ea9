"""Cancellation rules (domain.cancellation): effective dates, what each type writes, refusals,
restoring a withdrawn schedule, the credit for unused time, and the billing run ending a
subscription at a scheduled ``cancel_at``. Dates are 2026, UTC; periods are worked out beside
each row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.cancellation import (
    METADATA_KEYS,
    CancellationType,
    check_single_period,
    end_line_items,
    plan_cancellation,
    restored_fields,
    scheduled_end,
    unused_time_credit,
)
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import BillingPeriod, InvoiceCadence, Period
from billingkit.domain.pricing import PriceSpec
from billingkit.domain.renewals import StepKind, plan_due
from billingkit.domain.subscriptions import (
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.errors import InvalidOperation, ValidationError

IMMEDIATE, END_OF_PERIOD, SCHEDULED = (
    CancellationType.IMMEDIATE,
    CancellationType.END_OF_PERIOD,
    CancellationType.SCHEDULED_DATE,
)
D = Decimal


def d(month: int, day: int, hour: int = 0) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


def line(**fields: Any) -> SubscriptionLineItem:
    values: dict[str, Any] = {
        "id": "subs_line_1",
        "subscription_id": "subs_1",
        "customer_id": "cust_1",
        "entity_id": "plan_1",
        "price_id": "price_1",
        "price_type": PriceType.FIXED,
        "quantity": D(1),
        "currency": "usd",
        "billing_period": BillingPeriod.MONTHLY,
        "invoice_cadence": InvoiceCadence.ADVANCE,
        "start_date": d(5, 1),
        "display_name": "Base",
        "plan_display_name": "Pro",
    }
    values.update(fields)
    return SubscriptionLineItem(**values)


def subscription(**fields: Any) -> Subscription:
    """Monthly from 1 May 2026, active, current period [1 Jun, 1 Jul) (30 days), one line."""
    values: dict[str, Any] = {
        "id": "subs_1",
        "tenant_id": "tenant_a",
        "environment_id": "env_a",
        "created_at": d(5, 1),
        "updated_at": d(5, 1),
        "created_by": "test",
        "updated_by": "test",
        "plan_id": "plan_1",
        "customer_id": "cust_1",
        "subscription_status": SubscriptionStatus.ACTIVE,
        "billing_period": BillingPeriod.MONTHLY,
        "billing_anchor": d(5, 1),
        "currency": "usd",
        "start_date": d(5, 1),
        "current_period_start": d(6, 1),
        "current_period_end": d(7, 1),
        "next_run_at": d(7, 1),
        "metadata": {"crm": "42"},
        "line_items": (line(),),
    }
    values.update(fields)
    return Subscription(**values)


NOW = d(6, 11)


def plan(
    sub: Subscription, kind: CancellationType, cancel_at: datetime | None = None, now: datetime = NOW
) -> Any:
    return plan_cancellation(
        sub, cancellation_type=kind, cancel_at=cancel_at, reason="moving", now=now, renewal_notice=None
    )


# -- what each type writes -------------------------------------------------------------------------


def test_immediate_cancels_now_and_ends_the_open_lines() -> None:
    # now 11 Jun: effective 11 Jun; the line (open) ends then; nothing is due any more.
    made = plan(subscription(), IMMEDIATE)
    assert made.immediate and made.effective == d(6, 11) and made.schedule_configuration is None
    changes = made.changes
    assert changes["subscription_status"] is SubscriptionStatus.CANCELLED
    assert changes["cancel_at"] == changes["end_date"] == changes["cancelled_at"] == d(6, 11)
    assert changes["cancel_at_period_end"] is False and changes["next_run_at"] is None
    assert [li.end_date for li in changes["line_items"]] == [d(6, 11)]
    assert changes["metadata"] == {
        "crm": "42",
        "cancellation_type": "immediate",
        "cancellation_reason": "moving",
        "effective_date": "2026-06-11T00:00:00Z",
    }
    assert "current_period_end" not in changes


def test_immediate_backdated_takes_effect_at_cancel_at() -> None:
    made = plan(subscription(), IMMEDIATE, cancel_at=d(6, 5))
    assert made.effective == made.changes["cancelled_at"] == made.changes["end_date"] == d(6, 5)


def test_end_of_period_keeps_the_status_and_remembers_the_original_fields() -> None:
    made = plan(subscription(), END_OF_PERIOD)
    assert made.effective == d(7, 1)
    assert made.changes["cancel_at"] == d(7, 1) and made.changes["cancel_at_period_end"] is True
    assert {"subscription_status", "end_date", "cancelled_at", "current_period_end"}.isdisjoint(made.changes)
    assert made.changes["next_run_at"] == d(7, 1)
    config = made.schedule_configuration
    assert config is not None
    assert config["original_cancel_at"] is None and config["original_end_date"] is None
    assert config["original_current_period_end"] == "2026-07-01T00:00:00Z"
    assert config["original_cancel_at_period_end"] is False and config["cancellation_type"] == "end_of_period"


@pytest.mark.parametrize(
    ("cancel_at", "period_end"),
    [
        (d(6, 20), d(6, 20)),  # inside the period: cut [1 Jun, 20 Jun) so the run fires then
        (d(7, 1), d(7, 1)),  # at the period end: nothing to cut
        (d(8, 15), d(7, 1)),  # a later period: the run cuts [1 Aug, 15 Aug) when it gets there
    ],
)
def test_scheduled_date_sets_end_date_and_cuts_the_period_when_earlier(
    cancel_at: datetime, period_end: datetime
) -> None:
    made = plan(subscription(), SCHEDULED, cancel_at=cancel_at)
    assert made.changes["cancel_at"] == made.changes["end_date"] == cancel_at
    assert made.changes.get("current_period_end", d(7, 1)) == period_end
    assert made.changes["next_run_at"] == period_end
    assert "subscription_status" not in made.changes


def test_scheduled_date_in_the_past_is_due_at_once() -> None:
    # Backdated to 5 Jun at 11 Jun: the period is cut to [1 Jun, 5 Jun), due since 5 Jun.
    made = plan(subscription(), SCHEDULED, cancel_at=d(6, 5))
    assert made.changes["current_period_end"] == made.changes["next_run_at"] == d(6, 5)


# -- refusals and validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "kind", "words"),
    [
        ({"subscription_status": SubscriptionStatus.DRAFT}, IMMEDIATE, "draft"),
        ({"subscription_status": SubscriptionStatus.CANCELLED}, END_OF_PERIOD, "already cancelled"),
        ({"subscription_type": SubscriptionType.INHERITED}, IMMEDIATE, "inherited"),
        ({"cancel_at": d(7, 1), "cancel_at_period_end": True}, END_OF_PERIOD, "already has a cancellation"),
        ({"cancel_at": d(7, 1), "cancel_at_period_end": True}, SCHEDULED, "already has a cancellation"),
    ],
)
def test_refusals_name_the_reason(fields: dict[str, Any], kind: CancellationType, words: str) -> None:
    with pytest.raises(InvalidOperation, match=words):
        plan(subscription(**fields), kind, cancel_at=d(6, 20) if kind is SCHEDULED else None)


def test_an_immediate_cancellation_overrides_a_scheduled_one() -> None:
    made = plan(subscription(cancel_at=d(7, 1), cancel_at_period_end=True), IMMEDIATE)
    assert made.changes["cancel_at"] == d(6, 11) and made.changes["cancel_at_period_end"] is False


@pytest.mark.parametrize(
    ("kind", "cancel_at", "words"),
    [
        (SCHEDULED, None, "needs cancel_at"),
        (END_OF_PERIOD, d(6, 20), "takes no cancel_at"),
        (IMMEDIATE, d(6, 12), "past or now"),  # now is 11 Jun
        (IMMEDIATE, d(6, 1), "after the current period's start"),
        (SCHEDULED, d(5, 20), "after the current period's start"),
    ],
)
def test_cancel_at_is_checked(kind: CancellationType, cancel_at: datetime | None, words: str) -> None:
    with pytest.raises(ValidationError, match=words) as caught:
        plan(subscription(), kind, cancel_at=cancel_at)
    assert caught.value.field == "cancel_at"


def test_cancel_at_must_come_before_end_date() -> None:
    with pytest.raises(ValidationError, match="before the subscription's end_date") as caught:
        plan(subscription(end_date=d(6, 25)), SCHEDULED, cancel_at=d(6, 25))
    assert caught.value.field == "cancel_at"


def test_mixed_line_periods_refuse_prorations() -> None:
    check_single_period(subscription(line_items=(line(), line(billing_period=BillingPeriod.ONETIME))))
    quarterly = subscription(line_items=(line(), line(id="l2", billing_period=BillingPeriod.QUARTERLY)))
    with pytest.raises(ValidationError, match="l2 bills QUARTERLY") as caught:
        check_single_period(quarterly)
    assert caught.value.field == "proration_behavior"


# -- withdrawing a schedule -------------------------------------------------------------------------


def test_withdrawing_a_cut_scheduled_date_restores_the_period_and_dates() -> None:
    sub = subscription(metadata={"crm": "42", "cancellation_reason": "old"})
    made = plan(sub, SCHEDULED, cancel_at=d(6, 20))
    scheduled = sub.model_copy(update=made.changes)
    assert scheduled.current_period_end == d(6, 20)
    config = made.schedule_configuration or {}
    restored = restored_fields(scheduled, config, renewal_notice=None)
    assert restored["cancel_at"] is None and restored["end_date"] is None
    assert restored["cancel_at_period_end"] is False
    assert restored["current_period_end"] == restored["next_run_at"] == d(7, 1)
    assert restored["metadata"] == {"crm": "42", "cancellation_reason": "old"}


def test_withdrawing_after_renewals_takes_the_schedule_boundary() -> None:
    # Scheduled for 15 Aug on 11 Jun; by 5 Aug the run renewed twice and cut [1 Aug, 15 Aug).
    sub = subscription(end_date=None)
    made = plan(sub, SCHEDULED, cancel_at=d(8, 15))
    later = sub.model_copy(
        update={**made.changes, "current_period_start": d(8, 1), "current_period_end": d(8, 15)}
    )
    restored = restored_fields(later, made.schedule_configuration or {}, renewal_notice=None)
    assert restored["current_period_end"] == d(9, 1)  # [1 Aug, 1 Sep) again


def test_withdrawing_end_of_period_keeps_the_period() -> None:
    sub = subscription()
    made = plan(sub, END_OF_PERIOD)
    restored = restored_fields(
        sub.model_copy(update=made.changes), made.schedule_configuration or {}, renewal_notice=None
    )
    assert restored["current_period_end"] == d(7, 1) and restored["cancel_at"] is None
    assert not set(METADATA_KEYS) & set(restored["metadata"])


# -- the billing run ends a subscription at cancel_at ------------------------------------------------


def test_plan_due_ends_at_cancel_at_after_billing_the_last_period() -> None:
    sub = subscription().model_copy(update=plan(subscription(), END_OF_PERIOD).changes)
    due = plan_due(sub, d(7, 1))
    assert [(s.kind, s.at) for s in due.steps] == [(StepKind.PERIOD_END, d(7, 1)), (StepKind.END, d(7, 1))]
    assert due.steps[0].next_period is None  # no ADVANCE charges for July
    assert due.changes["subscription_status"] is SubscriptionStatus.CANCELLED
    assert due.changes["cancelled_at"] == due.changes["end_date"] == d(7, 1)
    assert [li.end_date for li in due.changes["line_items"]] == [d(7, 1)]


def test_plan_due_bills_a_cut_period_then_ends() -> None:
    sub = subscription().model_copy(update=plan(subscription(), SCHEDULED, cancel_at=d(6, 20)).changes)
    assert plan_due(sub, d(6, 19)).steps == ()
    due = plan_due(sub, d(6, 20))
    assert due.steps[0].period == Period(d(6, 1), d(6, 20))
    assert due.changes["cancelled_at"] == d(6, 20)


def test_a_trial_ends_at_cancel_at_without_billing() -> None:
    trialing = subscription(
        subscription_status=SubscriptionStatus.TRIALING,
        trial_start=d(6, 1),
        trial_end=d(6, 15),
        current_period_end=d(6, 15),
    )
    sub = trialing.model_copy(update=plan(trialing, END_OF_PERIOD).changes)
    due = plan_due(sub, d(6, 15))
    assert [s.kind for s in due.steps] == [StepKind.END]
    assert due.changes["subscription_status"] is SubscriptionStatus.CANCELLED


def test_scheduled_end_is_the_earlier_of_end_date_and_cancel_at() -> None:
    assert scheduled_end(subscription()) is None
    assert scheduled_end(subscription(end_date=d(9, 1), cancel_at=d(8, 1))) == d(8, 1)
    assert scheduled_end(subscription(end_date=d(7, 1))) == d(7, 1)


def test_ending_lines_keeps_earlier_ends_and_later_starts() -> None:
    lines = (line(id="a"), line(id="b", end_date=d(6, 5)), line(id="c", start_date=d(6, 20)))
    assert [li.end_date for li in end_line_items(lines, d(6, 11))] == [d(6, 11), d(6, 5), d(6, 20)]


# -- credit for unused time --------------------------------------------------------------------------

PRICE = PriceSpec(billing_model="FLAT_FEE", amount=D("30.00"), currency="usd")
JUNE = Period(d(6, 1), d(7, 1))


@pytest.mark.parametrize(
    ("fields", "at", "billed", "credited", "credit", "days"),
    [
        ({}, d(6, 11), "30.00", "0", "20.00", 20),  # 30.00 x 20/30
        ({"quantity": D(2)}, d(6, 11), "60.00", "0", "40.00", 20),  # 60.00 x 20/30
        ({}, d(6, 11), "30.00", "15.00", "15.00", 20),  # capped: 30.00 - 15.00 already credited
        ({}, d(6, 11), "0", "0", "0.00", 20),  # nothing billed (e.g. voided): nothing back
        ({"end_date": d(6, 21)}, d(6, 11), "30.00", "0", "10.00", 10),  # ends 21 Jun: 10 days left
        ({"start_date": d(6, 16)}, d(6, 11), "15.00", "0", "15.00", 15),  # starts 16 Jun: 15 days
        ({}, d(6, 1), "30.00", "0", "30.00", 30),  # cancelled at the start: all of it
    ],
)
def test_unused_time_credit(
    fields: dict[str, Any], at: datetime, billed: str, credited: str, credit: str, days: int
) -> None:
    made = unused_time_credit(line(**fields), PRICE, JUNE, at, billed=D(billed), credited=D(credited))
    assert made is not None
    assert (made.credit_amount, made.proration_days) == (D(credit), days)
    assert made.to_dict()["charge_amount"] == "0.00"
    assert made.to_dict()["original_amount"] == str(D("30.00") * made_quantity(fields))


def made_quantity(fields: dict[str, Any]) -> Decimal:
    return D(fields.get("quantity", 1))


@pytest.mark.parametrize(
    "fields",
    [
        {"invoice_cadence": InvoiceCadence.ARREAR},  # billed after: nothing to give back
        {"price_type": PriceType.USAGE, "invoice_cadence": InvoiceCadence.ARREAR},
        {"end_date": d(6, 5)},  # ended before the cancellation
    ],
)
def test_no_credit_without_advance_time_left(fields: dict[str, Any]) -> None:
    assert unused_time_credit(line(**fields), PRICE, JUNE, d(6, 11), billed=D(30), credited=D(0)) is None


@given(
    st.integers(min_value=0, max_value=30 * 86400),
    st.decimals(min_value=D(0), max_value=D("30.00"), places=2),
)
def test_credit_never_exceeds_what_is_left_of_the_billed_amount(offset: int, credited: Decimal) -> None:
    at = d(6, 1) + timedelta(seconds=offset)
    made = unused_time_credit(line(), PRICE, JUNE, at, billed=D("30.00"), credited=credited)
    if made is None:
        assert at == d(7, 1)
        return
    assert D(0) <= made.credit_amount <= D("30.00") - credited
