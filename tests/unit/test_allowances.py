"""Entitlement allowances: worked examples and properties."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.allowances import (
    Allowance,
    AllowanceReset,
    apply_allowance,
    apply_allowance_per_window,
    apply_lifetime_allowance,
)
from billingkit.errors import ValidationError

D = Decimal


@pytest.mark.parametrize(
    ("allowance", "usage", "included", "overage", "billable"),
    [
        (Allowance(D(1000), is_soft_limit=True), "1250", "1000", "250", "250"),  # soft: 1250-1000
        (Allowance(D(1000), is_soft_limit=True), "800", "800", "0", "0"),  # under the limit
        (Allowance(D(1000), is_soft_limit=True), "1000", "1000", "0", "0"),  # exactly the limit
        (Allowance(D(1000)), "1250", "1000", "250", "0"),  # hard: overage reported, not billed
        (Allowance(None), "1250", "1250", "0", "0"),  # unlimited: all covered
        (Allowance(D(0), is_soft_limit=True), "7", "0", "7", "7"),  # zero allowance
        (Allowance(D(1000), is_enabled=False), "1250", "0", "1250", "1250"),  # disabled: all billed
        (Allowance(D("0.5"), is_soft_limit=True), "2.25", "0.5", "1.75", "1.75"),  # fractional
    ],
)
def test_allowance_examples(
    allowance: Allowance, usage: str, included: str, overage: str, billable: str
) -> None:
    result = apply_allowance(allowance, D(usage))
    assert (result.included, result.overage, result.billable) == (
        D(included),
        D(overage),
        D(billable),
    )
    assert result.usage == result.included + result.overage


def test_per_window_limits() -> None:
    daily = Allowance(D(100), is_soft_limit=True, usage_reset_period=AllowanceReset.DAILY)
    # day 1: 150 -> 50 over; day 2: 80 -> 0; day 3: 120 -> 20; billable 70 (one limit of 100
    # over the 350 total would have billed 250)
    result = apply_allowance_per_window(daily, [D(150), D(80), D(120)])
    assert result.billable == D(70)
    assert result.included == D(280)
    assert apply_allowance(daily, D(350)).billable == D(250)
    assert apply_allowance_per_window(daily, []).billable == D(0)


def test_lifetime_limit() -> None:
    never = Allowance(D(1000), is_soft_limit=True, usage_reset_period="NEVER")  # type: ignore[arg-type]
    # 900 used before, 300 now: 100 left -> 200 billable
    result = apply_lifetime_allowance(never, D(300), prior_usage=D(900))
    assert (result.included, result.billable) == (D(100), D(200))
    # already over the limit: everything now is billable
    assert apply_lifetime_allowance(never, D(50), prior_usage=D(1500)).billable == D(50)


@settings(max_examples=100)
@given(
    st.none() | st.integers(min_value=0, max_value=10_000).map(D),
    st.booleans(),
    st.booleans(),
    st.integers(min_value=0, max_value=20_000).map(D),
    st.integers(min_value=0, max_value=20_000).map(D),
)
def test_more_usage_never_bills_less(
    limit: Decimal | None, soft: bool, enabled: bool, a: Decimal, b: Decimal
) -> None:
    allowance = Allowance(limit, is_soft_limit=soft, is_enabled=enabled)
    low, high = sorted((a, b))
    r_low, r_high = apply_allowance(allowance, low), apply_allowance(allowance, high)
    assert r_low.billable <= r_high.billable
    assert r_high.billable <= r_high.overage <= r_high.usage
    assert r_high.included + r_high.overage == r_high.usage


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"usage_limit": D(-1)}, "usage_limit"),
        ({"usage_limit": 1.5}, "usage_limit"),
        ({"usage_limit": D(1), "is_soft_limit": "yes"}, "is_soft_limit"),
        ({"usage_limit": D(1), "is_enabled": 1}, "is_enabled"),
        ({"usage_limit": D(1), "usage_reset_period": "HOURLY"}, "usage_reset_period"),
    ],
)
def test_allowance_rejects(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Allowance(**kwargs)
    assert info.value.field == field


def test_usage_rejects() -> None:
    allowance = Allowance(D(10))
    with pytest.raises(ValidationError) as info:
        apply_allowance(allowance, D(-1))
    assert info.value.field == "usage"
    with pytest.raises(ValidationError) as info:
        apply_allowance_per_window(allowance, [D(1), "x"])  # type: ignore[list-item]
    assert info.value.field == "usages[1]"
    with pytest.raises(ValidationError) as info:
        apply_lifetime_allowance(allowance, D(1), prior_usage=None)  # type: ignore[arg-type]
    assert info.value.field == "prior_usage"
    with pytest.raises(ValidationError) as info:
        apply_allowance("10", D(1))  # type: ignore[arg-type]
    assert info.value.field == "allowance"


junk = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6), st.decimals())


@settings(max_examples=100)
@given(junk, junk, junk, junk)
def test_allowances_are_total(limit: Any, soft: Any, reset: Any, usage: Any) -> None:
    try:
        result = apply_allowance(Allowance(limit, is_soft_limit=soft, usage_reset_period=reset), usage)
    except ValidationError:
        return
    assert result.billable >= 0
