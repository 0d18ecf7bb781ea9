"""The pure rules of issue 18's create terms: auto-invoice thresholds
(``domain.auto_invoice_thresholds``) and plan price sync (``domain.plan_price_sync``), as tables of
worked examples with the reasoning beside each row, and a property of the sync."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.auto_invoice_thresholds import (
    check_threshold_terms,
    next_check_at,
    reached,
    threshold_window,
    usage_lines,
)
from billingkit.domain.catalog import Price
from billingkit.domain.periods import Period
from billingkit.domain.plan_price_sync import lineage, sync_line_items
from billingkit.domain.subscriptions import (
    ProrationBehavior,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.errors import ValidationError
from billingkit.testing.contracts.samples import sample

D = Decimal
FIVE = timedelta(minutes=5)


def d(day: int, hour: int = 0) -> datetime:
    """An instant of May 2026, UTC."""
    return datetime(2026, 5, day, hour, tzinfo=UTC)


def line(price_id: str, price_type: str = "USAGE", **fields: Any) -> SubscriptionLineItem:
    return SubscriptionLineItem.model_validate(
        {
            "id": f"line_{price_id}",
            "subscription_id": "subs_1",
            "customer_id": "cust_1",
            "entity_id": "plan_1",
            "price_id": price_id,
            "price_type": price_type,
            "quantity": "0" if price_type == "USAGE" else "1",
            "currency": "usd",
            "billing_period": "MONTHLY",
            "invoice_cadence": "ARREAR" if price_type == "USAGE" else "ADVANCE",
            "start_date": d(1),
            **fields,
        }
    )


def sub(*lines: SubscriptionLineItem, **fields: Any) -> Subscription:
    base: dict[str, Any] = {
        "id": "subs_1",
        "commitment_amount": None,
        "overage_factor": None,
        "start_date": d(1),
        "billing_anchor": d(1),
        "current_period_start": d(1),
        "current_period_end": datetime(2026, 6, 1, tzinfo=UTC),
        "next_run_at": datetime(2026, 6, 1, tzinfo=UTC),
        "line_items": [item.model_dump() for item in lines],
    }
    return sample("subscriptions", **{**base, **fields})  # type: ignore[no-any-return]


def price(price_id: str, sequence: int, **fields: Any) -> Price:
    base: dict[str, Any] = {
        "id": price_id,
        "sequence": sequence,
        "billing_model": "FLAT_FEE",
        "amount": "1",
        "tier_mode": None,
        "tiers": None,
        "min_quantity": None,
        "lookup_key": None,
        "start_date": None,
        "created_at": d(1),
    }
    return sample("prices", **{**base, **fields})  # type: ignore[no-any-return]


# -- thresholds -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("terms", "field", "says"),
    [
        ({"threshold": D(0)}, "auto_invoice_threshold", "greater than 0"),
        ({"subscription_type": SubscriptionType.PARENT}, "auto_invoice_threshold", "standalone"),
        ({"plan_lines": [line("price_fee", "FIXED")]}, "auto_invoice_threshold", "price_fee is not"),
        ({"commitment": True}, "auto_invoice_threshold", "commitment"),
        ({"proration_behavior": ProrationBehavior.CREATE_PRORATIONS}, "proration_behavior", "stub"),
    ],
)
def test_threshold_terms_refused(terms: dict[str, Any], field: str, says: str) -> None:
    given_terms: dict[str, Any] = {
        "threshold": D("50"),
        "subscription_type": SubscriptionType.STANDALONE,
        "plan_lines": [line("price_calls")],
        "commitment": False,
        "proration_behavior": ProrationBehavior.NONE,
        **terms,
    }
    with pytest.raises(ValidationError) as caught:
        check_threshold_terms(**given_terms)
    assert caught.value.field == field and says in caught.value.message


@pytest.mark.parametrize(
    ("fields", "now", "expected"),
    [
        # active, threshold: five minutes after now, before the period end (1 Jun)
        ({}, d(10, 12), d(10, 12) + FIVE),
        # four minutes before the period end: the period end comes first
        ({}, datetime(2026, 5, 31, 23, 56, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)),
        # the period starts on 20 May: the first check is five minutes into it
        ({"current_period_start": d(20), "start_date": d(20)}, d(10), d(20) + FIVE),
        # no threshold: next_run_at unchanged
        ({"auto_invoice_threshold": None}, d(10), datetime(2026, 6, 1, tzinfo=UTC)),
        # trialing: nothing is billed during a trial
        ({"subscription_status": SubscriptionStatus.TRIALING}, d(10), datetime(2026, 6, 1, tzinfo=UTC)),
    ],
)
def test_next_check(fields: dict[str, Any], now: datetime, expected: datetime) -> None:
    subscription = sub(line("price_calls"), **{"auto_invoice_threshold": "50", **fields})
    assert next_check_at(subscription, now, FIVE) == expected


def test_window_lines_and_reaching() -> None:
    subscription = sub(line("price_calls"), line("price_fee", "FIXED"), auto_invoice_threshold="50")
    assert threshold_window(subscription, d(10)) == Period(d(1), d(10))
    assert threshold_window(subscription, d(1)) is None  # nothing used yet
    assert threshold_window(subscription, datetime(2026, 6, 1, tzinfo=UTC)) is None  # period end bills it
    paused = subscription.model_copy(update={"subscription_status": SubscriptionStatus.PAUSED})
    assert threshold_window(paused, d(10)) is None
    assert [li.price_id for li in usage_lines(subscription).line_items] == ["price_calls"]
    # 50.00 reaches 50.00; 49.99 does not; no threshold never does.
    assert (reached(D("50.00"), D(50)), reached(D("49.99"), D(50)), reached(D(1000), None)) == (
        True,
        False,
        False,
    )


# -- plan price sync ------------------------------------------------------------------------------


def opener(subscription: Subscription) -> Any:
    def open_line(p: Price, start: datetime) -> SubscriptionLineItem:
        return line(
            p.id, p.type.value, start_date=start, end_date=p.end_date, subscription_id=subscription.id
        )

    return open_line


def sync(subscription: Subscription, changed: list[Price], **options: Any) -> Any:
    ids = (f"line_new_{n}" for n in range(100))
    options.setdefault("overridden", {})
    return sync_line_items(
        subscription, changed, open_line=opener(subscription), new_id=lambda: next(ids), **options
    )


def test_sync_worked_example() -> None:
    # Plan: A (seq 1, fee) and B (seq 2, calls); the subscription, synced at 2, overrides A with
    # its own price O (parent A). On 10 May: A is versioned (A ends, seq 3; A2 starts, seq 4, parent
    # A), B ends (seq 5), C is added (seq 6, no start: it took effect when created, 10 May), D in
    # eur (seq 7) is added, E (seq 8) lived 2 Apr..20 Apr, before the current period.
    subscription = sub(
        line("price_o", "FIXED"),
        line("price_b"),
        line("addon_x", entity_type="addon"),
        synced_price_sequence=2,
    )
    changed = [
        price("price_a", 3, type="FIXED", meter_id=None, invoice_cadence="ADVANCE", end_date=d(10)),
        price(
            "price_a2", 4, type="FIXED", meter_id=None, invoice_cadence="ADVANCE", parent_price_id="price_a"
        ),
        price("price_b", 5, end_date=d(10), status="archived"),
        price("price_c", 6, created_at=d(10)),
        price("price_d", 7, currency="eur"),
        price(
            "price_e",
            8,
            start_date=datetime(2026, 4, 2, tzinfo=UTC),
            end_date=datetime(2026, 4, 20, tzinfo=UTC),
        ),
    ]
    result = sync(subscription, changed, overridden={None: {"price_a"}})
    spans = [(li.price_id, li.start_date, li.end_date) for li in result.lines]
    assert spans == [
        ("price_o", d(1), None),  # the override is kept; A2 (A's lineage) is not opened beside it
        ("price_b", d(1), d(10)),  # ended with its price
        ("addon_x", d(1), None),  # other owners are never touched
        ("price_c", d(10), None),  # opened when it took effect
    ]
    assert ([li.price_id for li in result.added], result.ended, result.changed) == (["price_c"], 1, True)
    # Without the override, A's line ends and A2 continues where it stopped.
    plain = sub(line("price_a", "FIXED"), synced_price_sequence=2)
    result = sync(plain, changed[:2])
    assert [(li.price_id, li.start_date, li.end_date) for li in result.lines] == [
        ("price_a", d(1), d(10)),
        ("price_a2", d(1), None),  # A2 has no start of its own and was made on 1 May (created_at)
    ]


def test_sync_never_reopens_an_invoiced_period_and_skips_inherited_skeletons() -> None:
    # The current period started 20 May; a price that ended 10 May ends its line at 20 May, one
    # that started 10 May opens at 20 May.
    subscription = sub(line("price_b"), current_period_start=d(20), synced_price_sequence=1)
    changed = [price("price_b", 2, end_date=d(10)), price("price_c", 3, start_date=d(10))]
    result = sync(subscription, changed)
    assert [(li.price_id, li.start_date, li.end_date) for li in result.lines] == [
        ("price_b", d(1), d(20)),
        ("price_c", d(20), None),
    ]
    skeleton = subscription.model_copy(
        update={"subscription_type": SubscriptionType.INHERITED, "line_items": ()}
    )
    assert not sync(skeleton, changed).changed
    assert lineage(price("price_a2", 4, parent_price_id="price_a")) == "price_a"


@given(st.lists(st.booleans(), min_size=1, max_size=6), st.integers(min_value=1, max_value=27))
def test_sync_is_idempotent_and_never_drops_a_line(ends: list[bool], day: int) -> None:
    """Syncing twice with the same prices changes nothing the second time, and every line that was
    there is still there (lines are ended, never removed)."""
    lines = [line(f"price_{i}") for i in range(len(ends))]
    subscription = sub(*lines, synced_price_sequence=0)
    changed = [price(f"price_{i}", i + 1, end_date=d(day + 1) if end else None) for i, end in enumerate(ends)]
    changed.append(price("price_new", 99, created_at=d(day)))
    once = sync(subscription, changed)
    again_sub = subscription.model_copy(update={"line_items": once.lines})
    twice = sync(again_sub, changed)
    assert not twice.changed and twice.lines == once.lines
    assert [li.id for li in once.lines][: len(lines)] == [li.id for li in lines]
    assert once.ended == sum(ends)


def test_a_new_price_makes_room_for_phases_and_a_phase_override_keeps_its_own() -> None:
    # Phases [15 May, 25 May) (it overrides price_a) and [25 May, open). Price C opens 10 May: a plan
    # piece until the first phase, copies in each phase, and no plan piece after (the last phase is
    # open). A2, a new version of A, gets no copy in the phase that overrides A.
    subscription = sub(line("price_b"), synced_price_sequence=1)
    phases = [("phase_2", d(25), None), ("phase_1", d(15), d(25))]
    changed = [
        price("price_c", 2, created_at=d(10)),
        price("price_a2", 3, parent_price_id="price_a", start_date=d(10)),
    ]
    result = sync(subscription, changed, phases=phases, overridden={"phase_1": {"price_a"}})
    spans = [(li.price_id, li.subscription_phase_id, li.start_date, li.end_date) for li in result.added]
    assert spans == [
        ("price_c", None, d(10), d(15)),
        ("price_c", "phase_1", d(15), d(25)),
        ("price_c", "phase_2", d(25), None),
        ("price_a2", None, d(10), d(15)),
        ("price_a2", "phase_2", d(25), None),  # phase_1 keeps its override of A
    ]
    # Ending C ends every piece and copy of it: a piece that starts later ends at its own start.
    ended = sync(
        subscription.model_copy(update={"line_items": result.lines, "synced_price_sequence": 3}),
        [price("price_c", 4, created_at=d(10), end_date=d(20))],
    )
    spans = [
        (li.subscription_phase_id, li.start_date, li.end_date)
        for li in ended.lines
        if li.price_id == "price_c"
    ]
    assert spans == [(None, d(10), d(15)), ("phase_1", d(15), d(20)), ("phase_2", d(25), d(25))]
    assert ended.ended == 2
