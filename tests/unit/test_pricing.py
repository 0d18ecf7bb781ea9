"""Price math: worked examples and properties."""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.money import round_money
from billingkit.domain.pricing import (
    MAX_LINE_AMOUNT,
    BillingModel,
    PriceResult,
    PriceSpec,
    Tier,
    TierMode,
    TierStep,
    TransformQuantity,
    default_fixed_quantity,
    price_buckets,
    price_quantity,
)
from billingkit.errors import ValidationError
from billingkit.testing import strategies as bks

D = Decimal

THREE_TIERS = (
    Tier(up_to=100, unit_amount=D("0.10")),
    Tier(up_to=200, unit_amount=D("0.08"), flat_amount=D("2.00")),
    Tier(up_to=None, unit_amount=D("0.05"), flat_amount=D("1.00")),
)


def flat(amount: str, currency: str = "usd", **kw: Any) -> PriceSpec:
    return PriceSpec(billing_model=BillingModel.FLAT_FEE, amount=D(amount), currency=currency, **kw)


def package(amount: str, divide_by: int, rounding: str = "up") -> PriceSpec:
    return PriceSpec(
        billing_model=BillingModel.PACKAGE,
        amount=D(amount),
        currency="usd",
        transform_quantity=TransformQuantity(divide_by, rounding),  # type: ignore[arg-type]
    )


def tiered(mode: TierMode, tiers: tuple[Tier, ...] = THREE_TIERS, **kw: Any) -> PriceSpec:
    return PriceSpec(
        billing_model=BillingModel.TIERED,
        amount=D(0),
        currency=kw.pop("currency", "usd"),
        tier_mode=mode,
        tiers=tiers,
        **kw,
    )


@pytest.mark.parametrize(
    ("spec", "quantity", "expected"),
    [
        (flat("10.00"), "3", "30.00"),  # 3 * 10.00 = 30.00
        (flat("0.0025"), "1234", "3.09"),  # 1234 * 0.0025 = 3.085 -> half away from zero 3.09
        (flat("0.0025"), "1", "0.00"),  # 0.0025 -> 0.00
        (flat("9.99"), "0", "0.00"),  # zero quantity costs zero
        (flat("1.5"), "2.5", "3.75"),  # fractional quantity 2.5 * 1.5 = 3.75
        (flat("100", "jpy"), "3", "300"),  # JPY has no minor unit
        (flat("0.1235", "kwd"), "10", "1.235"),  # KWD 3 places: 1.235
        (flat("1.005", "usd"), "1", "1.01"),  # tie 1.005 rounds away from zero
        (package("5.00", 1000), "2500", "15.00"),  # ceil(2500/1000) = 3 * 5.00
        (package("5.00", 1000), "2000", "10.00"),  # exactly 2 packages
        (package("5.00", 1000), "1", "5.00"),  # ceil(0.001) = 1 package
        (package("5.00", 1000, "down"), "2500", "10.00"),  # floor(2.5) = 2 * 5.00
        (package("5.00", 1000, "down"), "999", "0.00"),  # floor(0.999) = 0 packages
        (package("5.00", 1000), "0", "0.00"),  # zero quantity: no package
        (tiered(TierMode.VOLUME), "50", "5.00"),  # tier 1: 50 * 0.10
        (tiered(TierMode.VOLUME), "100", "10.00"),  # up_to inclusive: 100 * 0.10
        (tiered(TierMode.VOLUME), "101", "10.08"),  # tier 2: 101 * 0.08 + 2.00 = 10.08
        (tiered(TierMode.VOLUME), "150", "14.00"),  # 150 * 0.08 + 2.00 = 14.00
        (tiered(TierMode.VOLUME), "1000", "51.00"),  # open tier: 1000 * 0.05 + 1.00
        (tiered(TierMode.VOLUME), "0", "0.00"),  # zero: no flat amount either
        (tiered(TierMode.SLAB), "50", "5.00"),  # 50 * 0.10
        (tiered(TierMode.SLAB), "100", "10.00"),  # 100 * 0.10, tier 2 untouched
        (tiered(TierMode.SLAB), "150", "16.00"),  # 100*0.10 + 50*0.08 + 2.00 flat = 16.00
        (tiered(TierMode.SLAB), "202", "21.10"),  # 10 + (8 + 2) + (2*0.05 + 1) = 21.10
        (tiered(TierMode.SLAB), "0", "0.00"),  # zero: nothing, not even flats
        (tiered(TierMode.SLAB), "100.5", "12.04"),  # 10 + 0.5*0.08 + 2 = 12.04
    ],
)
def test_price_examples(spec: PriceSpec, quantity: str, expected: str) -> None:
    result = price_quantity(spec, D(quantity))
    assert result.amount == D(expected)
    assert str(result.amount) == expected  # quantized at the currency precision


@pytest.mark.parametrize(
    ("spec", "quantity"),
    [
        (flat("0.0025"), "1234567"),  # 3086.4175 -> 3086.42: 6 digits, more than the host's 5
        (flat("12.00", conversion_rate=D("1.25")), "700"),
        (package("5.00", 1000), "1234567"),
        (tiered(TierMode.SLAB), "123456.789"),
        (tiered(TierMode.VOLUME), "98765.4321"),
        (tiered(TierMode.SLAB), "0"),
    ],
)
def test_pricing_ignores_the_callers_decimal_context(spec: PriceSpec, quantity: str) -> None:
    # Same result, trace included, when a host lowers the thread's decimal precision to 5 digits.
    expected = price_quantity(spec, D(quantity))
    with localcontext() as ctx:
        ctx.prec = 5
        result = price_quantity(spec, D(quantity))
        rounded = round_money(expected.unrounded_amount, "usd")
    assert result == expected
    assert result.trace() == expected.trace()
    assert rounded == expected.amount
    assert not expected.amount or len(expected.amount.as_tuple().digits) > 5


def test_custom_pricing_unit_is_converted_after_pricing() -> None:
    # 150 units in SLAB = 16.00 credits; 1 credit = 0.5 usd -> 8.00 usd
    spec = tiered(TierMode.SLAB, conversion_rate=D("0.5"))
    result = price_quantity(spec, D(150))
    assert result.price_unit_amount == D("16.00")
    assert result.unrounded_amount == D("8.000")
    assert result.amount == D("8.00")
    assert result.trace()["conversion_rate"] == "0.5"


def test_conversion_rounds_once_in_currency() -> None:
    # 3 units * 0.333 credits = 0.999 credits; * 1.005 usd = 1.003995 usd -> 1.00
    spec = flat("0.333", conversion_rate=D("1.005"))
    result = price_quantity(spec, D(3))
    assert result.unrounded_amount == D("1.003995")
    assert result.amount == D("1.00")


def test_slab_trace_lists_each_touched_tier() -> None:
    # 100*0.10 = 10.00; 50*0.08 + 2.00 = 6.00
    result = price_quantity(tiered(TierMode.SLAB), D(150))
    assert [(s.tier_index, s.quantity, s.subtotal) for s in result.tier_steps] == [
        (0, D(100), D("10.00")),
        (1, D(50), D("6.00")),
    ]
    trace = result.trace()
    assert trace["tier_steps"][1] == {
        "tier_index": 1,
        "quantity": "50",
        "unit_amount": "0.08",
        "flat_amount": "2.00",
        "subtotal": "6.00",
    }


def test_volume_trace_names_the_landing_tier() -> None:
    result = price_quantity(tiered(TierMode.VOLUME), D(150))
    assert len(result.tier_steps) == 1
    assert result.tier_steps[0].tier_index == 1
    assert result.tier_steps[0].subtotal == D("14.00")  # 150 * 0.08 + 2.00


def test_package_trace_counts_packages() -> None:
    result = price_quantity(package("5.00", 1000), D(2500))
    assert result.package_count == D(3)
    assert result.trace()["package_count"] == "3"


def test_volume_can_make_more_usage_cost_less() -> None:
    # Documented property of VOLUME: crossing into a cheaper tier reprices every unit.
    spec = tiered(
        TierMode.VOLUME,
        (Tier(up_to=100, unit_amount=D("1.00")), Tier(up_to=None, unit_amount=D("0.50"))),
    )
    assert price_quantity(spec, D(100)).amount == D("100.00")  # 100 * 1.00
    assert price_quantity(spec, D(101)).amount == D("50.50")  # 101 * 0.50, cheaper than 100 units


@settings(max_examples=60, deadline=None)
@given(bks.price_specs(tier_mode=TierMode.SLAB), bks.quantities(), bks.quantities())
def test_slab_more_usage_never_costs_less(spec: PriceSpec, a: Decimal, b: Decimal) -> None:
    low, high = sorted((a, b))
    assert price_quantity(spec, low).unrounded_amount <= price_quantity(spec, high).unrounded_amount


@settings(max_examples=60, deadline=None)
@given(bks.price_specs(with_conversion_rate=False), bks.quantities())
def test_amount_is_unrounded_amount_rounded(spec: PriceSpec, quantity: Decimal) -> None:
    result = price_quantity(spec, quantity)
    assert abs(result.amount - result.unrounded_amount) <= D("0.5")
    if quantity == 0:
        assert result.amount == 0


@settings(max_examples=60, deadline=None)
@given(bks.price_specs(tier_mode=TierMode.SLAB), bks.quantities())
def test_slab_steps_add_up(spec: PriceSpec, quantity: Decimal) -> None:
    result = price_quantity(spec, quantity)
    assert sum((s.quantity for s in result.tier_steps), D(0)) == quantity
    assert sum((s.subtotal for s in result.tier_steps), D(0)) == result.price_unit_amount


def test_buckets_are_priced_one_by_one() -> None:
    spec = package("1.00", 10)
    # buckets 3 and 12: ceil(0.3) + ceil(1.2) = 1 + 2 = 3 packages, not ceil(1.5) = 2
    result = price_buckets(spec, [D(3), D(12)])
    assert result.amount == D("3.00")
    assert result.quantity == D(15)
    assert [b.amount for b in result.buckets] == [D("1.00"), D("2.00")]
    assert price_quantity(spec, D(15)).amount == D("2.00")


def test_buckets_round_once() -> None:
    spec = flat("0.004")
    # 1 * 0.004 + 1 * 0.004 = 0.008 -> 0.01 (rounding each bucket first would give 0.00)
    assert price_buckets(spec, [D(1), D(1)]).amount == D("0.01")
    assert price_buckets(spec, []).amount == D("0.00")


def test_buckets_restart_tiers() -> None:
    # SLAB with tiers: buckets 150 and 150 -> 16.00 + 16.00 = 32.00 (not 300 units = 28.00)
    spec = tiered(TierMode.SLAB)
    assert price_buckets(spec, [D(150), D(150)]).amount == D("32.00")
    assert price_quantity(spec, D(300)).amount == D("26.00")  # 10 + (8 + 2) + (5 + 1) = 26.00


def test_default_fixed_quantity() -> None:
    assert default_fixed_quantity(flat("10")) == D(1)  # no min_quantity: 1
    assert default_fixed_quantity(flat("10", min_quantity=D(5))) == D(5)  # default from price
    assert default_fixed_quantity(flat("10", min_quantity=D(5)), D(3)) == D(3)  # explicit wins
    assert default_fixed_quantity(flat("10", min_quantity=D(5)), D(0)) == D(5)  # 0 = not given
    assert default_fixed_quantity(flat("10", min_quantity=D(0))) == D(1)


def test_wire_mapping() -> None:
    spec = PriceSpec.from_wire(
        {
            "billing_model": "TIERED",
            "currency": "USD",
            "tier_mode": "SLAB",
            "tiers": [
                {"up_to": 100, "unit_amount": "0.10"},
                {"up_to": 200, "unit_amount": "0.08", "flat_amount": "2.00"},
                {"up_to": None, "unit_amount": "0.05", "flat_amount": "1.00"},
            ],
        }
    )
    assert spec.currency == "usd"
    assert price_quantity(spec, D(150)).amount == D("16.00")  # as THREE_TIERS
    pkg = PriceSpec.from_wire(
        {
            "billing_model": "PACKAGE",
            "amount": "5",
            "currency": "usd",
            "transform_quantity": {"divide_by": 1000},
        }
    )
    assert price_quantity(pkg, D(1001)).amount == D("10.00")  # default round up: 2 packages


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"billing_model": "FLAT"}, "billing_model"),
        ({"currency": "dollars"}, "currency"),
        ({"amount": D("-1")}, "amount"),
        ({"amount": 1.5}, "amount"),
        ({"amount": "abc"}, "amount"),
        ({"amount": D("NaN")}, "amount"),
        ({"billing_model": "PACKAGE"}, "transform_quantity"),
        ({"billing_model": "TIERED"}, "tier_mode"),
        ({"billing_model": "TIERED", "tier_mode": "VOLUME"}, "tiers"),
        ({"billing_model": "TIERED", "tier_mode": "STAIRS", "tiers": THREE_TIERS}, "tier_mode"),
        ({"tiers": THREE_TIERS}, "tiers"),
        ({"conversion_rate": D(0)}, "conversion_rate"),
        ({"conversion_rate": D("-2")}, "conversion_rate"),
        ({"min_quantity": D("-1")}, "min_quantity"),
        ({"transform_quantity": {"divide_by": 2}}, "transform_quantity"),
    ],
)
def test_spec_rejects(kwargs: dict[str, Any], field: str) -> None:
    base: dict[str, Any] = {"billing_model": "FLAT_FEE", "amount": D(1), "currency": "usd"}
    base.update(kwargs)
    with pytest.raises(ValidationError) as info:
        PriceSpec(**base)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("tiers", "field"),
    [
        ((Tier(100, D(1)), Tier(100, D(1)), Tier(None, D(1))), "tiers[1].up_to"),  # not increasing
        ((Tier(200, D(1)), Tier(100, D(1)), Tier(None, D(1))), "tiers[1].up_to"),  # decreasing
        ((Tier(None, D(1)), Tier(None, D(1))), "tiers[0].up_to"),  # open tier not last
        ((Tier(100, D(1)), Tier(200, D(1))), "tiers[1].up_to"),  # last tier closed
    ],
)
def test_tiers_rejected(tiers: tuple[Tier, ...], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        tiered(TierMode.SLAB, tiers)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"up_to": 0, "unit_amount": D(1)}, "up_to"),
        ({"up_to": True, "unit_amount": D(1)}, "up_to"),
        ({"up_to": 1.5, "unit_amount": D(1)}, "up_to"),
        ({"up_to": 5, "unit_amount": D(-1)}, "unit_amount"),
        ({"up_to": 5, "unit_amount": D(1), "flat_amount": "x"}, "flat_amount"),
    ],
)
def test_tier_rejects(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Tier(**kwargs)
    assert info.value.field == field


def test_wire_tier_errors_name_the_tier() -> None:
    with pytest.raises(ValidationError) as info:
        PriceSpec.from_wire(
            {
                "billing_model": "TIERED",
                "currency": "usd",
                "tier_mode": "SLAB",
                "tiers": [{"up_to": 10, "unit_amount": "1"}, {"unit_amount": "-1"}],
            }
        )
    assert info.value.field == "tiers[1].unit_amount"


@pytest.mark.parametrize(
    "quantity",
    [D(-1), D("-0.001"), -3, 1.5, "abc", None, D("NaN"), D("Infinity"), True, D("1e40"), [1]],
)
def test_quantity_rejected(quantity: Any) -> None:
    with pytest.raises(ValidationError) as info:
        price_quantity(flat("1"), quantity)
    assert info.value.field == "quantity"


def test_amount_cap() -> None:
    with pytest.raises(ValidationError) as info:
        price_quantity(flat("1000"), D("1e13"))  # 1e16 > 1e15
    assert info.value.field == "quantity"
    assert price_quantity(flat("1"), MAX_LINE_AMOUNT).amount == MAX_LINE_AMOUNT


def test_bucket_error_names_the_bucket() -> None:
    with pytest.raises(ValidationError) as info:
        price_buckets(flat("1"), [D(1), D(-1)])
    assert info.value.field == "quantities[1]"
    with pytest.raises(ValidationError):
        price_buckets(flat("1"), "12")  # type: ignore[arg-type]


junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.decimals(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "billing_model",
                "amount",
                "currency",
                "tier_mode",
                "tiers",
                "transform_quantity",
                "conversion_rate",
                "min_quantity",
            ]
        ),
        junk | st.sampled_from(["FLAT_FEE", "PACKAGE", "TIERED", "VOLUME", "SLAB", "usd"]),
    ),
    junk,
)
def test_pricing_is_total(data: dict[str, Any], quantity: Any) -> None:
    try:
        spec = PriceSpec.from_wire(data)
    except ValidationError:
        return
    try:
        result = price_quantity(spec, quantity)
    except ValidationError:
        return
    assert result.amount >= 0


@settings(max_examples=100, deadline=None)
@given(bks.price_specs(), junk)
def test_pricing_is_total_for_any_quantity(spec: PriceSpec, quantity: Any) -> None:
    try:
        result = price_quantity(spec, quantity)
    except ValidationError as exc:
        assert exc.field == "quantity"
    else:
        assert result.amount >= 0


@pytest.mark.parametrize(
    ("spec", "quantity", "unit_total", "packages", "steps"),
    [
        # 3 x 12.00 = 36.00 in the unit, x 1.25 = 45.00 in the currency
        (flat("12.00", conversion_rate=D("1.25")), "3", D("36.00"), None, 0),
        # 25 in packages of 10, rounded up: 3 x 5.00 = 15.00
        (package("5.00", 10), "25", D("15.00"), D(3), 0),
        # SLAB 150: 100 x 0.10 + (50 x 0.08 + 2.00) = 16.00, two steps
        (tiered(TierMode.SLAB), "150", D("16.00"), None, 2),
        # VOLUME 150: all in tier 2, 150 x 0.08 + 2.00 = 14.00, one step
        (tiered(TierMode.VOLUME), "150", D("14.00"), None, 1),
        # nothing priced costs nothing, whatever the model
        (tiered(TierMode.SLAB, conversion_rate=D("0.5")), "0", D(0), None, 0),
    ],
)
def test_results_hold_their_fields_under_their_names(
    spec: PriceSpec, quantity: str, unit_total: Decimal, packages: Decimal | None, steps: int
) -> None:
    """The fast path builds results from a positional tuple in one helper; each field must land
    under its own name (expected values worked out beside each row)."""
    result = price_quantity(spec, D(quantity))
    unrounded = unit_total if spec.conversion_rate is None else unit_total * spec.conversion_rate
    assert result == PriceResult(
        billing_model=spec.billing_model,
        currency="usd",
        quantity=D(quantity),
        price_unit_amount=unit_total,
        unrounded_amount=unrounded,
        amount=round_money(unrounded, "usd"),
        tier_steps=result.tier_steps,
        package_count=packages,
        conversion_rate=spec.conversion_rate,
        buckets=(),
    )
    assert len(result.tier_steps) == steps
    assert all(isinstance(step, TierStep) for step in result.tier_steps)
