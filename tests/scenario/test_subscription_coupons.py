"""Coupons on subscriptions end to end, through the library, on every store: attach on create and
on modify, the checks, each cadence on real invoices, and the deprecated request forms.

Money is exact (``Decimal``) with the arithmetic beside it; a ``TestClock`` moves time.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit.domain.invoices import Invoice
from billingkit.errors import ValidationError
from tests.scenario.test_subscription_billing import World, at, fee, make_world, subscribe

__all__ = ["make_world"]

D = Decimal


def totals(invoices: list[Invoice]) -> list[Decimal]:
    return [inv.total for inv in invoices]


def percent(w: World, pct: str, cadence: str, **extra: Any) -> str:
    coupon = w.s.coupons.create(
        name=f"{pct}% {cadence}", type="percentage", cadence=cadence, percentage_off=pct, **extra
    )
    return coupon.coupon_code or coupon.id


def coded(w: World, code: str, **fields: Any) -> str:
    fields.setdefault("name", code)
    w.s.coupons.create(coupon_code=code, **fields)
    return code


def stored_associations(w: World) -> list[Any]:
    return [view.association for view in w.s.coupons.associations(limit=100).items]


def test_repeated_20_percent_for_two_periods(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(
        w, "TWENTY", type="percentage", cadence="repeated", percentage_off="20", duration_in_periods=2
    )
    sub = subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": code}])
    w.run(at(2024, 2, 1))
    w.run(at(2024, 3, 1))
    # Jan: 100.00 - 20% (20.00) = 80.00; Feb: 100.00 - 20.00 = 80.00; Mar: two periods used -> 100.00
    assert totals(w.invoices(sub)) == [D("80.00"), D("80.00"), D("100.00")]
    first = w.invoices(sub)[0]
    assert first.total_discount == D("20.00")
    (application,) = first.coupon_applications
    assert application.discounted_amount == D("20.00")
    assert (application.original_price, application.final_price) == (D("100.00"), D("80.00"))
    (association,) = stored_associations(w)
    # end = start + 2 monthly periods of the subscription's schedule
    assert (association.start_date, association.end_date) == (at(2024, 1, 1), at(2024, 3, 1))
    assert association.applications == 2


def test_catch_up_invoices_in_one_run_count_each_application(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(
        w, "TWICE", type="percentage", cadence="repeated", percentage_off="20", duration_in_periods=2
    )
    sub = subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": code}])
    w.run(at(2024, 4, 1, 12))  # three period ends in one run: Feb, Mar, Apr
    # opening 80.00 (1st application), Feb 80.00 (2nd), Mar 100.00, Apr 100.00
    assert totals(w.invoices(sub)) == [D("80.00"), D("80.00"), D("100.00"), D("100.00")]
    assert stored_associations(w)[0].applications == 2


def test_fixed_coupon_on_a_line_is_capped_at_that_line(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "THIRTY", type="fixed", cadence="forever", amount_off="30", currency="usd")
    plan = w.s.plans.create(
        name="Two lines",
        prices=[fee("20", display_name="Seat"), fee("50", display_name="Support")],
    )
    seat = next(p for p in w.s.plans.get(plan.id).prices if p.display_name == "Seat")
    sub = w.s.subscriptions.create(
        customer_id=w.customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        subscription_coupons=[{"coupon_code": code, "price_id": seat.id}],
    )
    (invoice,) = w.invoices(sub)
    lines = {line.display_name: line for line in invoice.line_items}
    # Seat 20.00: 30.00 off is capped at 20.00 -> 0.00; Support 50.00 untouched
    assert lines["Seat"].line_item_discount == D("20.00")
    assert lines["Support"].line_item_discount == D("0")
    assert invoice.total_discount == D("20.00")
    assert invoice.total == D("50.00")  # 20.00 + 50.00 - 20.00
    (application,) = invoice.coupon_applications
    assert application.invoice_line_item_id == lines["Seat"].id
    (association,) = stored_associations(w)
    assert association.subscription_line_item_id == next(
        li.id for li in sub.line_items if li.price_id == seat.id
    )


def test_once_discounts_exactly_one_invoice(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "ONCE", type="fixed", cadence="once", amount_off="15", currency="usd")
    sub = subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": code}])
    w.run(at(2024, 2, 1))
    w.run(at(2024, 3, 1))
    # Jan 100.00 - 15.00 = 85.00, then 100.00 (D3: the reference would let a second one through)
    assert totals(w.invoices(sub)) == [D("85.00"), D("100.00"), D("100.00")]
    assert stored_associations(w)[0].applications == 1


def test_forever_discounts_every_invoice(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "TEN", type="percentage", cadence="forever", percentage_off="10")
    sub = subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": code}])
    w.run(at(2024, 4, 1))
    # every invoice: 100.00 - 10% (10.00) = 90.00
    assert totals(w.invoices(sub)) == [D("90.00")] * 4


def test_zero_duration_association_never_discounts(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "ZERO", type="percentage", cadence="forever", percentage_off="50")
    entry = {"coupon_code": code, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-01T00:00:00Z"}
    sub = subscribe(w, [fee("100")], subscription_coupons=[entry])
    w.run(at(2024, 2, 1))
    assert totals(w.invoices(sub)) == [D("100.00"), D("100.00")]
    (association,) = stored_associations(w)
    assert association.start_date == association.end_date and association.applications == 0


def test_deprecated_forms_give_the_same_associations(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    whole = w.s.coupons.create(
        name="Whole", coupon_code="WHOLE", type="percentage", cadence="forever", percentage_off="10"
    )
    line = w.s.coupons.create(
        name="Line", coupon_code="LINE", type="fixed", cadence="forever", amount_off="5", currency="usd"
    )
    plan = w.s.plans.create(name="Pro", prices=[fee("100")])
    price_id = w.s.plans.get(plan.id).prices[0].id
    create: dict[str, Any] = dict(
        customer_id=w.customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    new = w.s.subscriptions.create(
        **create,
        subscription_coupons=[{"coupon_code": "WHOLE"}, {"coupon_code": "LINE", "price_id": price_id}],
    )
    old = w.s.subscriptions.create(**create, coupons=[whole.id], line_item_coupons={price_id: [line.id]})

    def shape(sub_id: str) -> list[tuple[Any, ...]]:
        found = [view.association for view in w.s.coupons.associations(subscription_ids=[sub_id]).items]
        return sorted(
            (a.coupon_id, a.subscription_line_item_id is not None, a.start_date, a.end_date) for a in found
        )

    assert (
        shape(new.id)
        == shape(old.id)
        == sorted([(whole.id, False, at(2024, 1, 1), None), (line.id, True, at(2024, 1, 1), None)])
    )
    # 100.00 - 5.00 (line) = 95.00, then 10% of 95.00 = 9.50 -> 85.50, on both
    assert totals(w.invoices(new)) == totals(w.invoices(old)) == [D("85.50")]


@pytest.mark.parametrize(
    ("coupon", "entry", "field"),
    [
        ({}, {"coupon_code": "NOPE"}, "subscription_coupons[1].coupon_code"),
        ({"redeem_after": "2024-02-01T00:00:00Z"}, {}, "subscription_coupons[1].coupon_code"),
        ({"redeem_before": "2023-12-31T00:00:00Z"}, {}, "subscription_coupons[1].coupon_code"),
        ({"type": "fixed", "amount_off": "5", "currency": "eur"}, {}, "subscription_coupons[1].coupon_code"),
        ({}, {"price_id": "price_unknown"}, "subscription_coupons[1].price_id"),
        (
            {},
            {"start_date": "2024-02-01T00:00:00Z", "end_date": "2024-01-15T00:00:00Z"},
            "subscription_coupons[1].end_date",
        ),
    ],
)
def test_a_bad_coupon_is_a_400_naming_the_field_and_writes_nothing(
    make_world: Any, coupon: dict[str, Any], entry: dict[str, Any], field: str
) -> None:
    w: World = make_world(at(2024, 1, 1))
    good = coded(w, "GOOD", type="percentage", cadence="forever", percentage_off="10")
    fields = {"type": "percentage", "cadence": "forever", "percentage_off": "10", **coupon}
    if fields["type"] == "fixed":
        del fields["percentage_off"]
    coded(w, "BAD", **fields)
    plan = w.s.plans.create(name="Pro", prices=[fee("100")])
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.create(
            customer_id=w.customer.id,
            plan_id=plan.id,
            currency="usd",
            billing_period="MONTHLY",
            subscription_coupons=[{"coupon_code": good}, {"coupon_code": "BAD", **entry}],
        )
    assert caught.value.field == field
    assert w.s.subscriptions.list().items == []
    assert stored_associations(w) == []
    assert w.s.invoices.list().items == []
    # the first coupon's redemption was given back with everything else
    assert [c.total_redemptions for c in w.s.coupons.list().items] == [0, 0]


def test_redemption_limit_and_cadence_on_modify(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "ONE", type="percentage", cadence="once", percentage_off="10", max_redemptions=1)
    first = subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": code}])
    assert w.s.coupons.get_by_code(code).total_redemptions == 1
    with pytest.raises(ValidationError) as caught:
        subscribe(w, [fee("100")], coupons=[w.s.coupons.get_by_code(code).id])
    assert caught.value.field == "coupons[0]"
    assert w.s.coupons.get_by_code(code).total_redemptions == 1
    # Attaching the once coupon again to the subscription that used it: the limit refuses first.
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.modify(
            first.id, type="coupon", coupon_params={"action": "add", "coupon_code": code}
        )
    assert caught.value.field == "coupon_params.coupon_code"
    assert len(stored_associations(w)) == 1


def test_once_already_used_is_refused_on_modify(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "ONCE", type="percentage", cadence="once", percentage_off="10")
    sub = subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": code}])
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.modify(sub.id, type="coupon", coupon_params={"action": "add", "coupon_code": code})
    assert caught.value.field == "coupon_params.coupon_code"
    assert w.s.coupons.get_by_code(code).total_redemptions == 1  # the refused one was given back


def test_modify_adds_and_removes_a_coupon(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "HALF", type="percentage", cadence="forever", percentage_off="50")
    sub = subscribe(w, [fee("100")])
    w.clock.set(at(2024, 1, 15))
    added = w.s.subscriptions.modify(
        sub.id, type="coupon", coupon_params={"action": "add", "coupon_code": code}
    )
    assert added.subscription.id == sub.id
    (association,) = stored_associations(w)
    assert association.start_date == at(2024, 1, 15)  # defaults to now
    w.run(at(2024, 2, 1))
    w.clock.set(at(2024, 2, 10))
    w.s.subscriptions.modify(
        sub.id, type="coupon", coupon_params={"action": "remove", "coupon_association_id": association.id}
    )
    assert stored_associations(w) == []  # archived: not live any more
    w.run(at(2024, 3, 1))
    # Jan 100.00 (before the coupon); Feb 100.00 - 50% = 50.00; Mar 100.00 (removed)
    assert totals(w.invoices(sub)) == [D("100.00"), D("50.00"), D("100.00")]
    assert [e.event_type for e in w.events("subscription.updated")] == ["subscription.updated"] * 2


def test_modify_refuses_other_types(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    sub = subscribe(w, [fee("100")])
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.modify(sub.id, type="tax", tax_params={})
    assert caught.value.field == "type"


def test_the_association_reads(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "TEN", type="percentage", cadence="forever", percentage_off="10")
    sub = subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": code}])
    (association,) = stored_associations(w)
    view = w.s.coupons.association(association.id)
    assert view.to_dict()["coupon"]["coupon_code"] == "TEN"
    assert "applications" not in view.to_dict()
    v2 = w.s.subscriptions.get_v2(sub.id, expand="coupon_associations").to_dict()
    assert [a["id"] for a in v2["coupon_associations"]] == [association.id]
    assert w.s.coupons.associations(coupon_ids=["other"]).items == []
    assert [v.association.id for v in w.s.coupons.associations(active_only=True).items] == [association.id]
    w.clock.set(at(2023, 12, 1))  # before it starts: not active
    assert w.s.coupons.associations(active_only=True).items == []


def test_checks_run_in_the_reference_order(make_world: Any) -> None:
    """Published -> redeem window -> currency -> redemptions: a coupon failing several reports the
    first, and a refused attachment takes no redemption."""
    w: World = make_world(at(2024, 1, 1))
    code = coded(
        w,
        "LATE",
        type="fixed",
        cadence="forever",
        amount_off="5",
        currency="eur",
        redeem_before="2023-12-31T00:00:00Z",
        max_redemptions=1,
    )
    with pytest.raises(ValidationError) as caught:
        subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": code}])
    assert "could be redeemed until" in caught.value.message  # not the currency, not the limit
    assert w.s.coupons.get_by_code(code).total_redemptions == 0
    euro = coded(
        w, "EURO", type="fixed", cadence="forever", amount_off="5", currency="eur", max_redemptions=1
    )
    with pytest.raises(ValidationError) as caught:
        subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": euro}])
    assert "is in eur" in caught.value.message


def test_a_draft_activated_later_keeps_its_repeated_coupon(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    code = coded(w, "TWO", type="percentage", cadence="repeated", percentage_off="20", duration_in_periods=2)
    draft = subscribe(
        w, [fee("100")], subscription_status="draft", subscription_coupons=[{"coupon_code": code}]
    )
    w.clock.set(at(2024, 4, 1))
    w.s.subscriptions.activate(draft.id, start_date=at(2024, 4, 1))
    (association,) = stored_associations(w)
    # moved with the start by 91 days: [1 Jan, 1 Mar) became [1 Apr, 31 May)
    assert (association.start_date, association.end_date) == (at(2024, 4, 1), at(2024, 5, 31))
    w.run(at(2024, 6, 1))
    # Apr 80.00, May 80.00 (100.00 - 20 %), Jun 100.00
    assert totals(w.invoices(draft)) == [D("80.00"), D("80.00"), D("100.00")]


def test_redemptions_counted_by_a_direct_invoice_count_for_subscriptions(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    coupon = w.s.coupons.create(
        name="Two",
        coupon_code="TWO",
        type="percentage",
        cadence="forever",
        percentage_off="10",
        max_redemptions=2,
    )
    w.s.invoices.create(
        customer_id=w.customer.id,
        currency="usd",
        line_items=[{"amount": "100.00", "quantity": "1", "display_name": "Setup"}],
        coupons=[coupon.id],
        subtotal="100.00",
        total="90.00",
        amount_due="90.00",
    )
    assert w.s.coupons.get(coupon.id).total_redemptions == 1
    subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": "TWO"}])
    assert w.s.coupons.get(coupon.id).total_redemptions == 2  # 1 (direct invoice) + 1 (attachment)
    with pytest.raises(ValidationError):
        subscribe(w, [fee("100")], subscription_coupons=[{"coupon_code": "TWO"}])
