"""The enums exported by ``billingkit`` are accepted wherever their string values are."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from billingkit import (
    AggregationType,
    Billing,
    BillingCycle,
    BillingModel,
    BillingPeriod,
    CollectionMethod,
    InvoiceCadence,
    InvoiceStatus,
    PaymentBehavior,
    PaymentTerms,
    PriceType,
    Scoped,
    SubscriptionStatus,
    TestClock,
    TierMode,
    UsageResetPeriod,
)


def _catalogue(s: Scoped, tag: str, enums: bool) -> dict[str, Any]:
    """The same plan and subscription, built from enum members or from their string values."""

    def v(member: Any) -> Any:
        return member if enums else member.value

    meter = s.meters.create(
        name=f"Calls {tag}", event_name=f"call.{tag}", aggregation={"type": v(AggregationType.COUNT)}
    )
    feature = s.features.create(name=f"Calls {tag}", type="metered", meter_id=meter.id)
    common = {"currency": "usd", "billing_period": v(BillingPeriod.MONTHLY)}
    plan = s.plans.create(
        name=f"Pro {tag}",
        prices=[
            {
                **common,
                "type": v(PriceType.FIXED),
                "billing_model": v(BillingModel.FLAT_FEE),
                "amount": "20",
                "invoice_cadence": v(InvoiceCadence.ADVANCE),
            },
            {
                **common,
                "type": v(PriceType.USAGE),
                "billing_model": v(BillingModel.TIERED),
                "tier_mode": v(TierMode.SLAB),
                "meter_id": meter.id,
                "invoice_cadence": v(InvoiceCadence.ARREAR),
                "tiers": [{"up_to": 10, "unit_amount": "1"}, {"up_to": None, "unit_amount": "0.5"}],
            },
        ],
        entitlements=[
            {"feature_id": feature.id, "usage_limit": 5, "usage_reset_period": v(UsageResetPeriod.MONTHLY)}
        ],
    )
    customer = s.customers.create(external_id=f"c-{tag}", name=tag)
    sub = s.subscriptions.create(
        customer_id=customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period=v(BillingPeriod.MONTHLY),
        billing_cycle=v(BillingCycle.ANNIVERSARY),
        payment_terms=v(PaymentTerms.NET_15),
        collection_method=v(CollectionMethod.SEND_INVOICE),
        payment_behavior=v(PaymentBehavior.DEFAULT_ACTIVE),
    )
    return {"plan": plan, "sub": sub, "meter": meter}


def test_enum_members_and_string_values_build_the_same_things(
    test_env: Scoped, billing: Billing, clock: TestClock
) -> None:
    built = {flag: _catalogue(test_env, "enum" if flag else "text", flag) for flag in (True, False)}
    plans = {flag: test_env.plans.get(b["plan"].id) for flag, b in built.items()}
    prices = {
        flag: sorted(
            (p.type, p.billing_model, p.tier_mode, p.invoice_cadence, p.billing_period)
            for p in test_env.prices.list(entity_ids=[plan.id]).items
        )
        for flag, plan in plans.items()
    }
    assert prices[True] == prices[False]
    assert prices[True][0][3] is InvoiceCadence.ADVANCE
    subs = {flag: b["sub"] for flag, b in built.items()}
    shape = {
        flag: (
            s.subscription_status,
            s.billing_period,
            s.billing_cycle,
            s.payment_terms,
            s.current_period_end,
        )
        for flag, s in subs.items()
    }
    assert shape[True] == shape[False]
    assert shape[True][0] is SubscriptionStatus.ACTIVE
    # Filters take members too.
    by_member = test_env.subscriptions.list(subscription_status=SubscriptionStatus.ACTIVE).items
    by_text = test_env.subscriptions.list(subscription_status="active").items
    assert {s.id for s in by_member} == {s.id for s in by_text} == {s.id for s in subs.values()}
    clock.advance(months=1, hours=1)
    billing.run_due()
    finalized = test_env.invoices.list(invoice_status=InvoiceStatus.FINALIZED).items
    assert {i.invoice_status for i in finalized} == {InvoiceStatus.FINALIZED}
    assert {i.subscription_id for i in finalized} == {s.id for s in subs.values()}
    assert len(test_env.invoices.list(invoice_status="FINALIZED").items) == len(finalized)
    assert clock.now() - subs[True].current_period_start < timedelta(days=32)
