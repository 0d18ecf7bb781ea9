"""Commitments: worked examples and properties."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.commitments import (
    LineCommitment,
    SubscriptionCommitment,
    TimeBucket,
    TimeOfDay,
    UsageBucket,
    commitment_outcome,
    cumulative_commitment_outcome,
    resolve_commitment_amount,
    split_subscription_commitment,
    time_bucket_commitment_outcome,
    windowed_commitment_outcome,
)
from billingkit.domain.money import round_money
from billingkit.errors import ValidationError

# (usage, commitment, factor, true_up, amount, utilized, overage, true_up_amount)
RULE_TABLE = [
    ("1200", "1000", "1.5", False, "1300.00", "1000.00", "300.00", "0"),  # 1000 + 200*1.5
    ("1000", "1000", "2", True, "1000.00", "1000.00", "0.00", "0"),  # at commitment: no overage
    ("700", "1000", "1.5", True, "1000.00", "700.00", "0", "300.00"),  # 700 + true-up 300
    ("700", "1000", "1.5", False, "700.00", "700.00", "0", "0"),  # no true-up: pay usage
    ("0", "50", "1", True, "50.00", "0.00", "0", "50.00"),  # nothing used: pay commitment
    ("10.005", "10", "1.5", False, "10.01", "10.00", "0.01", "0"),  # 0.005*1.5=0.0075 -> 0.01
]


@pytest.mark.parametrize(
    ("usage", "commit", "factor", "true_up", "amount", "utilized", "overage", "true_up_amt"),
    RULE_TABLE,
)
def test_commitment_rule_table(
    usage: str,
    commit: str,
    factor: str,
    true_up: bool,
    amount: str,
    utilized: str,
    overage: str,
    true_up_amt: str,
) -> None:
    out = commitment_outcome(D(usage), D(commit), D(factor), true_up, "usd")
    assert out.amount == D(amount)
    assert out.utilized == D(utilized)
    assert out.overage == D(overage)
    assert out.true_up == D(true_up_amt)
    assert out.amount == out.utilized + out.overage + out.true_up


def test_cumulative_commitment() -> None:
    # commit 12000, prior 11000, usage 1500, factor 2: within 1000 + 500*2 = 2000
    out = cumulative_commitment_outcome(D(1500), D(11000), D(12000), D(2), True, False, "usd")
    assert (out.utilized, out.overage, out.true_up, out.amount) == (1000, 1000, 0, 2000)
    # not the closing period: no true-up even though usage is short
    mid = cumulative_commitment_outcome(D(500), D(1000), D(12000), D(2), True, False, "usd")
    assert (mid.amount, mid.true_up) == (500, 0)
    # closing period: 12000 - (10000 + 500) = 1500 true-up
    end = cumulative_commitment_outcome(D(500), D(10000), D(12000), D(2), True, True, "usd")
    assert (end.amount, end.true_up) == (2000, 1500)


def test_windowed_commitment_per_bucket() -> None:
    # commit 10 per window, factor 2, true-up: (10 + 2*2) + (4 + 6) = 24
    out = windowed_commitment_outcome([D(12), D(4)], D(10), D(2), True, "usd")
    assert out.amount == D(24)
    assert (out.overage, out.true_up) == (D(4), D(6))
    # a third window without usage still owes 10: 24 + 10 = 34
    assert windowed_commitment_outcome([D(12), D(4)], D(10), D(2), True, "usd", window_count=3).amount == D(
        34
    )
    with pytest.raises(ValidationError) as err:
        windowed_commitment_outcome([D(1), D(2)], D(10), D(2), True, "usd", window_count=1)
    assert err.value.field == "window_count"


def test_quantity_commitment_resolves_through_price() -> None:
    # 1000 units at 0.02 = 20.00
    assert resolve_commitment_amount("quantity", D(1000), lambda q: q * D("0.02")) == D("20.00")
    assert resolve_commitment_amount("amount", D(5), lambda q: q * 99) == D(5)
    with pytest.raises(ValidationError):
        resolve_commitment_amount("seats", D(1), lambda q: q)


def test_time_buckets_charge_by_window_containing_bucket() -> None:
    peak = TimeBucket(TimeOfDay(9), TimeOfDay(17), "amount", D(5), D(2), False, id="peak")
    night = TimeBucket(TimeOfDay(22), TimeOfDay(6), "amount", D(3), D(1), True, id="night")
    buckets = [
        UsageBucket(datetime(2025, 1, 1, 10, tzinfo=UTC), D(7)),  # peak: 5 + 2*2 = 9
        UsageBucket(datetime(2025, 1, 1, 23, tzinfo=UTC), D(1)),  # night: 1 + true-up 2 = 3
        UsageBucket(datetime(2025, 1, 2, 5, 59, tzinfo=UTC), D(4)),  # night wraps: 3 + 1 = 4
        UsageBucket(datetime(2025, 1, 1, 18, tzinfo=UTC), D(2)),  # no bucket: plain 2
    ]
    out, details = time_bucket_commitment_outcome(buckets, [peak, night], lambda tb, q: q, "usd")
    assert [d[0] for d in details] == ["peak", "night", "night", ""]
    assert [d[2] for d in details] == [D(9), D(3), D(4), D(2)]
    assert out.amount == D(18)
    assert out.true_up == D(2)


@pytest.mark.parametrize(
    ("hour", "minute", "field"),
    [(25, 0, "hour"), (9, 60, "minute"), (24, 30, "minute"), (-1, 0, "hour"), (9, -1, "minute")],
)
def test_time_of_day_errors_name_the_part_that_is_wrong(hour: int, minute: int, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        TimeOfDay(hour, minute)
    assert err.value.field == field, err.value.message
    assert field in err.value.message


def test_subscription_commitment_split() -> None:
    # commit 100, factor 2, lines [60, 70]: within [60, 40], overage [0, 30*2 = 60]
    split = split_subscription_commitment([D(60), D(70)], SubscriptionCommitment(D(100), D(2), True), "usd")
    assert split.within == (D(60), D(40))
    assert split.overage == (D(0), D(60))
    assert split.true_up == 0
    # usage 30 of 100 with true-up: 70 true-up
    short = split_subscription_commitment([D(30)], SubscriptionCommitment(D(100), D(2), True), "usd")
    assert short.true_up == D(70)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"amount": D(100), "overage_factor": D("0.99")}, "overage_factor"),
        ({"amount": D(0)}, "commitment_amount"),
        ({"amount": 1.5}, "commitment_amount"),
        ({"amount": D(1), "enable_true_up": "yes"}, "enable_true_up"),
    ],
)
def test_subscription_commitment_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        SubscriptionCommitment(**kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


def test_overage_factor_minimum_is_one() -> None:
    assert SubscriptionCommitment(D(1), D(1)).overage_factor == 1
    with pytest.raises(ValidationError) as err:
        LineCommitment("amount", D(10), D("0.5"))
    assert err.value.field == "commitment_overage_factor"


money = st.decimals(min_value=0, max_value=10**9, places=2, allow_nan=False)
factors = st.decimals(min_value=1, max_value=10, places=2, allow_nan=False)


@given(money, money, factors, st.booleans())
def test_outcome_is_sum_of_rounded_parts(u: D, c: D, f: D, t: bool) -> None:
    out = commitment_outcome(u, c, f, t, "usd")
    assert out.amount == out.utilized + out.overage + out.true_up
    # the charge never falls below usage, and with true-up never below the commitment
    assert out.amount >= u
    if t:
        assert out.amount >= c


@given(money, money, money, factors)
def test_more_usage_never_costs_less(u: D, extra: D, c: D, f: D) -> None:
    low = commitment_outcome(u, c, f, True, "usd").amount
    high = commitment_outcome(u + extra, c, f, True, "usd").amount
    assert high >= low


@given(st.lists(money, max_size=8), money.filter(lambda x: x > 0), factors, st.booleans())
def test_split_parts_sum(usages: list[D], c: D, f: D, t: bool) -> None:
    split = split_subscription_commitment(usages, SubscriptionCommitment(c, f, t), "usd")
    assert sum(split.within, D(0)) == split.utilized <= c
    assert len(split.within) == len(usages)


@given(
    st.dictionaries(
        st.sampled_from(["amount", "overage_factor", "enable_true_up", "duration_periods"]),
        st.one_of(st.none(), st.integers(-5, 5), st.floats(), st.text(max_size=3), st.booleans()),
    )
)
def test_subscription_commitment_total(kwargs: dict[str, object]) -> None:
    kwargs.setdefault("amount", D(1))
    try:
        made = SubscriptionCommitment(**kwargs)  # type: ignore[arg-type]
    except ValidationError:
        return
    assert made.overage_factor >= 1 and made.amount > 0


# Below the commitment with true-up the charge is exactly the rounded commitment: the true-up is
# round(commitment) - round(usage), never the separately rounded shortfall.


def test_true_up_tops_rounded_usage_up_to_exactly_the_commitment() -> None:
    # usage 749.995 rounds to 750.00; true-up 1000.00 - 750.00 = 250.00 (not round(250.005) = 250.01)
    out = commitment_outcome(D("749.995"), D(1000), D("1.5"), True, "usd")
    assert (out.utilized, out.true_up, out.amount) == (D("750.00"), D("250.00"), D("1000.00"))


def test_cumulative_true_up_closes_the_window_at_exactly_the_commitment() -> None:
    # prior invoices billed 500.00; this one 249.995 -> 250.00; true-up 1000 - 500 - 250.00 = 250.00
    out = cumulative_commitment_outcome(D("249.995"), D("500.00"), D(1000), D(2), True, True, "usd")
    assert (out.utilized, out.true_up, out.amount) == (D("250.00"), D("250.00"), D("500.00"))


def test_windowed_true_up_is_exact_in_every_window() -> None:
    # two windows of 4.995 each against 10 per window: (5.00 + 5.00) * 2 = 20.00, not 20.02
    out = windowed_commitment_outcome([D("4.995"), D("4.995")], D(10), D(2), True, "usd")
    assert (out.utilized, out.true_up, out.amount) == (D("10.00"), D("10.00"), D("20.00"))


def test_subscription_split_true_up_is_exact() -> None:
    # lines 500.005 (-> 500.01) and 249.99: utilized 750.00, true-up 1000.00 - 750.00 = 250.00
    split = split_subscription_commitment(
        [D("500.005"), D("249.99")], SubscriptionCommitment(D(1000), D(2), True), "usd"
    )
    assert (split.utilized, split.true_up) == (D("750.00"), D("250.00"))
    assert split.utilized + split.true_up == D("1000.00")


raw_money = st.decimals(min_value=0, max_value=10**7, places=4, allow_nan=False)


@given(raw_money, raw_money, factors)
def test_true_up_charge_is_the_rounded_commitment(u: D, c: D, f: D) -> None:
    out = commitment_outcome(u, c, f, True, "usd")
    if u < c:
        assert out.amount == round_money(c, "usd")


@given(st.lists(raw_money, min_size=1, max_size=6), raw_money, factors)
def test_cumulative_window_bills_the_rounded_commitment(usages: list[D], c: D, f: D) -> None:
    # Each invoice passes the rounded usage billed before it as prior usage, as services do.
    prior = D(0)
    billed = D(0)
    for index, usage in enumerate(usages):
        out = cumulative_commitment_outcome(usage, prior, c, f, True, index == len(usages) - 1, "usd")
        billed += out.amount
        prior += out.utilized
    if sum(usages, D(0)) < c:
        assert billed == round_money(c, "usd")


@given(st.lists(raw_money, max_size=6), raw_money.filter(lambda x: x > 0), factors)
def test_split_true_up_bills_the_rounded_commitment(usages: list[D], c: D, f: D) -> None:
    split = split_subscription_commitment(usages, SubscriptionCommitment(c, f, True), "usd")
    if sum(usages, D(0)) < c:
        assert split.utilized + split.total_overage + split.true_up == round_money(c, "usd")
