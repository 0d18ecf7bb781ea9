"""The main-API strategies (billingkit.testing.inputs, re-exported by strategies): every input they
draw is accepted by the library as it is, and what it bills adds up."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billingkit import InvoiceStatus, PriceType
from billingkit.domain.catalog import PlanDetail
from billingkit.domain.money import ZERO
from billingkit.services.customers import CustomerCreate
from billingkit.services.meters import MeterCreate
from billingkit.services.plans import PlanCreate
from billingkit.testing import strategies as bks
from billingkit.testing.lifecycle import all_invoices
from billingkit.testing.sandbox import sandbox_billing, sandbox_scope

EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@EXAMPLES
@given(
    catalogue=bks.catalogues(currency=None, billing_period=None, max_meters=3),
    customers=st.lists(bks.customer_requests(), min_size=1, max_size=3, unique_by=lambda c: c.external_id),
    data=st.data(),
)
def test_every_drawn_input_is_accepted_and_invoices_add_up(
    catalogue: bks.Catalogue, customers: list[CustomerCreate], data: st.DataObject
) -> None:
    billing = sandbox_billing()
    scope = sandbox_scope(billing)
    created = catalogue.create(scope)
    assert [m.event_name for m in created.meters] == [m.event_name for m in catalogue.meters]
    assert len(created.plan.prices) == len(catalogue.plan_draft.prices)
    who = [scope.customers.create(request) for request in customers]
    subs = [
        scope.subscriptions.create(data.draw(bks.subscription_requests(created.plan, customer_id=c.id)))
        for c in who
    ]
    start = billing.clock.now()
    if created.meters:
        events = data.draw(
            bks.usage_event_requests(
                created.meters,
                external_customer_ids=[c.external_id for c in who],
                start=start,
                end=start + timedelta(days=60),
            )
        )
        result = scope.events.ingest_bulk(events)
        assert len(result.accepted_ids) == len(events) and not result.duplicate_ids
        # Stored, and reported as counted by no meter: only the events drawn to miss a filter.
        misses = {e["event_id"] for e in events if e["properties"].get(bks.FILTER_KEY) == bks.FILTER_MISS}
        assert set(result.rejected) <= misses
    billing.clock.advance(days=400)
    report = billing.run_due()
    assert not report.failures
    invoices = all_invoices(scope)
    assert {i.subscription_id for i in invoices} == {s.id for s in subs}
    for invoice in invoices:
        # A period that comes to nothing is skipped, not issued.
        expected = InvoiceStatus.SKIPPED if invoice.total == 0 else InvoiceStatus.FINALIZED
        assert invoice.invoice_status is expected
        assert sum((line.amount for line in invoice.line_items), ZERO) == invoice.subtotal
        assert invoice.total == invoice.subtotal == invoice.amount_due  # no discounts, taxes or credits
        assert all(line.amount >= 0 for line in invoice.line_items)


@EXAMPLES
@given(meter=bks.meter_requests(), data=st.data())
def test_usage_streams_count_on_their_meter(meter: MeterCreate, data: st.DataObject) -> None:
    """Every event drawn for a meter has its event name, a value and its filter's key, in the window."""
    billing = sandbox_billing()
    scope = sandbox_scope(billing)
    created = scope.meters.create(meter)
    scope.customers.create(external_id="c-1", name="Ada")
    start, end = billing.clock.now() - timedelta(days=30), billing.clock.now()
    events = data.draw(
        bks.usage_event_requests([created], external_customer_ids=["c-1"], start=start, end=end)
    )
    result = scope.events.ingest_bulk(events)
    assert list(result.accepted_ids) == [event["event_id"] for event in events]
    for event in events:
        assert event["event_name"] == meter.event_name
        assert start <= event["timestamp"] < end
        value = event["properties"][bks.VALUE_FIELD]
        assert isinstance(value, str) or Decimal(value) >= 0
        for meter_filter in meter.filters:
            assert meter_filter.key in event["properties"]


@EXAMPLES
@given(plan=bks.plan_requests(meter_ids=["meter_a", "meter_b"], max_prices=6))
def test_plan_prices_share_currency_and_period_and_name_only_given_meters(plan: PlanCreate) -> None:
    assert len({(p.currency, p.billing_period) for p in plan.prices}) == 1
    for price in plan.prices:
        if price.type is PriceType.USAGE:
            assert price.meter_id in {"meter_a", "meter_b"}
        else:
            assert price.meter_id is None


def test_requests_that_need_other_resources_say_what_is_missing() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        bks.subscription_requests(_flat_plan())
    with pytest.raises(ValueError, match="at least one meter"):
        bks.usage_event_requests([], external_customer_ids=["c"])
    with pytest.raises(ValueError, match="expected 1 meter ids"):
        bks.Catalogue(meters=(_COUNT,), plan_draft=PlanCreate(name="p")).plan_request([])


_COUNT = MeterCreate(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})


def _flat_plan() -> PlanDetail:
    scope = sandbox_scope(sandbox_billing())
    return scope.plans.create(
        name="Flat",
        prices=[{"amount": "1", "currency": "usd", "type": "FIXED", "billing_model": "FLAT_FEE",
                 "billing_period": "MONTHLY", "invoice_cadence": "ADVANCE"}],
    )  # fmt: skip
