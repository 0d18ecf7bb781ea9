"""Recompute and diff a stored invoice, on memory, SQLite and PostgreSQL.

The world is tests/billed_world.py: May's opening invoice (Base 1,234.50, 10 % once coupon, 19 %
VAT) and the period-end invoice of 1 June (June's Base plus May's 150 calls, 12.50).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from billingkit import MemoryStorage
from billingkit.domain.invoice_diff import LineChangeKind, diff_invoices
from billingkit.domain.invoices import BillingReason
from billingkit.errors import InvalidOperation, NotFound
from tests.billed_world import Billed, billed_world
from tests.scenario.test_subscription_billing import World, at, fee, make_world, subscribe
from tests.store_rows import every_row

D = Decimal
__all__ = ["make_world"]  # the scenario fixture, used here


@pytest.fixture
def w(storage: Any) -> Billed:
    return billed_world(storage)


def test_invoices_that_still_match_their_inputs_give_empty_diffs_and_nothing_is_written(w: Billed) -> None:
    before = every_row(w.billing.storage)
    for invoice in (w.opening(), w.cycle()):
        diff = w.s.invoices.recompute(invoice.id)
        assert len(diff) == 0 and not diff
        assert (diff.lines, diff.totals) == ((), ())
        assert diff.invoice_id == invoice.id and diff.stored == invoice
        assert diff.recomputed.total == invoice.total
        assert repr(diff) == f"<InvoiceDiff {invoice.id} unchanged>"
    # the once coupon still discounts the invoice it discounted: the opening invoice matches
    assert w.opening().total_discount == D("123.45")
    assert every_row(w.billing.storage) == before


def test_usage_stored_after_the_invoice_shows_the_lines_new_quantity_and_amount(w: Billed) -> None:
    w.usage(40, datetime(2026, 5, 20, tzinfo=UTC), prefix="late")
    before = every_row(w.billing.storage)
    cycle = w.cycle()

    diff = w.s.invoices.recompute(cycle.id)

    assert every_row(w.billing.storage) == before
    (change,) = diff.lines
    # 190 calls, SLAB: 100 x 0.10 + 90 x 0.05 = 14.50 (was 150: 12.50)
    assert change.kind is LineChangeKind.CHANGED
    assert change.display_name == "Calls"
    assert (change.stored_quantity, change.recomputed_quantity) == (D("150"), D("190"))
    assert (change.stored_amount, change.recomputed_amount) == (D("12.50"), D("14.50"))
    assert change.amount_difference == D("2.00")
    assert (change.period_start, change.period_end) == (
        datetime(2026, 5, 1, tzinfo=UTC),
        datetime(2026, 6, 1, tzinfo=UTC),
    )
    # subtotal 1,247.00 -> 1,249.00; VAT 19 %: 236.93 -> 237.31; total 1,483.93 -> 1,486.31
    assert [(t.field, t.stored, t.recomputed) for t in diff.totals] == [
        ("subtotal", D("1247.00"), D("1249.00")),
        ("total_tax", D("236.93"), D("237.31")),
        ("total", D("1483.93"), D("1486.31")),
    ]
    assert len(diff) == 4
    assert repr(diff) == f"<InvoiceDiff {cycle.id} 1 line changed: total 1,483.93 -> 1,486.31>"
    # shown in the customer's locale (de_DE), stored beside recomputed
    out = str(diff)
    assert out.splitlines()[0] == f"Invoice {cycle.id} recomputed: 1 line differs"
    assert re.search(r"^  changed\s+Calls\s+.*\s150\s+190\s+12,50\xa0€\s+14,50\xa0€\s+2,00\xa0€$", out, re.M)
    assert re.search(r"^  total\s+1\.483,93\xa0€\s+1\.486,31\xa0€\s+2,38\xa0€$", out, re.M)
    assert "14,50\xa0€" in diff._repr_html_()
    # the opening invoice bills no usage: unchanged
    assert not w.s.invoices.recompute(w.opening().id)


def test_a_cancellations_invoice_is_recomputed_up_to_the_cancellation(w: Billed) -> None:
    w.usage(30, datetime(2026, 6, 3, tzinfo=UTC), prefix="june")
    w.clock.set(datetime(2026, 6, 11, tzinfo=UTC))
    w.s.subscriptions.cancel(
        w.sub.id,
        cancellation_type="immediate",
        cancel_immediately_inovice_policy="generate_invoice",
    )
    cancel = next(
        inv
        for inv in w.invoices()
        if inv.billing_reason is BillingReason.SUBSCRIPTION_CYCLE and inv.period_start == w.cycle().period_end
    )
    assert cancel.period_end == datetime(2026, 6, 11, tzinfo=UTC)
    calls = next(line for line in cancel.line_items if line.display_name == "Calls")
    assert (calls.quantity, calls.amount) == (D("30"), D("3.00"))
    assert not w.s.invoices.recompute(cancel.id)
    # late June usage before the cancellation shows; usage after it does not
    w.usage(5, datetime(2026, 6, 10, tzinfo=UTC), prefix="late")
    w.usage(7, datetime(2026, 6, 12, tzinfo=UTC), prefix="after")
    (change,) = w.s.invoices.recompute(cancel.id).lines
    assert (change.stored_quantity, change.recomputed_quantity) == (D("30"), D("35"))


def test_one_off_invoices_are_refused_and_unknown_ones_not_found(w: Billed) -> None:
    manual = w.s.invoices.create(
        customer_id=w.customer.id,
        currency="eur",
        subtotal="10",
        total="11.90",  # the customer's 19 % VAT applies
        amount_due="11.90",
        line_items=[{"amount": "10", "quantity": "1", "display_name": "Setup"}],
    )
    with pytest.raises(InvalidOperation, match="ONE_OFF invoice: only subscription invoices"):
        w.s.invoices.recompute(manual.id)
    manual_of_sub = w.s.invoices.create(
        customer_id=w.customer.id,
        subscription_id=w.sub.id,
        invoice_type="SUBSCRIPTION",
        currency="eur",
        subtotal="10",
        total="11.90",
        amount_due="11.90",
        line_items=[{"amount": "10", "quantity": "1", "display_name": "Extra"}],
    )
    assert manual_of_sub.billing_reason is BillingReason.MANUAL
    with pytest.raises(InvalidOperation, match=r"\(MANUAL\) cannot be recomputed"):
        w.s.invoices.recompute(manual_of_sub.id)
    with pytest.raises(NotFound):
        w.s.invoices.recompute("inv_missing")


def test_lines_pair_by_what_they_bill_added_and_removed_lines_show() -> None:
    w = billed_world(MemoryStorage())
    stored = w.cycle()
    base, calls = stored.line_items
    # recomputed without the Calls line and with a line of another period: removed and added
    moved = base.model_copy(update={"id": "inv_line_x", "period_start": datetime(2026, 7, 1, tzinfo=UTC)})
    other = stored.model_copy(update={"line_items": (base.model_copy(update={"id": "inv_line_y"}), moved)})
    diff = diff_invoices(stored, other)
    assert [(c.kind, c.display_name, c.stored_amount, c.recomputed_amount) for c in diff.lines] == [
        (LineChangeKind.REMOVED, "Calls", D("12.50"), None),
        (LineChangeKind.ADDED, "Base", None, D("1234.50")),
    ]
    assert diff.lines[0].amount_difference == D("-12.50")
    # a renamed line with the same money is no difference
    renamed = stored.model_copy(
        update={"line_items": (base.model_copy(update={"display_name": "Basis"}), calls)}
    )
    assert not diff_invoices(stored, renamed)


def test_a_repeated_coupon_is_counted_as_when_each_invoice_was_computed(make_world: Any) -> None:
    world: World = make_world(at(2026, 1, 1))
    world.s.coupons.create(
        name="Twenty",
        coupon_code="TWENTY",
        type="percentage",
        cadence="repeated",
        percentage_off="20",
        duration_in_periods=2,
    )
    sub = subscribe(world, [fee("100")], subscription_coupons=[{"coupon_code": "TWENTY"}])
    world.run(at(2026, 4, 1, 1))
    invoices = world.invoices(sub)
    # Jan and Feb: 100.00 - 20 % = 80.00; Mar and Apr: the coupon has run out
    assert [i.total for i in invoices] == [D("80.00"), D("80.00"), D("100.00"), D("100.00")]
    before = every_row(world.billing.storage)
    assert [len(world.s.invoices.recompute(i.id)) for i in invoices] == [0, 0, 0, 0]
    assert every_row(world.billing.storage) == before


def test_a_diff_of_totals_only_shows_no_lines_table() -> None:
    stored = billed_world(MemoryStorage()).cycle()
    taxed = stored.model_copy(update={"total_tax": D("0"), "total": D("1247.00")})
    diff = diff_invoices(stored, taxed, locale="en_US")
    assert diff.lines == () and len(diff) == 2
    out = str(diff)
    assert out.splitlines()[0] == f"Invoice {stored.id} recomputed: totals differ"
    assert "Lines" not in out
    assert re.search(r"^  total_tax\s+€236\.93\s+€0\.00\s+-€236\.93$", out, re.M)
    assert repr(diff) == f"<InvoiceDiff {stored.id} 0 lines changed: total 1,483.93 -> 1,247.00>"
