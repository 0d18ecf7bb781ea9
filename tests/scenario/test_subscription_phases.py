"""Subscription phases end to end, through the library, on every store: a launch price for three
months then the list price, a usage line billed only inside its phase, a boundary in the middle
of a period, phases added and deleted later, phase coupons, and the phase notifications.

Money is exact (``Decimal``) with the arithmetic beside it; a ``TestClock`` moves time.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from billingkit.domain.invoices import BillingReason, Invoice
from tests.scenario.test_subscription_billing import World, at, fee, make_world

__all__ = ["make_world"]

D = Decimal


def iso(year: int, month: int, day: int = 1) -> str:
    return at(year, month, day).isoformat()


def plan_and_price(w: World, amount: str = "30") -> tuple[str, str]:
    plan = w.s.plans.create(name="Pro", prices=[fee(amount)])
    return plan.id, w.s.plans.get(plan.id).prices[0].id


def subscribe(w: World, plan_id: str, **fields: Any) -> Any:
    return w.s.subscriptions.create(
        customer_id=w.customer.id, plan_id=plan_id, currency="usd", billing_period="MONTHLY", **fields
    )


def billed(invoices: list[Invoice]) -> list[tuple[Any, Any, Decimal]]:
    return [(inv.period_start, inv.period_end, inv.total) for inv in invoices]


def test_three_months_at_a_launch_price_then_the_list_price(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    plan_id, price_id = plan_and_price(w, "30")
    sub = subscribe(
        w,
        plan_id,
        phases=[
            {
                "start_date": iso(2024, 1),
                "end_date": iso(2024, 4),
                "override_line_items": [{"price_id": price_id, "amount": "10"}],
            },
            {"start_date": iso(2024, 4)},
        ],
    )
    for month in (2, 3, 4, 5):
        w.run(at(2024, month, 1))
    invoices = w.invoices(sub)
    # opening (Jan advance) 10.00; 1 Feb: Feb advance 10.00; 1 Mar: 10.00; 1 Apr: the list price
    # opens phase 2, 30.00; 1 May: 30.00
    assert [inv.total for inv in invoices] == [D("10.00"), D("10.00"), D("10.00"), D("30.00"), D("30.00")]
    assert [inv.billing_reason for inv in invoices] == [BillingReason.SUBSCRIPTION_CREATE] + [
        BillingReason.SUBSCRIPTION_CYCLE
    ] * 4
    month_four = invoices[3]
    assert (month_four.period_start, month_four.period_end) == (at(2024, 3, 1), at(2024, 4, 1))
    (line,) = month_four.line_items
    # the advance charge of [1 Apr, 1 May), from phase 2's copy of the plan line at the list price
    assert (line.period_start, line.period_end, line.amount, line.price_id) == (
        at(2024, 4, 1),
        at(2024, 5, 1),
        D("30.00"),
        price_id,
    )
    created = w.events("subscription.phase.created")
    assert [e.payload["phase"]["start_date"] for e in created] == [
        "2024-01-01T00:00:00Z",
        "2024-04-01T00:00:00Z",
    ]
    assert [e.payload["phase"]["end_date"] for e in created] == ["2024-04-01T00:00:00Z", None]
    assert {e.payload["phase"]["subscription_id"] for e in created} == {sub.id}
    # the boundary needs no run of its own: nothing but the invoices happened there
    assert w.events("subscription.updated") == []


def test_a_phase_usage_line_is_billed_only_inside_its_window(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    plan_id, _ = plan_and_price(w, "30")
    calls = {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": "0.10",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": w.meter_id,
        "display_name": "Calls",
    }
    sub = subscribe(
        w,
        plan_id,
        phases=[
            {"start_date": iso(2024, 1), "end_date": iso(2024, 2, 15), "line_items": [{"price": calls}]},
            {"start_date": iso(2024, 2, 15)},
        ],
    )
    w.usage(10, at(2024, 1, 10))  # January: inside phase 1
    w.usage(20, at(2024, 2, 14, 23), prefix="before")  # 14 Feb 23:00-23:19: inside phase 1
    w.usage(7, at(2024, 2, 15), prefix="after")  # from 15 Feb: phase 2 has no usage line
    w.usage(5, at(2024, 3, 3), prefix="march")
    for month in (2, 3, 4):
        w.run(at(2024, month, 1))
    invoices = w.invoices(sub)
    # opening 30.00; 1 Feb: 10 calls x 0.10 = 1.00 + 30.00 = 31.00; 1 Mar: 20 calls (before
    # 15 Feb) x 0.10 = 2.00 + 30.00 = 32.00; 1 Apr: no usage line any more, 30.00
    assert [inv.total for inv in invoices] == [D("30.00"), D("31.00"), D("32.00"), D("30.00")]
    usage = next(line for line in invoices[2].line_items if line.display_name == "Calls")
    assert (usage.quantity, usage.period_start, usage.period_end) == (D(20), at(2024, 2, 1), at(2024, 2, 15))


def test_a_boundary_inside_a_period_bills_each_phase_for_its_part(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    plan_id, price_id = plan_and_price(w, "30")
    sub = subscribe(
        w,
        plan_id,
        phases=[
            {
                "start_date": iso(2024, 1),
                "end_date": iso(2024, 1, 16),
                "override_line_items": [{"price_id": price_id, "amount": "10"}],
            },
            {"start_date": iso(2024, 1, 16)},
        ],
    )
    w.run(at(2024, 2, 1))
    opening, february = w.invoices(sub)
    # A FIXED line covering part of the invoice period is charged for the part it covers:
    # 10.00 x 15/31 days = 4.8387 -> 4.84; 30.00 x 16/31 days = 15.4839 -> 15.48; total 20.32
    amounts = sorted(line.amount for line in opening.line_items)
    assert amounts == [D("4.84"), D("15.48")] and opening.total == D("20.32")
    assert february.total == D("30.00")


def test_a_phase_added_later_then_another_deleted(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    plan_id, price_id = plan_and_price(w, "30")
    sub = subscribe(w, plan_id)
    w.run(at(2024, 2, 10))  # January billed, February's advance too
    promo = w.s.subscriptions.add_phase(
        sub.id,
        start_date=iso(2024, 3),
        end_date=iso(2024, 5),
        override_line_items=[{"price_id": price_id, "amount": "12"}],
        metadata={"campaign": "spring"},
    )
    later = w.s.subscriptions.add_phase(
        sub.id, start_date=iso(2024, 7), override_line_items=[{"price_id": price_id, "amount": "1"}]
    )
    w.run(at(2024, 3, 1))
    w.s.subscriptions.delete_phase(later.id)  # not started: the list price stays from 1 May on
    for month in (4, 5, 6, 7, 8):
        w.run(at(2024, month, 1))
    # Jan 30.00, Feb 30.00, Mar 12.00, Apr 12.00, then the list price again: May-Aug 30.00
    assert [inv.total for inv in w.invoices(sub)] == [D("30.00"), D("30.00")] + [D("12.00")] * 2 + [
        D("30.00")
    ] * 4
    assert [e.entity_id for e in w.events("subscription.phase.created")] == [promo.id, later.id]
    assert [e.entity_id for e in w.events("subscription.phase.deleted")] == [later.id]
    assert len(w.events("subscription.updated")) == 3  # two phases added, one deleted


def test_a_phase_coupon_on_the_phase_line_discounts_only_the_phase(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    plan_id, price_id = plan_and_price(w, "30")
    w.s.coupons.create(
        name="Half", coupon_code="HALF", type="percentage", cadence="forever", percentage_off="50"
    )
    sub = subscribe(
        w,
        plan_id,
        phases=[
            {
                "start_date": iso(2024, 1),
                "end_date": iso(2024, 3),
                "subscription_coupons": [{"coupon_code": "HALF", "price_id": price_id}],
            },
            {"start_date": iso(2024, 3)},
        ],
    )
    for month in (2, 3, 4):
        w.run(at(2024, month, 1))
    # Jan 30.00 - 50% = 15.00, Feb 15.00; from March phase 2's line, no coupon: 30.00
    assert [inv.total for inv in w.invoices(sub)] == [D("15.00"), D("15.00"), D("30.00"), D("30.00")]


def test_moving_a_phase_end_changes_what_the_next_invoices_bill(make_world: Any) -> None:
    w: World = make_world(at(2024, 1, 1))
    plan_id, price_id = plan_and_price(w, "30")
    sub = subscribe(
        w,
        plan_id,
        phases=[
            {
                "start_date": iso(2024, 1),
                "end_date": iso(2024, 3),
                "override_line_items": [{"price_id": price_id, "amount": "10"}],
            }
        ],
    )
    (phase,) = w.s.subscriptions.phases(sub.id)
    w.run(at(2024, 2, 1))
    w.s.subscriptions.update_phase(phase.id, end_date=iso(2024, 5))  # two more launch months
    for month in (3, 4, 5, 6):
        w.run(at(2024, month, 1))
    # Jan-Apr 10.00, then the plan line (after the phase) at 30.00
    assert [inv.total for inv in w.invoices(sub)] == [D("10.00")] * 4 + [D("30.00")] * 2
    (updated,) = w.events("subscription.phase.updated")
    assert updated.payload["phase"]["end_date"] == "2024-05-01T00:00:00Z"
