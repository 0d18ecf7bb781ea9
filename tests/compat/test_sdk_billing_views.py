"""Customer and subscription views through the official SDK: the usage summary, the invoice
summary, subscription usage, usage records, the raw subscription update and invoice
recalculation (``recalculate`` and ``recalculate-v2``).

Plan Pro: 20.00 a month in advance, and API calls at 0.10 in arrears with 100 calls a month
included (a soft-limit entitlement on the ``calls`` feature: the overage is billed). Renewal
invoices stay DRAFT for a day.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import Billing, Settings, TestClock
from billingkit.domain.catalog.prices import PriceType
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code

START = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def billing(storage: Any, clock: TestClock) -> Billing:
    return Billing(
        storage,
        clock,
        token_secret=b"test-secret",
        settings=Settings(invoice_finalization_delay=timedelta(days=1)),
    )


def _calls(env: Scoped, count: int, start: datetime, prefix: str) -> None:
    env.events.ingest_bulk(
        [
            {
                "event_name": "api",
                "external_customer_id": "ada",
                "timestamp": (start + timedelta(minutes=i)).isoformat(),
                "event_id": f"{prefix}{i}",
            }
            for i in range(count)
        ]
    )


def _world(sdk: Flexprice, env: Scoped) -> tuple[str, str, str, str]:
    meter = env.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    feature = env.features.create(name="API calls", type="metered", meter_id=meter.id, lookup_key="calls")
    common = {"currency": "usd", "billing_period": "MONTHLY", "billing_model": "FLAT_FEE"}
    plan = env.plans.create(
        name="Pro",
        prices=[
            {**common, "type": "FIXED", "amount": "20", "invoice_cadence": "ADVANCE"},
            {**common, "type": "USAGE", "amount": "0.1", "invoice_cadence": "ARREAR", "meter_id": meter.id},
        ],
        entitlements=[
            {
                "feature_id": feature.id,
                "usage_limit": 100,
                "usage_reset_period": "MONTHLY",
                "is_soft_limit": True,
            }
        ],
    )
    customer = sdk.customers.create_customer(external_id="ada", name="Ada")
    sub = sdk.subscriptions.create_subscription(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    assert customer.id is not None and sub.id is not None
    return customer.id, sub.id, plan.id, feature.id


def test_usage_views_of_a_customer_and_a_subscription(sdk: Flexprice, env: Scoped, clock: TestClock) -> None:
    customer_id, sub_id, _, feature_id = _world(sdk, env)
    _calls(env, 150, START, "may")
    clock.advance(timedelta(days=3))

    summary = known(sdk.customers.get_customer_usage_summary(customer_id=customer_id))
    assert isinstance(summary, models.CustomerUsageSummaryResponse)
    (calls,) = summary.features or []
    assert calls.feature is not None and calls.feature.id == feature_id
    assert (calls.current_usage, calls.total_limit, calls.usage_percent, calls.is_unlimited) == (
        "150",
        100,
        "150.00",
        False,
    )
    assert (calls.is_enabled, calls.is_soft_limit) == (True, True)
    assert calls.next_usage_reset_at == datetime(2026, 6, 1, 9, 30, tzinfo=UTC)
    assert [(s.entity_type, s.usage_limit) for s in calls.sources or []] == [("plan", 100)]
    assert summary.period is not None and summary.period.period == "monthly"
    by_key = known(
        sdk.customers.get_customer_usage_summary(customer_lookup_key="ada", feature_lookup_keys=["calls"])
    )
    assert by_key.customer_id == customer_id and len(by_key.features or []) == 1
    with pytest.raises(errors.FlexpriceError) as neither:
        sdk.customers.get_customer_usage_summary()
    assert status_and_code(neither.value) == (400, "validation_error")

    usage = known(sdk.subscriptions.get_subscription_usage(subscription_id=sub_id))
    assert isinstance(usage, models.GetUsageBySubscriptionResponse)
    # 150 calls - 100 included = 50 x 0.10 = 5.00, as the invoice preview prices them
    preview = env.invoices.preview(sub_id)
    usage_lines = [line for line in preview.line_items if line.price_type is PriceType.USAGE]
    assert Decimal(str(usage.amount)) == sum(line.amount for line in usage_lines) == Decimal("5")
    (charge,) = usage.charges or []
    assert (charge.quantity, charge.amount, charge.meter_display_name) == (150, 5, "API calls")
    assert charge.price is not None and charge.price.type == "USAGE"
    assert (usage.currency, usage.display_amount, usage.has_overage) == ("usd", "$5.00", False)
    with pytest.raises(errors.FlexpriceError) as lifetime:
        sdk.subscriptions.get_subscription_usage(subscription_id=sub_id, lifetime_usage=True)
    assert status_and_code(lifetime.value) == (400, "validation_error")

    invoices = known(sdk.invoices.get_customer_invoice_summary(id=customer_id))
    assert isinstance(invoices, models.CustomerMultiCurrencyInvoiceSummary)
    (usd,) = invoices.summaries or []
    # the opening invoice: 20.00, finalized and unpaid
    assert (usd.currency, usd.total_invoice_count, usd.total_unpaid_amount, usd.unpaid_fixed_charges) == (
        "usd",
        1,
        "20.00",
        "20.00",
    )
    assert (usd.unpaid_usage_charges, invoices.default_currency) == ("0", "usd")


def test_recalculation_usage_records_and_the_raw_update(
    sdk: Flexprice, env: Scoped, billing: Billing
) -> None:
    customer_id, sub_id, plan_id, _ = _world(sdk, env)
    _calls(env, 150, START, "may")
    billing.clock.set(datetime(2026, 6, 1, 10, tzinfo=UTC))
    billing.run_due()
    (draft,) = [
        i for i in env.invoices.list(subscription_id=sub_id).items if i.invoice_status.value == "DRAFT"
    ]
    assert draft.total == Decimal("25.00")  # June's 20.00 + May's 5.00
    _calls(env, 30, START + timedelta(days=9), "late")

    again = known(sdk.invoices.recalculate_invoice_v2(id=draft.id, finalize=False))
    assert isinstance(again, models.InvoiceResponse)
    # 180 - 100 = 80 x 0.10 = 8.00
    assert (again.invoice_status, again.total, again.version) == ("DRAFT", "28.00", draft.version + 1)
    started = known(sdk.invoices.recalculate_invoice(id=draft.id))
    assert isinstance(started, models.ModelsTemporalWorkflowResult)
    assert (started.message, started.workflow_id) == ("invoice recalculated successfully", None)
    assert env.invoices.get(draft.id).version == draft.version + 2
    final = known(sdk.invoices.recalculate_invoice_v2(id=draft.id))
    assert (final.invoice_status, final.total) == ("FINALIZED", "28.00")
    with pytest.raises(errors.FlexpriceError) as finalized:
        sdk.invoices.recalculate_invoice_v2(id=draft.id)
    assert status_and_code(finalized.value) == (400, "invalid_operation")

    records = known(sdk.usage_records.post_usage_records_search(subscription_id=sub_id))
    assert isinstance(records, models.ListUsageRecordsResponse)
    (record,) = records.items or []
    assert (record.customer_id, record.customer_external_id, record.plan_id) == (customer_id, "ada", plan_id)
    assert (record.quantity, record.amount, record.currency, record.synced) == (180, 8, "usd", False)
    assert record.period_start == START and record.period_end == datetime(2026, 6, 1, 9, 30, tzinfo=UTC)
    assert records.pagination is not None and records.pagination.total == 1
    assert known(sdk.usage_records.post_usage_records_search(plan_id="plan_other")).items == []

    updated = known(sdk.subscriptions.update_subscription(id=sub_id, cancel_at_period_end=True))
    assert isinstance(updated, models.SubscriptionResponse)
    assert updated.cancel_at_period_end is True
    assert updated.cancel_at == datetime(2026, 7, 1, 9, 30, tzinfo=UTC)
    with pytest.raises(errors.FlexpriceError) as status:
        sdk.subscriptions.update_subscription(id=sub_id, status="paused")
    assert status_and_code(status.value) == (400, "validation_error")
    with pytest.raises(errors.FlexpriceError) as missing:
        sdk.subscriptions.update_subscription(id="subs_missing", cancel_at_period_end=True)
    assert status_and_code(missing.value) == (404, "not_found")
