"""Add-ons and line items changed mid-period settle their money like every change
(billingkit.services.line_settlements over change_settlements), on every store: a replaced
line's credit and its replacement's charge netted into one invoice or one wallet credit, a line's
unused time credited once per period, one update invoice per instant, one-time fees in full, no
coupons on a settlement, and first stubs measured like their invoice.

June 2026 has 30 days; the plan bills 30.00 a month in advance (``tests.cancellations``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from billingkit.domain.invoices import BillingReason, InvoiceType
from billingkit.domain.wallets import TransactionReason
from billingkit.errors import AlreadyExists
from tests.cancellations import FEE, START, World, at, june, make_world
from tests.store_rows import every_row

D = Decimal
JULY = at(7, 1)


def seat(amount: str = "10.00", period: str = "MONTHLY", **extra: Any) -> dict[str, Any]:
    """An inline FIXED ADVANCE price for a line item."""
    return {
        "type": "FIXED",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "billing_period": period,
        "invoice_cadence": "ADVANCE",
        **extra,
    }


@pytest.fixture
def w(storage: Any) -> World:
    return make_world(storage)


def test_a_change_that_nets_to_a_credit_is_one_wallet_credit_and_no_invoice(w: World) -> None:
    sub = w.subscribe(prices=[FEE], line_items=[{"price": seat(display_name="Seat"), "quantity": "5"}])
    line = sub.line_items[-1]
    w.clock.set(june(11))  # 20 of 30 days left: 2/3
    change = w.s.subscriptions.update_line_item(line.id, quantity="2", proration_behavior="create_prorations")
    # credit 5 x 10.00 x 2/3 = 33.33, charge 2 x 10.00 x 2/3 = 13.33: net credit 20.00.
    assert (change.invoice, change.credited) == (None, D("20.00"))
    (credit,) = w.credits()
    assert (credit.credit_amount, credit.transaction_reason, credit.idempotency_key) == (
        D("20.00"),
        TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
        f"subscription_change|line_item_end|{line.id}|{START.isoformat()}|{JULY.isoformat()}",
    )
    assert [inv.billing_reason for inv in w.invoices(sub)] == [BillingReason.SUBSCRIPTION_CREATE]
    # The old line's time was given back: ending it again earlier in the period moves nothing.
    again = w.s.subscriptions.delete_line_item(
        line.id, effective_from=june(6), proration_behavior="create_prorations"
    )
    assert (again.line_item.end_date, again.credited) == (june(6), None)
    assert [row.credit_amount for row in w.credits()] == [D("20.00")]


def test_an_upgrade_of_a_line_is_one_invoice_with_a_negative_credit_line(w: World) -> None:
    sub = w.subscribe(prices=[FEE])
    base = sub.line_items[0]
    w.clock.set(june(16))  # half of June left
    change = w.s.subscriptions.update_line_item(base.id, amount="90", proration_behavior="create_prorations")
    invoice = change.invoice
    assert invoice is not None and change.credited is None
    assert (invoice.invoice_type, invoice.billing_reason, invoice.period_start, invoice.period_end) == (
        InvoiceType.ONE_OFF,
        BillingReason.SUBSCRIPTION_UPDATE,
        june(16),
        JULY,
    )
    assert [(ln.display_name, ln.amount) for ln in invoice.line_items] == [
        ("Remaining time on Base", D("45.00")),
        ("Unused time on Base", D("-15.00")),
    ]
    assert (invoice.subtotal, invoice.total, invoice.amount_due) == (D("30.00"), D("30.00"), D("30.00"))
    assert w.wallets() == []
    # The renewal bills the new price in full, the old line not at all.
    w.run(at(7, 1, 1))
    renewal = w.invoices(sub)[-1]
    assert [(ln.subscription_line_item_id, ln.amount) for ln in renewal.line_items] == [
        (change.line_item.id, D("90.00"))
    ]


def test_two_charges_from_one_instant_the_second_is_409_and_writes_nothing(w: World, storage: Any) -> None:
    sub = w.subscribe(prices=[FEE])
    w.clock.set(june(11))
    first = w.s.subscriptions.add_line_item(sub.id, price=seat(), proration_behavior="create_prorations")
    assert first.invoice is not None and first.invoice.total == D("6.67")  # 10.00 x 20/30
    assert first.invoice.idempotency_key == f"subscription_change|line_item_proration|{first.line_item.id}"
    before = every_row(storage)
    with pytest.raises(AlreadyExists) as caught:
        w.s.subscriptions.add_line_item(sub.id, price=seat("5"), proration_behavior="create_prorations")
    assert caught.value.details == {"field": "start_date", "invoice_id": first.invoice.id}
    assert every_row(storage) == before


def test_one_time_fees_are_charged_in_full_and_coupons_stay_off_settlements(w: World) -> None:
    coupon = w.s.coupons.create(name="10 %", type="percentage", cadence="forever", percentage_off="10")
    sub = w.subscribe(prices=[FEE], coupons=[coupon.id])
    (opening,) = w.invoices(sub)
    assert opening.total == D("27.00")  # the period's invoice takes the coupon
    w.clock.set(june(21))
    setup = w.s.subscriptions.add_line_item(sub.id, price=seat("50", "ONETIME", display_name="Setup"))
    assert setup.invoice is not None
    assert [(ln.display_name, ln.amount) for ln in setup.invoice.line_items] == [("Setup", D("50.00"))]
    assert (setup.invoice.total_discount, setup.invoice.total) == (D("0"), D("50.00"))
    extra = w.s.subscriptions.add_line_item(
        sub.id,
        price=seat("30", display_name="Extra"),
        start_date=june(22),
        proration_behavior="create_prorations",
    )
    assert extra.invoice is not None and extra.invoice.total == D("9.00")  # 30.00 x 9/30, no discount


def test_a_first_stub_is_measured_against_its_full_period_as_its_invoice_was(w: World) -> None:
    """Calendar billing from 16 June with create_prorations: the stub [16 Jun, 1 Jul) paid 30.00
    x 15/30 = 15.00. A change on 21 June (10 days left) moves 30.00 x 10/30 = 10.00, not 30.00 x
    10/15 = 20.00 (which the 15.00 paid would cap)."""
    w.clock.set(june(16))
    sub = w.subscribe(prices=[FEE], billing_cycle="calendar", proration_behavior="create_prorations")
    (opening,) = w.invoices(sub)
    assert (sub.current_period_start, sub.current_period_end, opening.total) == (june(16), JULY, D("15.00"))
    w.clock.set(june(21))
    added = w.s.subscriptions.add_line_item(sub.id, price=seat("30"), proration_behavior="create_prorations")
    assert added.invoice is not None and added.invoice.total == D("10.00")
    deleted = w.s.subscriptions.delete_line_item(sub.line_items[0].id, proration_behavior="create_prorations")
    assert deleted.credited == D("10.00")
    addon = w.s.addons.create(name="Boost", lookup_key="boost", prices=[{**FEE, "display_name": "Boost"}])
    w.clock.set(june(22))
    boost = w.s.subscriptions.add_addon(subscription_id=sub.id, addon_id=addon.id, cadence="onetime")
    # A onetime add-on's fee covers the whole stub: prorated like the plan's fee was, 15.00.
    assert boost.invoice is not None
    assert [(ln.display_name, ln.amount) for ln in boost.invoice.line_items] == [("Boost", D("15.00"))]
