"""Coupons and taxes together on real subscription invoices, on every store: the order of notes §4.6
(discounts first, taxes on what is left, credits never lowering the tax base), with the arithmetic
written beside each figure.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from billingkit.domain.invoices import InvoiceStatus
from tests.scenario.test_subscription_billing import World, at, fee, make_world, subscribe

__all__ = ["make_world"]

D = Decimal
T0 = at(2026, 3, 1)


@pytest.fixture
def w(make_world: Callable[[datetime], World]) -> World:
    return make_world(T0)


def test_vat_after_a_ten_percent_discount_on_200(w: World) -> None:
    w.s.coupons.create(
        name="Ten off", type="percentage", cadence="forever", percentage_off="10", coupon_code="TEN"
    )
    w.s.tax_rates.create(name="VAT", code="VAT20", percentage_value="20")
    sub = subscribe(
        w,
        [fee("200")],
        subscription_coupons=[{"coupon_code": "TEN"}],
        tax_rate_overrides=[{"tax_rate_code": "VAT20", "currency": "usd"}],
    )
    (opening,) = w.invoices(sub)
    # discount 200.00 x 10 % = 20.00; tax (200.00 - 20.00) x 20 % = 36.00; total 180.00 + 36.00 = 216.00
    assert (opening.subtotal, opening.total_discount, opening.total_tax) == (
        D("200.00"),
        D("20.00"),
        D("36.00"),
    )
    assert opening.total == opening.amount_due == opening.amount_remaining == D("216.00")
    (line,) = opening.line_items
    assert line.invoice_level_discount == D("20.00") and line.line_item_discount == D(0)
    (applied,) = opening.coupon_applications
    assert (applied.original_price, applied.discounted_amount, applied.final_price) == (
        D("200.00"),
        D("20.00"),
        D("180.00"),
    )
    (tax,) = opening.taxes
    assert (tax.taxable_amount, tax.tax_amount) == (D("180.00"), D("36.00"))
    assert tax.tax_rate is not None and tax.tax_rate.code == "VAT20"
    assert opening.invoice_status is InvoiceStatus.FINALIZED

    # A forever coupon and the override keep applying on the renewal: 216.00 again.
    w.run(sub.current_period_end + timedelta(hours=1))
    renewal = w.invoices(sub)[-1]
    assert (renewal.total_discount, renewal.total_tax, renewal.amount_due) == (
        D("20.00"),
        D("36.00"),
        D("216.00"),
    )


def test_removing_the_coupon_before_a_draft_is_recomputed_retaxes_the_full_amount(w: World) -> None:
    # Renewal drafts wait an hour before they are finalized, so the draft can be corrected.
    w.billing.settings = w.billing.settings.replace(invoice_finalization_delay=timedelta(hours=1))
    w.s.coupons.create(
        name="Ten off", type="percentage", cadence="forever", percentage_off="10", coupon_code="TEN"
    )
    w.s.tax_rates.create(name="VAT", code="VAT20", percentage_value="20")
    sub = subscribe(
        w,
        [fee("200")],
        subscription_coupons=[{"coupon_code": "TEN"}],
        tax_rate_overrides=[{"tax_rate_code": "VAT20", "currency": "usd"}],
    )
    w.run(sub.current_period_end + timedelta(minutes=1))
    draft = w.invoices(sub)[-1]
    assert draft.invoice_status is InvoiceStatus.DRAFT and draft.amount_due == D("216.00")

    (association,) = w.s.coupons.associations(subscription_ids=[sub.id]).items
    w.s.subscriptions.modify(
        sub.id, type="coupon", coupon_params={"action": "remove", "coupon_association_id": association.id}
    )
    fixed = w.s.invoices.update(draft.id, apply_discount=True)
    # No discount any more: tax 200.00 x 20 % = 40.00 on the whole fee; total 240.00 (rule 5: the
    # stale 36.00 tax line is gone, not kept beside the new one).
    assert (fixed.total_discount, fixed.total_tax, fixed.amount_due) == (D("0"), D("40.00"), D("240.00"))
    assert fixed.coupon_applications == ()
    assert [t.tax_amount for t in fixed.taxes] == [D("40.00")]
    assert fixed.version == draft.version + 1
