"""Modify ``quantity_change`` and ``trial_end`` and the modify preview, through the public API on
every store, with a test clock and exact amounts (June 2026 has 30 days)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit.domain.invoices import BillingReason, Invoice, InvoiceType
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import ListQuery
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.services.subscription_lines import find_line_item
from tests.cancellations import FEE, World, at, calls, june, make_world
from tests.store_rows import every_row

D = Decimal
SEAT = {**FEE, "amount": "10.00", "display_name": "Seat"}


def _seats(w: World, quantity: int) -> Subscription:
    """``quantity`` seats at 10.00 a month in advance, plus API calls in arrears, from 1 June."""
    plan = w.s.plans.create(name="Seats", prices=[SEAT, calls(w.meter_id)])
    seat = next(p for p in w.s.prices.list(plan_ids=[plan.id]).items if p.type.value == "FIXED")
    return w.s.subscriptions.create(
        customer_id=w.customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        override_line_items=[{"price_id": seat.id, "quantity": str(quantity)}],
    )


def _seat_line(sub: Subscription) -> Any:
    return next(line for line in sub.line_items if line.price_type.value == "FIXED" and line.end_date is None)


def _quantity(line_id: str, quantity: str, **more: Any) -> dict[str, Any]:
    return {
        "type": "quantity_change",
        "quantity_change_params": {"line_items": [{"id": line_id, "quantity": quantity, **more}]},
    }


def _updates(w: World, sub: Subscription) -> list[Invoice]:
    return [i for i in w.invoices(sub) if i.billing_reason is BillingReason.SUBSCRIPTION_UPDATE]


def _lines(invoice: Invoice) -> list[Decimal]:
    return [line.amount for line in invoice.line_items]


def test_five_to_eight_seats_a_third_into_the_month(storage: Any) -> None:
    w = make_world(storage)
    sub = _seats(w, 5)
    assert [i.total for i in w.invoices(sub)] == [D("50.00")]  # 5 x 10.00 at opening
    old = _seat_line(sub)
    w.clock.set(june(11))  # 20 of 30 days left
    delivered: list[NotificationEvent] = []
    w.billing.subscribe("*", delivered.append)
    before = every_row(storage)
    preview = w.s.subscriptions.preview_modify(sub.id, **_quantity(old.id, "8"))
    assert every_row(storage) == before  # the preview wrote nothing
    assert delivered == []  # and delivered nothing
    (shown,) = preview.changed.invoices if preview.changed else ()
    assert (
        shown.invoice_number is None
        and preview.to_dict()["changed_resources"]["invoices"][0]["status"] == "preview"
    )

    done = w.s.subscriptions.modify(sub.id, **_quantity(old.id, "8"))
    assert done.changed is not None
    (invoice,) = done.changed.invoices
    # charge 80.00 x 20/30 = 53.33, credit 50.00 x 20/30 = 33.33, net 20.00
    assert _lines(invoice) == [D("53.33"), D("-33.33")]
    assert (invoice.subtotal, invoice.total) == (D("20.00"), D("20.00"))
    assert (invoice.invoice_type, invoice.period_start, invoice.period_end) == (
        InvoiceType.ONE_OFF,
        june(11),
        at(7, 1),
    )
    assert (_lines(shown), shown.total) == (_lines(invoice), invoice.total)  # preview == execute
    assert done.to_dict()["changed_resources"]["invoices"][0]["status"] == "issued"
    saved = w.sub(sub)
    ended = next(line for line in saved.line_items if line.id == old.id)
    new = _seat_line(saved)
    assert (ended.end_date, ended.quantity) == (june(11), D(5))
    assert (new.start_date, new.quantity, new.price_id) == (june(11), D(8), old.price_id)
    assert [(line.id, action) for line, action in done.changed.line_items] == [
        (old.id, "ended"),
        (new.id, "created"),
    ]
    assert preview.subscription.line_items[-1].quantity == D(8)  # the preview showed it as it would be
    assert [e.event_type for e in delivered] == ["invoice.update.finalized", "subscription.updated"]
    (change,) = w.s.run(lambda uow, ctx: uow.subscription_changes.list(ListQuery()).items)
    assert (change.change_kind.value, change.invoice_id, change.effective_at) == (
        "quantity_change",
        invoice.id,
        june(11),
    )
    owner, _ = w.s.run(lambda uow, ctx: find_line_item(uow, new.id))  # the replacement is indexed
    assert owner.id == sub.id

    w.run(at(7, 1))
    renewal = w.invoices(sub)[-1]
    assert renewal.billing_reason is BillingReason.SUBSCRIPTION_CYCLE
    assert [
        (line.quantity, line.amount) for line in renewal.line_items if line.price_type.value == "FIXED"
    ] == [(D(8), D("80.00"))]  # the next period bills 8 seats


def test_eight_to_five_seats_credits_the_wallet(storage: Any) -> None:
    w = make_world(storage)
    sub = _seats(w, 8)
    w.clock.set(june(11))
    line = _seat_line(sub)
    preview = w.s.subscriptions.preview_modify(sub.id, **_quantity(line.id, "5"))
    done = w.s.subscriptions.modify(sub.id, **_quantity(line.id, "5"))
    # credit 80.00 x 20/30 = 53.33, charge 50.00 x 20/30 = 33.33: 20.00 into the wallet
    assert done.changed is not None and preview.changed is not None
    (movement,) = done.changed.wallet_transactions
    assert movement.credit_amount == D("20.00")
    assert [m.credit_amount for m in preview.changed.wallet_transactions] == [D("20.00")]
    assert [row.credit_amount for row in w.credits()] == [D("20.00")]
    assert _updates(w, sub) == [] and done.changed.invoices == ()
    wire = done.to_dict()["changed_resources"]["invoices"]
    assert [(x["action"], x["status"], x["wallet_transaction"]["credit_amount"]) for x in wire] == [
        ("wallet_credit", "issued", "20.00")
    ]


def test_the_same_request_twice_is_one_invoice(storage: Any) -> None:
    w = make_world(storage)
    sub = _seats(w, 5)
    w.clock.set(june(11))
    line = _seat_line(sub)
    first = w.s.subscriptions.modify(sub.id, **_quantity(line.id, "8"))
    w.clock.set(june(11, 1))  # a retry an hour later
    again = w.s.subscriptions.modify(sub.id, **_quantity(line.id, "8"))
    assert first.changed is not None and again.changed is not None
    assert [i.id for i in again.changed.invoices] == [i.id for i in first.changed.invoices]
    assert [i.total for i in _updates(w, sub)] == [D("20.00")]
    assert len(w.s.run(lambda uow, ctx: uow.subscription_changes.list(ListQuery()).items)) == 1
    # another request on the replaced line is refused: the line has ended
    with pytest.raises(ValidationError) as caught:
        w.s.subscriptions.modify(sub.id, **_quantity(line.id, "9"))
    assert caught.value.field == "quantity_change_params.line_items[0].id"


def test_refusals_name_the_field_and_write_nothing(storage: Any) -> None:
    w = make_world(storage)
    sub = _seats(w, 5)
    other = _seats(w, 2)
    w.clock.set(june(11))
    seat = _seat_line(sub)
    usage = next(line for line in sub.line_items if line.price_type.value == "USAGE")
    bad: list[tuple[dict[str, Any], str]] = [
        (_quantity("subs_line_none", "8"), "quantity_change_params.line_items[0].id"),
        (_quantity(_seat_line(other).id, "8"), "quantity_change_params.line_items[0].id"),
        (_quantity(usage.id, "8"), "quantity_change_params.line_items[0].id"),
        (_quantity(seat.id, "0"), "quantity_change_params.line_items[0].quantity"),
        (_quantity(seat.id, "-2"), "quantity_change_params.line_items[0].quantity"),
        (_quantity(seat.id, "5"), "quantity_change_params.line_items[0].quantity"),
        (
            _quantity(seat.id, "8", effective_date=at(7, 1).isoformat()),
            "quantity_change_params.line_items[0].effective_date",
        ),
        (
            _quantity(seat.id, "8", effective_date=at(5, 31).isoformat()),
            "quantity_change_params.line_items[0].effective_date",
        ),
        (
            {
                "type": "quantity_change",
                "quantity_change_params": {
                    "line_items": [{"id": seat.id, "quantity": "8"}, {"id": seat.id, "quantity": "9"}]
                },
            },
            "quantity_change_params.line_items[1].id",
        ),
        (
            {"type": "quantity_change", "quantity_change_params": {"line_items": []}},
            "quantity_change_params.line_items",
        ),
        ({"type": "quantity_change"}, "quantity_change_params"),
        ({"type": "trial_end"}, "trial_end_params"),
        ({"type": "tax", "tax_params": {}}, "type"),
    ]
    before = every_row(storage)
    for body, field in bad:
        for call in (w.s.subscriptions.modify, w.s.subscriptions.preview_modify):
            with pytest.raises(ValidationError) as caught:
                call(sub.id, **body)
            assert caught.value.field == field, body
    assert every_row(storage) == before
    w.s.subscriptions.cancel(other.id, cancellation_type="immediate")
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.modify(other.id, **_quantity(_seat_line(other).id, "3"))


def test_a_backdated_change_inside_the_period_is_prorated_from_its_date(storage: Any) -> None:
    w = make_world(storage)
    sub = _seats(w, 5)
    w.clock.set(june(20))
    done = w.s.subscriptions.modify(
        sub.id, **_quantity(_seat_line(sub).id, "8", effective_date=june(11).isoformat())
    )
    assert done.changed is not None
    (invoice,) = done.changed.invoices
    assert (_lines(invoice), invoice.total) == ([D("53.33"), D("-33.33")], D("20.00"))


def _trialing(w: World, **fields: Any) -> Subscription:
    sub = w.subscribe(prices=[FEE], trial_period_days=14, **fields)  # trial [1 Jun, 15 Jun)
    assert sub.subscription_status is SubscriptionStatus.TRIALING
    return sub


def test_a_trialing_quantity_change_moves_no_money(storage: Any) -> None:
    w = make_world(storage)
    sub = _trialing(w)
    w.clock.set(june(5))
    line = sub.line_items[0]
    done = w.s.subscriptions.modify(sub.id, **_quantity(line.id, "3"))
    assert done.changed is not None and done.changed.invoices == () and done.changed.wallet_transactions == ()
    w.run(june(15))
    first = w.invoices(sub)[-1]
    assert (first.billing_reason, first.total) == (
        BillingReason.SUBSCRIPTION_TRIAL_END,
        D("90.00"),
    )  # 3 x 30.00


def test_trial_end_immediate_bills_the_first_period_now(storage: Any) -> None:
    w = make_world(storage)
    sub = _trialing(w)
    w.clock.set(june(5, 12))
    before = every_row(storage)
    preview = w.s.subscriptions.preview_modify(
        sub.id, type="trial_end", trial_end_params={"action": "immediate"}
    )
    assert every_row(storage) == before
    done = w.s.subscriptions.modify(sub.id, type="trial_end", trial_end_params={"action": "immediate"})
    after = done.subscription
    assert after.subscription_status is SubscriptionStatus.ACTIVE
    assert (after.trial_end, after.current_period_start, after.current_period_end) == (
        june(5, 12),
        june(5, 12),
        at(7, 5, 12),
    )
    assert after.billing_anchor == june(5, 12)
    assert done.changed is not None and preview.changed is not None
    (invoice,) = done.changed.invoices
    assert (invoice.billing_reason, invoice.total, invoice.period_start) == (
        BillingReason.SUBSCRIPTION_TRIAL_END,
        D("30.00"),
        june(5, 12),
    )
    (shown,) = preview.changed.invoices
    assert (shown.total, shown.billing_reason, shown.invoice_number) == (
        invoice.total,
        invoice.billing_reason,
        None,
    )
    assert preview.subscription.subscription_status is SubscriptionStatus.ACTIVE
    assert [e.event_type for e in w.events("subscription.updated", sub)] == ["subscription.updated"]
    w.run(june(15))  # the old trial end: nothing more
    assert [(i.billing_reason, i.total) for i in w.invoices(sub)] == [
        (BillingReason.SUBSCRIPTION_TRIAL_END, D("30.00"))
    ]
    w.run(at(7, 5, 12))
    assert w.invoices(sub)[-1].billing_reason is BillingReason.SUBSCRIPTION_CYCLE


@pytest.mark.parametrize("new_end", [june(20), june(10)])
def test_trial_end_scheduled_date_moves_the_trial(storage: Any, new_end: Any) -> None:
    w = make_world(storage)
    sub = _trialing(w)
    w.clock.set(june(5))
    done = w.s.subscriptions.modify(
        sub.id,
        type="trial_end",
        trial_end_params={"action": "scheduled_date", "new_trial_end": new_end.isoformat()},
    )
    assert (done.subscription.trial_end, done.subscription.current_period_end) == (new_end, new_end)
    assert done.subscription.subscription_status is SubscriptionStatus.TRIALING
    count = len(w.invoices(sub))
    if new_end > june(15):
        w.run(june(15))  # the old trial end bills nothing
        assert len(w.invoices(sub)) == count
        assert w.sub(sub).subscription_status is SubscriptionStatus.TRIALING
    w.run(new_end)
    first = w.invoices(sub)[-1]
    assert (first.billing_reason, first.total, first.period_start) == (
        BillingReason.SUBSCRIPTION_TRIAL_END,
        D("30.00"),
        new_end,
    )
    assert w.sub(sub).subscription_status is SubscriptionStatus.ACTIVE


def test_trial_end_refusals(storage: Any) -> None:
    w = make_world(storage)
    sub = _trialing(w, end_date=at(7, 15).isoformat())
    active = w.subscribe(prices=[FEE])
    w.clock.set(june(5))
    field = "trial_end_params.new_trial_end"
    bad = [
        ({"action": "scheduled_date"}, field),
        ({"action": "scheduled_date", "new_trial_end": june(4).isoformat()}, field),
        ({"action": "scheduled_date", "new_trial_end": at(7, 16).isoformat()}, field),
        ({"action": "scheduled_date", "new_trial_end": june(15).isoformat()}, field),
        ({"action": "immediate", "new_trial_end": june(20).isoformat()}, field),
        ({"action": "later"}, "trial_end_params.action"),
    ]
    before = every_row(storage)
    for params, name in bad:
        with pytest.raises(ValidationError) as caught:
            w.s.subscriptions.modify(sub.id, type="trial_end", trial_end_params=params)
        assert caught.value.field == name, params
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.modify(active.id, type="trial_end", trial_end_params={"action": "immediate"})
    with pytest.raises(InvalidOperation):
        w.s.subscriptions.preview_modify(
            active.id, type="trial_end", trial_end_params={"action": "immediate"}
        )
    assert every_row(storage) == before


def test_coupon_preview_keeps_the_redemption_limit(storage: Any) -> None:
    """Spec rule 1 on the preview: an exhausted coupon is refused; an allowed preview takes no
    redemption."""
    w = make_world(storage)
    w.s.coupons.create(
        name="One",
        coupon_code="ONE",
        type="percentage",
        cadence="forever",
        percentage_off="10",
        max_redemptions=1,
    )
    first = w.subscribe(prices=[FEE])
    second = w.subscribe(prices=[FEE])
    add = {"type": "coupon", "coupon_params": {"action": "add", "coupon_code": "ONE"}}
    before = every_row(storage)
    preview = w.s.subscriptions.preview_modify(first.id, **add)
    assert preview.subscription.id == first.id and preview.changed is None
    assert every_row(storage) == before
    assert w.s.coupons.get_by_code("ONE").total_redemptions == 0
    w.s.subscriptions.modify(first.id, **add)
    assert w.s.coupons.get_by_code("ONE").total_redemptions == 1
    for call in (w.s.subscriptions.preview_modify, w.s.subscriptions.modify):
        with pytest.raises(ValidationError) as caught:
            call(second.id, **add)
        assert caught.value.field == "coupon_params.coupon_code"
    assert w.s.coupons.get_by_code("ONE").total_redemptions == 1
