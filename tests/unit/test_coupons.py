"""Coupons: worked examples and properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.coupons import (
    Coupon,
    CouponAssociation,
    apply_coupons,
    association_applies,
    coupon_discount,
    distribute,
    ensure_redeemable,
)
from billingkit.errors import ValidationError

JAN = datetime(2025, 1, 1, tzinfo=UTC)
FEB = datetime(2025, 2, 1, tzinfo=UTC)
MAR = datetime(2025, 3, 1, tzinfo=UTC)


def pct(p: str, cadence: str = "forever", **kw: object) -> Coupon:
    return Coupon("cpn_p", "percentage", cadence, percentage_off=D(p), **kw)  # type: ignore[arg-type]


def fixed(a: str, cadence: str = "forever", **kw: object) -> Coupon:
    return Coupon("cpn_f", "fixed", cadence, amount_off=D(a), currency="usd", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("coupon", "base", "expected"),
    [
        (pct("20"), "45.55", "9.11"),  # 45.55 * 20 / 100 = 9.11
        (pct("15"), "200.00", "30.00"),  # 200 * 15% = 30
        (pct("12.5"), "0.20", "0.03"),  # 0.025 -> half away from zero -> 0.03
        (pct("100"), "19.99", "19.99"),  # full discount
        (fixed("50"), "30.00", "30.00"),  # capped at the base
        (fixed("5.555"), "100.00", "5.56"),  # amount rounded
        (fixed("10"), "0", "0"),  # nothing to discount
    ],
)
def test_discount_table(coupon: Coupon, base: str, expected: str) -> None:
    assert coupon_discount(coupon, D(base), "usd") == D(expected)


def test_discount_in_jpy_rounds_to_yen() -> None:
    # 1234 * 7.5% = 92.55 -> 93 yen
    assert coupon_discount(pct("7.5"), D(1234), "jpy") == D(93)


@pytest.mark.parametrize(
    ("total", "weights", "expected"),
    [
        ("10.00", ["10", "10", "10"], ["3.33", "3.34", "3.33"]),  # cumulative 3.33, 6.67, 10
        ("20.00", ["90", "50"], ["12.86", "7.14"]),  # 20*90/140 = 12.857 -> 12.86
        ("0.01", ["5", "5"], ["0.01", "0.00"]),  # round(0.005) = 0.01 first, rest 0
        ("30.00", ["30.00", "0"], ["30.00", "0.00"]),  # weightless lines get nothing
        ("0", ["1", "2"], ["0.00", "0.00"]),
    ],
)
def test_distribute_table(total: str, weights: list[str], expected: list[str]) -> None:
    parts = distribute(D(total), [D(w) for w in weights], "usd")
    assert list(parts) == [D(e) for e in expected]
    assert sum(parts, D(0)) == D(total)


def test_distribute_rejects_total_above_weights() -> None:
    with pytest.raises(ValidationError):
        distribute(D(11), [D(5), D(5)], "usd")
    with pytest.raises(ValidationError):
        distribute(D(1), [D(5), D(-1)], "usd")


def test_line_coupon_then_invoice_coupon() -> None:
    # lines [100, 50]; 10% on line a -> [90, 50]; then 20 off -> 20*90/140 = 12.86, 7.14
    result = apply_coupons(
        ["a", "b"],
        [D("100.00"), D("50.00")],
        [
            CouponAssociation("ca_inv", fixed("20"), JAN),
            CouponAssociation("ca_line", pct("10"), JAN, line_item_id="a"),
        ],
        currency="usd",
        period_start=JAN,
        period_end=FEB,
    )
    assert result.line_item_discounts == (D("10.00"), D(0))
    assert result.invoice_level_discounts == (D("12.86"), D("7.14"))
    assert result.total_discount == D("30.00")
    assert result.remaining == (D("77.14"), D("42.86"))
    line_app, inv_app = result.applications
    assert (line_app.coupon_association_id, line_app.original_price, line_app.final_price) == (
        "ca_line",
        D("100.00"),
        D("90.00"),
    )
    assert (inv_app.discount_type, inv_app.discounted_amount, inv_app.original_price) == (
        "fixed",
        D("20.00"),
        D("140.00"),
    )
    assert inv_app.final_price == D("120.00")


def test_invoice_coupons_apply_in_start_order_on_running_total() -> None:
    # 100; first (Jan) 10% -> 10, then (Jan 2) 50% of 90 -> 45; total 55
    late = CouponAssociation("ca_2", pct("50"), JAN + timedelta(days=1))
    early = CouponAssociation("ca_1", pct("10"), JAN)
    result = apply_coupons(
        ["a"], [D("100.00")], [late, early], currency="usd", period_start=JAN, period_end=FEB
    )
    assert [a.discounted_amount for a in result.applications] == [D("10.00"), D("45.00")]
    assert result.total_discount == D("55.00")


def test_zero_duration_association_applies_to_nothing() -> None:
    assoc = CouponAssociation("ca", pct("10"), JAN, end_date=JAN)
    assert not association_applies(assoc, JAN, FEB, currency="usd")


@pytest.mark.parametrize(
    ("coupon", "applications", "applies"),
    [
        (pct("10", "once"), 0, True),
        (pct("10", "once"), 1, False),  # D3: once means exactly one invoice
        (pct("10", "repeated", duration_in_periods=3), 2, True),
        (pct("10", "repeated", duration_in_periods=3), 3, False),
        (pct("10", "forever"), 99, True),
    ],
)
def test_cadence(coupon: Coupon, applications: int, applies: bool) -> None:
    assoc = CouponAssociation("ca", coupon, JAN, applications=applications)
    assert association_applies(assoc, JAN, FEB, currency="usd") is applies


def test_association_period_overlap_and_currency() -> None:
    assoc = CouponAssociation("ca", pct("10"), FEB, end_date=MAR)
    assert not association_applies(assoc, JAN, FEB, currency="usd")  # starts at period end
    assert association_applies(assoc, FEB, MAR, currency="usd")
    assert not association_applies(assoc, MAR, MAR + timedelta(days=31), currency="usd")
    eur = CouponAssociation("ca", fixed("5"), JAN)
    assert not association_applies(eur, JAN, FEB, currency="eur")


def test_redeem_window() -> None:
    coupon = pct("10", "once", redeem_after=JAN, redeem_before=FEB)
    ensure_redeemable(coupon, JAN)
    with pytest.raises(ValidationError) as err:
        ensure_redeemable(coupon, MAR)
    assert err.value.field == "redeem_before"
    with pytest.raises(ValidationError) as err:
        ensure_redeemable(coupon, JAN - timedelta(seconds=1))
    assert err.value.field == "redeem_after"
    assoc = CouponAssociation("ca", coupon, JAN)
    assert not association_applies(assoc, JAN, FEB, currency="usd", as_of=MAR)
    forever = CouponAssociation("cf", pct("10", redeem_before=FEB), JAN)
    assert association_applies(forever, FEB, MAR, currency="usd", as_of=MAR)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"type": "fixed", "cadence": "once"}, "amount_off"),
        ({"type": "percentage", "cadence": "once", "percentage_off": D(101)}, "percentage_off"),
        ({"type": "percentage", "cadence": "once", "percentage_off": D(0)}, "percentage_off"),
        ({"type": "percentage", "cadence": "repeated", "percentage_off": D(5)}, "duration_in_periods"),
        (
            {"type": "percentage", "cadence": "once", "percentage_off": D(5), "duration_in_periods": 2},
            "duration_in_periods",
        ),
        ({"type": "bogus", "cadence": "once"}, "type"),
        (
            {
                "type": "percentage",
                "cadence": "once",
                "percentage_off": D(5),
                "redeem_after": FEB,
                "redeem_before": JAN,
            },
            "redeem_after",
        ),
        (
            {
                "type": "percentage",
                "cadence": "once",
                "percentage_off": D(5),
                "redeem_after": datetime(2025, 1, 1),
            },
            "redeem_after",
        ),
    ],
)
def test_coupon_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        Coupon("cpn", **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


cents = st.integers(min_value=0, max_value=10**9).map(lambda c: D(c).scaleb(-2))


@given(st.lists(cents, min_size=1, max_size=12), st.data())
def test_distribution_sums_exactly_and_is_capped(weights: list[D], data: st.DataObject) -> None:
    total_cents = data.draw(st.integers(0, int(sum(weights, D(0)) * 100)))
    total = D(total_cents).scaleb(-2)
    parts = distribute(total, weights, "usd")
    assert sum(parts, D(0)) == total
    assert all(D(0) <= p <= w for p, w in zip(parts, weights, strict=True))


@given(
    st.lists(cents, min_size=1, max_size=6),
    st.lists(st.tuples(st.booleans(), st.integers(1, 100), st.booleans()), max_size=4),
)
def test_discounts_never_exceed_what_they_discount(
    amounts: list[D], specs: list[tuple[bool, int, bool]]
) -> None:
    assocs = []
    for n, (is_pct, value, on_line) in enumerate(specs):
        coupon = (
            Coupon(f"c{n}", "percentage", "forever", percentage_off=D(value))
            if is_pct
            else Coupon(f"c{n}", "fixed", "forever", amount_off=D(value))
        )
        assocs.append(CouponAssociation(f"a{n}", coupon, JAN, line_item_id="l0" if on_line else None))
    ids = [f"l{i}" for i in range(len(amounts))]
    result = apply_coupons(ids, amounts, assocs, currency="usd", period_start=JAN, period_end=FEB)
    for amount, ld, il, rem in zip(
        amounts,
        result.line_item_discounts,
        result.invoice_level_discounts,
        result.remaining,
        strict=True,
    ):
        assert D(0) <= ld + il <= amount
        assert rem == amount - ld - il >= 0
    for app in result.applications:
        assert 0 < app.discounted_amount <= app.original_price
        assert app.final_price == app.original_price - app.discounted_amount


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "type",
                "cadence",
                "amount_off",
                "percentage_off",
                "currency",
                "duration_in_periods",
                "redeem_after",
                "redeem_before",
            ]
        ),
        st.one_of(
            st.none(),
            st.integers(-3, 200),
            st.floats(),
            st.text(max_size=4),
            st.sampled_from(["fixed", "percentage", "once", "repeated", "forever", "usd"]),
            st.datetimes(),
            st.decimals(allow_nan=True),
        ),
    )
)
def test_coupon_is_total(kwargs: dict[str, object]) -> None:
    kwargs.setdefault("type", "percentage")
    kwargs.setdefault("cadence", "forever")
    try:
        coupon = Coupon("cpn", **kwargs)  # type: ignore[arg-type]
    except ValidationError:
        return
    assert coupon_discount(coupon, D("10.00"), "usd") <= D("10.00")
