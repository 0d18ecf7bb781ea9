"""Invoice assembly: which charges, order of adjustments, totals, properties."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billingkit.domain.commitments import LineCommitment, SubscriptionCommitment
from billingkit.domain.coupons import Coupon, CouponAssociation
from billingkit.domain.credits import CreditSource
from billingkit.domain.invoice_lines import CommitmentInfo, InvoiceLineDraft, LineCharge, LineItemInput
from billingkit.domain.invoicing import InvoiceRequest, assemble_invoice
from billingkit.domain.pricing import PriceSpec, Tier
from billingkit.domain.taxes import TaxRate
from billingkit.errors import InvalidOperation, ValidationError

JAN = datetime(2025, 1, 1, tzinfo=UTC)
JAN16 = datetime(2025, 1, 16, 12, tzinfo=UTC)
FEB = datetime(2025, 2, 1, tzinfo=UTC)
MAR = datetime(2025, 3, 1, tzinfo=UTC)


def flat(amount: str, currency: str = "usd") -> PriceSpec:
    return PriceSpec(billing_model="FLAT_FEE", amount=D(amount), currency=currency)  # type: ignore[arg-type]


SLAB = PriceSpec(
    billing_model="TIERED",
    amount=D(0),
    currency="usd",
    tier_mode="SLAB",  # type: ignore[arg-type]
    tiers=(Tier(1000, D("0.01")), Tier(None, D("0.005"))),
)

BASE = LineItemInput("li_base", flat("20"), "FIXED", "ADVANCE", display_name="Base")
SEATS_ARREAR = LineItemInput("li_seats", flat("10"), "FIXED", "ARREAR", quantity=D(3))
API = LineItemInput("li_api", SLAB, "USAGE", "ARREAR", quantity=D(3000))  # 10 + 2000*0.005 = 20


def request(**kw: Any) -> InvoiceRequest:
    base: dict[str, Any] = {
        "currency": "usd",
        "reference_point": "period_end",
        "period_start": JAN,
        "period_end": FEB,
        "next_period_end": MAR,
        "lines": (BASE, SEATS_ARREAR, API),
    }
    base.update(kw)
    return InvoiceRequest(**base)


def by_id(draft: Any) -> dict[str, Any]:
    return {ln.line_item_id: ln for ln in draft.lines}


def test_period_end_bills_arrear_of_closing_and_advance_of_next() -> None:
    draft = assemble_invoice(request())
    lines = by_id(draft)
    assert (lines["li_base"].period_start, lines["li_base"].period_end) == (FEB, MAR)
    assert (lines["li_seats"].period_start, lines["li_seats"].period_end) == (JAN, FEB)
    # 20 (next month ADVANCE) + 3*10 (ARREAR) + 20 (usage) = 70
    assert [lines[k].amount for k in ("li_base", "li_seats", "li_api")] == [20, 30, 20]
    assert draft.subtotal == draft.total == draft.amount_due == D("70.00")


def test_period_start_bills_only_advance() -> None:
    draft = assemble_invoice(request(reference_point="period_start"))
    assert [(ln.line_item_id, ln.period_start, ln.amount) for ln in draft.lines] == [
        ("li_base", JAN, D("20.00"))
    ]


def test_no_next_period_no_advance() -> None:
    draft = assemble_invoice(request(next_period_end=None))
    assert set(by_id(draft)) == {"li_seats", "li_api"}


def test_cancel_bills_arrear_up_to_cancel_prorated() -> None:
    # cancel at Jan 16 12:00 = 15.5 of 31 days: seats 30 * 0.5 = 15.00; usage as given
    draft = assemble_invoice(request(reference_point="cancel", cancel_at=JAN16))
    lines = by_id(draft)
    assert set(lines) == {"li_seats", "li_api"}
    assert lines["li_seats"].amount == D("15.00")
    assert lines["li_seats"].period_end == JAN16
    assert lines["li_seats"].trace["proration_coefficient"] == "0.5"


def test_line_clipped_to_its_own_dates() -> None:
    # ARREAR line starting Jan 16 12:00 covers 15.5 of 31 days: 31 * 0.5 = 15.50
    late = LineItemInput("li_late", flat("31"), "FIXED", "ARREAR", start_date=JAN16)
    draft = assemble_invoice(request(lines=(late,)))
    (line,) = draft.lines
    assert line.period_start == JAN16
    assert line.amount == D("15.50")  # 31 * 0.5
    gone = LineItemInput("li_gone", flat("31"), "FIXED", "ADVANCE", end_date=FEB)
    assert assemble_invoice(request(lines=(gone,))).lines == ()


def test_full_adjustment_order() -> None:
    # subtotal 70; line coupon 10% on api: 2.00; invoice 10.00 off over [20, 30, 18]:
    # cumulative round(10*20/68)=2.94, round(10*50/68)=7.35 -> 4.41, last 2.65
    # discount 12.00; tax 10% of 58.00 = 5.80; credits (USAGE only) on api 18-2.65=15.35 -> 5.00
    # total = 70 - 12 + 5.80 - 5 = 58.80
    draft = assemble_invoice(
        request(
            coupons=(
                CouponAssociation(
                    "ca_l",
                    Coupon("c1", "percentage", "forever", percentage_off=D(10)),
                    JAN,
                    line_item_id="li_api",
                ),
                CouponAssociation("ca_i", Coupon("c2", "fixed", "once", amount_off=D(10)), JAN),
            ),
            tax_rates=(TaxRate("tx", "percentage", percentage_value=D(10)),),
            credit_sources=(CreditSource("cg", D(5), kind="credit_grant", priority=0),),
        )
    )
    lines = by_id(draft)
    assert lines["li_api"].line_item_discount == D("2.00")
    assert [lines[k].invoice_level_discount for k in ("li_base", "li_seats", "li_api")] == [
        D("2.94"),
        D("4.41"),
        D("2.65"),
    ]
    assert draft.total_discount == D("12.00")
    assert draft.total_tax == D("5.80")
    assert draft.tax_applications[0].taxable_amount == D("58.00")
    assert lines["li_api"].prepaid_credits_applied == D("5.00")
    assert lines["li_base"].prepaid_credits_applied == 0  # FIXED: not payable by default
    assert draft.total == D("58.80")
    assert [a.coupon_association_id for a in draft.coupon_applications] == ["ca_l", "ca_i"]
    assert draft.credit_debits == (("cg", D("5.00")),)


def test_line_commitment_in_invoice() -> None:
    # usage 20.00 vs commitment 50, true-up: 50.00 (utilized 20, true-up 30)
    api = LineItemInput(
        "li_api",
        SLAB,
        "USAGE",
        "ARREAR",
        quantity=D(3000),
        commitment=LineCommitment("amount", D(50), D("1.5"), True),
    )
    (line,) = assemble_invoice(request(lines=(api,))).lines
    assert line.amount == D("50.00")
    info = line.commitment_info
    assert info is not None
    assert (info.computed_commitment_utilized_amount, info.computed_true_up_amount) == (20, 30)
    assert line.trace["commitment"]["computed_true_up_amount"] == "30.00"


def test_quantity_commitment_and_allowance() -> None:
    # 3000 calls, 500 free -> 2500 billable = 10 + 1500*0.005 = 17.50
    # commitment 4000 units priced = 10 + 3000*0.005 = 25.00; factor 2: below -> no true-up = 17.50
    api = LineItemInput(
        "li_api",
        SLAB,
        "USAGE",
        "ARREAR",
        quantity=D(3000),
        allowance=D(500),
        commitment=LineCommitment("quantity", D(4000), D(2), False),
    )
    (line,) = assemble_invoice(request(lines=(api,))).lines
    assert line.adjusted_entitlement_quantity == D(2500)
    assert line.quantity == D(3000)
    assert line.amount == D("17.50")


def test_subscription_commitment_overage_and_true_up() -> None:
    # usage 20 vs commit 15, factor 2: 15 + 5*2 = 25
    draft = assemble_invoice(request(subscription_commitment=SubscriptionCommitment(D(15), D(2), True)))
    assert by_id(draft)["li_api"].amount == D("25.00")
    # commit 100: usage 20, true-up line 80 "Pro True Up"
    draft = assemble_invoice(
        request(subscription_commitment=SubscriptionCommitment(D(100), D(2), True), plan_display_name="Pro")
    )
    true_up = by_id(draft)["subscription_commitment"]
    assert (true_up.kind, true_up.amount, true_up.display_name) == ("true_up", D(80), "Pro True Up")
    assert true_up.metadata == {"is_commitment_trueup": "true"}
    assert draft.subtotal == D("150.00")  # 20 + 30 + 20 + 80


def test_commitments_cannot_be_combined() -> None:
    api = LineItemInput(
        "li_api", SLAB, "USAGE", "ARREAR", quantity=D(1), commitment=LineCommitment("amount", D(5))
    )
    with pytest.raises(ValidationError) as err:
        request(lines=(api,), subscription_commitment=SubscriptionCommitment(D(5)))
    assert err.value.field == "commitment_amount"


def test_a_commitment_of_the_wrong_type_is_named_as_passed() -> None:
    with pytest.raises(ValidationError) as err:
        request(subscription_commitment="15")  # type: ignore[arg-type]
    assert err.value.field == "subscription_commitment"


def test_duplicate_charge_refused_but_preview_ignores_history() -> None:
    first = assemble_invoice(request())
    with pytest.raises(InvalidOperation):
        assemble_invoice(request(previously_billed=first.charge_keys))
    preview = assemble_invoice(request(reference_point="preview", previously_billed=first.charge_keys))
    assert preview.total == first.total
    with pytest.raises(InvalidOperation):
        assemble_invoice(request(lines=(BASE, BASE)))


def test_total_never_negative_and_credits_cap() -> None:
    draft = assemble_invoice(
        request(
            coupons=(CouponAssociation("ca", Coupon("c", "fixed", "forever", amount_off=D(1000)), JAN),),
            credit_sources=(CreditSource("w", D(1000), allowed_price_types=frozenset({"USAGE", "FIXED"})),),
        )
    )
    assert draft.total_discount == D("70.00")
    assert draft.total_prepaid_credits_applied == 0
    assert draft.total == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"period_start": datetime(2025, 1, 1)}, "period_start"),
        ({"period_end": JAN}, "period_end"),
        ({"reference_point": "now"}, "reference_point"),
        ({"reference_point": "cancel"}, "cancel_at"),
        ({"reference_point": "cancel", "cancel_at": MAR}, "cancel_at"),
        ({"currency": "dollars"}, "currency"),
        ({"lines": [BASE]}, "line_items"),
        ({"next_period_end": JAN}, "next_period_end"),
    ],
)
def test_request_validation(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        request(**kwargs)
    assert err.value.field == field


def test_price_currency_must_match() -> None:
    euro = LineItemInput("li_eur", flat("5", "eur"), "FIXED", "ADVANCE")
    with pytest.raises(ValidationError) as err:
        assemble_invoice(request(lines=(euro,)))
    assert err.value.field == "currency"


def test_usage_must_be_arrear() -> None:
    with pytest.raises(ValidationError) as err:
        LineItemInput("li", SLAB, "USAGE", "ADVANCE", quantity=D(1))
    assert err.value.field == "invoice_cadence"


def test_trace_is_machine_readable() -> None:
    lines = by_id(assemble_invoice(request()))
    trace = lines["li_api"].trace
    assert trace["quantity_source"] == "usage"
    assert [s["subtotal"] for s in trace["pricing"]["tier_steps"]] == ["10.00", "10.000"]
    assert trace["rounding"]["rule"] == "half_away_from_zero"
    assert lines["li_base"].trace["quantity_source"] == "default"


cents = st.integers(0, 10**6).map(lambda c: D(c).scaleb(-2))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(cents, st.integers(0, 10**5), st.booleans()), min_size=1, max_size=6),
    st.lists(st.tuples(st.booleans(), st.integers(1, 100), st.booleans()), max_size=3),
    st.lists(st.decimals(0, 30, places=2), max_size=2),
    st.lists(cents, max_size=2),
)
def test_invoice_properties(
    specs: list[tuple[D, int, bool]],
    coupon_specs: list[tuple[bool, int, bool]],
    tax_pcts: list[D],
    credit_balances: list[D],
) -> None:
    lines = []
    for i, (amount, usage, fixed) in enumerate(specs):
        if fixed:
            lines.append(LineItemInput(f"l{i}", flat(str(amount)), "FIXED", "ARREAR"))
        else:
            lines.append(LineItemInput(f"l{i}", SLAB, "USAGE", "ARREAR", quantity=D(usage)))
    coupons = tuple(
        CouponAssociation(
            f"a{n}",
            Coupon(f"c{n}", "percentage", "forever", percentage_off=D(v))
            if is_pct
            else Coupon(f"c{n}", "fixed", "forever", amount_off=D(v)),
            JAN,
            line_item_id="l0" if on_line else None,
        )
        for n, (is_pct, v, on_line) in enumerate(coupon_specs)
    )
    draft = assemble_invoice(
        request(
            lines=tuple(lines),
            coupons=coupons,
            tax_rates=tuple(
                TaxRate(f"t{i}", "percentage", percentage_value=p) for i, p in enumerate(tax_pcts)
            ),
            credit_sources=tuple(CreditSource(f"s{i}", b, priority=i) for i, b in enumerate(credit_balances)),
        )
    )
    assert draft.subtotal == sum((ln.amount for ln in draft.lines), D(0))
    assert draft.total_discount == sum(
        (ln.line_item_discount + ln.invoice_level_discount for ln in draft.lines), D(0)
    )
    assert draft.total_tax == sum((t.tax_amount for t in draft.tax_applications), D(0))
    for ln in draft.lines:
        owed = ln.amount - ln.line_item_discount - ln.invoice_level_discount
        assert 0 <= ln.prepaid_credits_applied <= owed
        assert ln.amount == ln.amount.quantize(D("0.01"))
    assert draft.total >= 0
    assert (
        draft.total
        == draft.amount_due
        == max(
            D(0),
            draft.subtotal - draft.total_discount + draft.total_tax - draft.total_prepaid_credits_applied,
        )
    )
    inv_level = [a for a in draft.coupon_applications if a.line_item_id is None]
    assert sum((a.discounted_amount for a in inv_level), D(0)) == sum(
        (ln.invoice_level_discount for ln in draft.lines), D(0)
    )


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "currency",
                "reference_point",
                "period_start",
                "period_end",
                "next_period_end",
                "cancel_at",
                "lines",
                "coupons",
                "tax_rates",
                "credit_sources",
                "previously_billed",
                "as_of",
                "commitment_prior_usage",
            ]
        ),
        st.one_of(
            st.none(),
            st.integers(-2, 2),
            st.floats(),
            st.text(max_size=4),
            st.datetimes(),
            st.datetimes(timezones=st.just(UTC)),
            st.sampled_from(["usd", "cancel", "preview", "period_start"]),
            st.lists(st.integers(), max_size=2),
            st.just(frozenset({("x", "y", 1, 2)})),
        ),
    )
)
def test_request_is_total(kwargs: dict[str, Any]) -> None:
    try:
        draft = assemble_invoice(request(**kwargs))
    except ValidationError:
        return
    assert draft.total >= 0


def test_every_line_holds_its_fields_under_their_names() -> None:
    """The fast path builds each line from a positional tuple in one helper; every field must land
    under its own name. Expected values are worked out here, not read back from the line."""
    draft = assemble_invoice(
        request(
            subscription_commitment=SubscriptionCommitment(D(100), D(2), True),
            plan_display_name="Pro",
            coupons=(
                CouponAssociation(
                    "ca",
                    Coupon("c1", "percentage", "forever", percentage_off=D(10)),
                    JAN,
                    line_item_id="li_base",
                ),
            ),
            credit_sources=(CreditSource("cg", D(5), kind="credit_grant", priority=0),),
        )
    )
    # (amount, period, line discount, invoice discount, credit): 10% coupon on the 20.00 base fee,
    # the 5.00 grant pays the usage line, commitment 100 - usage 20 = true-up 80.
    worked = {
        "li_base": (D("20.00"), (FEB, MAR), D("2.00"), D(0), D(0)),
        "li_seats": (D("30.00"), (JAN, FEB), D(0), D(0), D(0)),
        "li_api": (D("20.00"), (JAN, FEB), D(0), D(0), D("5.00")),
        "subscription_commitment": (D(80), (JAN, FEB), D(0), D(0), D(0)),
    }
    items = {item.line_item_id: item for item in (BASE, SEATS_ARREAR, API)}
    assert [line.line_item_id for line in draft.lines] == list(worked)
    for line in draft.lines:
        amount, (start, end), discount, invoice_discount, credit = worked[line.line_item_id]
        adjustments: dict[str, Any] = {
            "amount": amount,
            "period_start": start,
            "period_end": end,
            "line_item_discount": discount,
            "invoice_level_discount": invoice_discount,
            "prepaid_credits_applied": credit,
            "commitment_info": line.commitment_info,
            "currency": "usd",
        }
        item = items.get(line.line_item_id)
        if item is None:
            assert isinstance(
                line.commitment_info, CommitmentInfo
            ) and line.commitment_info.computed_true_up_amount == D(80)
            expected = InvoiceLineDraft(
                line_item_id="subscription_commitment",
                kind="true_up",
                display_name="Pro True Up",
                price_id="",
                price_type="FIXED",
                invoice_cadence="ARREAR",
                meter_id=None,
                quantity=D(0),
                adjusted_entitlement_quantity=None,
                charge=None,
                **adjustments,
            )
        else:
            charge = line.charge
            assert isinstance(charge, LineCharge) and charge.price_result is not None
            assert (line.commitment_info is not None) == (item is API)  # the commitment covers usage
            expected = InvoiceLineDraft(
                line_item_id=item.line_item_id,
                kind="charge",
                display_name=item.display_name,
                price_id=item.price_id,
                price_type=item.price_type,
                invoice_cadence=item.invoice_cadence,
                meter_id=item.meter_id,
                quantity=charge.price_result.quantity,
                adjusted_entitlement_quantity=None,
                charge=charge,
                **adjustments,
            )
        assert line == expected
