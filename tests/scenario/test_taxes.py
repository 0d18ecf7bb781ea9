"""Taxes on subscription invoices end to end, through the library, on every store.

A ``TestClock`` moves time; amounts are exact with the arithmetic next to them. The plan is a
200.00 monthly ADVANCE fee, so each opening or cycle invoice has a subtotal of 200.00.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from billingkit import Scoped, ValidationError
from billingkit.domain.invoices import Invoice
from billingkit.domain.subscriptions import Subscription
from tests.scenario.test_subscription_billing import World, at, fee, make_world, subscribe

__all__ = ["make_world"]

D = Decimal
T0 = at(2026, 3, 1)


def plan_fee() -> list[dict[str, Any]]:
    return [fee("200")]


def rate(s: Scoped, code: str, percent: str | None = None, *, fixed: str | None = None) -> None:
    if fixed is None:
        s.tax_rates.create(name=code, code=code, percentage_value=percent)
    else:
        s.tax_rates.create(name=code, code=code, tax_rate_type="fixed", fixed_value=fixed)


def opening(w: World, sub: Subscription) -> Invoice:
    (invoice,) = w.invoices(sub)
    return invoice


def taxed_by(invoice: Invoice) -> list[tuple[str, str]]:
    """(rate code, tax amount) of each tax record, in order."""
    return [(tax.tax_rate.code if tax.tax_rate else "", str(tax.tax_amount)) for tax in invoice.taxes]


@pytest.fixture
def w(make_world: Callable[[datetime], World]) -> World:
    return make_world(T0)


def test_vat_20_percent_on_200_is_40_with_its_record(w: World) -> None:
    rate(w.s, "VAT20", "20")
    association = w.s.tax_associations.create(tax_rate_code="VAT20", external_customer_id="c1")
    sub = subscribe(w, plan_fee())
    invoice = opening(w, sub)
    # 200.00 x 20 / 100 = 40.00; total 200.00 + 40.00 = 240.00
    assert (invoice.subtotal, invoice.total_discount, invoice.total_tax) == (D("200.00"), D("0"), D("40.00"))
    assert invoice.total == invoice.amount_due == D("240.00")
    (record,) = invoice.taxes
    assert record.tax_rate_id == association.tax_rate_id
    assert record.tax_association_id == association.id
    assert (record.entity_type, record.entity_id) == ("invoice", invoice.id)
    assert (record.taxable_amount, record.tax_amount, record.currency) == (D("200.00"), D("40.00"), "usd")
    assert record.tax_rate is not None
    assert (record.tax_rate.code, record.tax_rate.percentage_value) == ("VAT20", D(20))
    # the next period is taxed the same way by the billing run
    w.run(at(2026, 4, 1))
    second = w.invoices(sub)[1]
    assert (second.total_tax, second.total) == (D("40.00"), D("240.00"))


def test_precedence_subscription_then_customer_then_tenant(w: World) -> None:
    rate(w.s, "TENANT", "20")
    rate(w.s, "CUST", "10")
    rate(w.s, "SUB", "5")
    w.s.tax_associations.create(tax_rate_code="TENANT", entity_type="tenant")
    w.s.tax_associations.create(tax_rate_code="CUST", entity_type="customer", entity_id=w.customer.id)
    own = subscribe(w, plan_fee(), tax_rate_overrides=[{"tax_rate_code": "SUB", "currency": "usd"}])
    of_customer = subscribe(w, plan_fee())
    other = w.s.customers.create(external_id="c2", name="Bo")
    plan = w.s.plans.create(name="Other", prices=plan_fee())
    of_tenant = w.s.subscriptions.create(
        customer_id=other.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    # the subscription's own 5 %: 200.00 x 5 / 100 = 10.00 (neither the customer's nor the tenant's)
    assert taxed_by(opening(w, own)) == [("SUB", "10.00")]
    # none of its own: the customer's 10 % = 20.00
    assert taxed_by(opening(w, of_customer)) == [("CUST", "20.00")]
    # neither: the tenant's 20 % = 40.00
    assert taxed_by(opening(w, of_tenant)) == [("TENANT", "40.00")]
    # the billing run picks the same rates for the whole batch
    w.run(at(2026, 4, 1))
    assert [taxed_by(w.invoices(sub)[1]) for sub in (own, of_customer)] == [
        [("SUB", "10.00")],
        [("CUST", "20.00")],
    ]
    assert taxed_by(w.invoices(of_tenant)[1]) == [("TENANT", "40.00")]


def test_rates_of_one_level_apply_by_priority_each_once_and_a_fixed_rate_adds_its_value(w: World) -> None:
    rate(w.s, "VAT20", "20")
    rate(w.s, "FEE", fixed="1.50")
    for code, priority in (("FEE", 5), ("VAT20", 1), ("VAT20", 9)):
        w.s.tax_associations.create(tax_rate_code=code, external_customer_id="c1", priority=priority)
    invoice = opening(w, subscribe(w, plan_fee()))
    # VAT first (priority 1): 200.00 x 20 / 100 = 40.00; then the fixed 1.50; VAT's second association
    # is the same rate and applies once. Total tax 41.50, total 241.50.
    assert taxed_by(invoice) == [("VAT20", "40.00"), ("FEE", "1.50")]
    assert (invoice.total_tax, invoice.total) == (D("41.50"), D("241.50"))


def test_auto_apply_false_does_not_apply_and_does_not_hide_the_next_level(w: World) -> None:
    rate(w.s, "CUST", "10")
    rate(w.s, "TENANT", "20")
    association = w.s.tax_associations.create(
        tax_rate_code="CUST", external_customer_id="c1", auto_apply=False
    )
    w.s.tax_associations.create(tax_rate_code="TENANT", entity_type="tenant")
    assert taxed_by(opening(w, subscribe(w, plan_fee()))) == [("TENANT", "40.00")]
    # switched on, the customer's rate wins from the next invoice on: 200.00 x 10 / 100 = 20.00
    w.s.tax_associations.update(association.id, auto_apply=True)
    w.run(at(2026, 4, 1))
    (sub,) = w.s.subscriptions.list().items
    assert taxed_by(w.invoices(sub)[1]) == [("CUST", "20.00")]


def test_an_association_applies_only_inside_its_window(w: World) -> None:
    rate(w.s, "LATER", "10")
    rate(w.s, "ENDED", "20")
    w.s.tax_associations.create(tax_rate_code="LATER", external_customer_id="c1", start_date=at(2026, 3, 15))
    w.s.tax_associations.create(
        tax_rate_code="ENDED", external_customer_id="c1", start_date=at(2026, 1, 1), end_date=T0
    )
    sub = subscribe(w, plan_fee())
    # on 1 March: ENDED ended at that very instant ([start, end) excludes it), LATER has not begun
    assert opening(w, sub).taxes == () and opening(w, sub).total == D("200.00")
    w.run(at(2026, 4, 1))
    # on 1 April LATER is in force: 200.00 x 10 / 100 = 20.00
    assert taxed_by(w.invoices(sub)[1]) == [("LATER", "20.00")]


def test_an_association_in_another_currency_does_not_apply(w: World) -> None:
    rate(w.s, "EUVAT", "21")
    rate(w.s, "USTAX", "8")
    w.s.tax_associations.create(tax_rate_code="EUVAT", external_customer_id="c1", currency="EUR")
    w.s.tax_associations.create(tax_rate_code="USTAX", external_customer_id="c1", currency="usd")
    # only the usd one: 200.00 x 8 / 100 = 16.00
    assert taxed_by(opening(w, subscribe(w, plan_fee()))) == [("USTAX", "16.00")]


def test_archived_association_and_inactive_rate_do_not_apply(w: World) -> None:
    rate(w.s, "GONE", "10")
    rate(w.s, "OFF", "20")
    rate(w.s, "TENANT", "5")
    gone = w.s.tax_associations.create(tax_rate_code="GONE", external_customer_id="c1")
    w.s.tax_associations.create(tax_rate_code="OFF", external_customer_id="c1")
    w.s.tax_associations.create(tax_rate_code="TENANT", entity_type="tenant")
    archived = w.s.tax_associations.delete(gone.id)
    assert archived.status.value == "archived"
    (off,) = w.s.tax_rates.list(tax_rate_codes=["OFF"]).items
    w.s.tax_rates.update(off.id, tax_rate_status="INACTIVE")
    # neither customer association applies, so the tenant's 5 %: 200.00 x 5 / 100 = 10.00
    assert taxed_by(opening(w, subscribe(w, plan_fee()))) == [("TENANT", "10.00")]


def test_tax_rate_overrides_become_the_subscriptions_associations(w: World) -> None:
    rate(w.s, "VAT20", "20")
    rate(w.s, "FEE", fixed="2")
    sub = subscribe(
        w,
        plan_fee(),
        tax_rate_overrides=[
            {"tax_rate_code": "FEE", "currency": "USD", "priority": 2, "metadata": {"why": "levy"}},
            {"tax_rate_code": "VAT20", "currency": "usd", "priority": 1},
        ],
    )
    stored = w.s.tax_associations.list(entity_type="subscription", entity_id=sub.id).items
    assert sorted((a.tax_rate.code if a.tax_rate else "", a.priority, a.currency) for a in stored) == [
        ("FEE", 2, "usd"),
        ("VAT20", 1, "usd"),
    ]
    assert all(a.start_date == sub.start_date and a.auto_apply for a in stored)
    # 200.00 x 20 / 100 = 40.00, then the fixed 2.00: 42.00 of tax, 242.00 in all
    invoice = opening(w, sub)
    assert taxed_by(invoice) == [("VAT20", "40.00"), ("FEE", "2.00")]
    assert invoice.total == D("242.00")


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ({"tax_rate_code": "NOPE", "currency": "usd"}, "tax_rate_overrides[1].tax_rate_code"),
        ({"tax_rate_code": "OFF", "currency": "usd"}, "tax_rate_overrides[1].tax_rate_code"),
        ({"tax_rate_code": "VAT20", "currency": "eur"}, "tax_rate_overrides[1].currency"),
        ({"tax_rate_code": "VAT20"}, "tax_rate_overrides[1].currency"),
        ({"tax_rate_code": "VAT20", "currency": "usd", "priority": -1}, "tax_rate_overrides[1].priority"),
    ],
)
def test_a_bad_override_is_refused_naming_it_and_nothing_is_written(
    w: World, override: dict[str, Any], field: str
) -> None:
    rate(w.s, "VAT20", "20")
    rate(w.s, "OFF", "5")
    (off,) = w.s.tax_rates.list(tax_rate_codes=["OFF"]).items
    w.s.tax_rates.update(off.id, tax_rate_status="INACTIVE")
    good = {"tax_rate_code": "VAT20", "currency": "usd"}
    with pytest.raises(ValidationError) as raised:
        subscribe(w, plan_fee(), tax_rate_overrides=[good, override])
    assert raised.value.field == field
    assert w.s.subscriptions.list().total == 0
    assert w.s.tax_associations.list().total == 0
    assert w.s.invoices.list().total == 0


def test_later_associations_tax_the_next_invoices_not_the_issued_ones(w: World) -> None:
    sub = subscribe(w, plan_fee())
    assert opening(w, sub).total_tax == D("0")
    rate(w.s, "VAT20", "20")
    w.clock.advance(timedelta(days=3))
    w.s.tax_associations.create(tax_rate_code="VAT20", entity_type="subscription", entity_id=sub.id)
    w.run(at(2026, 4, 1))
    first, second = w.invoices(sub)
    assert (first.total_tax, second.total_tax, second.total) == (D("0"), D("40.00"), D("240.00"))


def test_customer_tax_rate_overrides_tax_its_subscriptions(w: World) -> None:
    rate(w.s, "VAT20", "20")
    rate(w.s, "GST5", "5")
    # The world's customer "c1" exists already; a second one is created with its overrides.
    bea = w.s.customers.create(
        external_id="c2",
        name="Bea",
        tax_rate_overrides=[
            {"tax_rate_code": "VAT20", "currency": "usd"},
            {"tax_rate_code": "GST5", "currency": "eur", "priority": 1},
        ],
    )
    found = w.s.tax_associations.list(entity_type="customer", entity_id=bea.id).items
    assert sorted((a.tax_rate.code if a.tax_rate else "", a.currency) for a in found) == [
        ("GST5", "eur"),
        ("VAT20", "usd"),
    ]
    plan = w.s.plans.create(name="Pro", prices=plan_fee())
    sub = w.s.subscriptions.create(
        customer_id=bea.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    invoice = opening(w, sub)
    # Only the usd override applies to a usd invoice: 200.00 x 20 % = 40.00; total 240.00.
    assert taxed_by(invoice) == [("VAT20", "40.00")]
    assert invoice.amount_due == D("240.00")


def test_a_bad_customer_override_writes_nothing(w: World) -> None:
    rate(w.s, "VAT20", "20")
    with pytest.raises(ValidationError) as caught:
        w.s.customers.create(
            external_id="c2",
            name="Bea",
            tax_rate_overrides=[
                {"tax_rate_code": "VAT20", "currency": "usd"},
                {"tax_rate_code": "NOPE", "currency": "usd"},
            ],
        )
    assert caught.value.field == "tax_rate_overrides[1].tax_rate_code"
    assert w.s.customers.list(external_ids=["c2"]).total == 0
    assert w.s.tax_associations.list(entity_type="customer").total == 0
