"""A month of Ada's API calls against her entitlements, through the public API with a test clock:
the worked example of docs/billing-rules.md ("Subscription entitlements")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from billingkit import Billing, TestClock
from billingkit.services.access import BootstrapResult
from tests.entitlement_catalogue import add_override, attach_addon, build_catalogue


def test_the_worked_example(billing: Billing, setup: BootstrapResult, clock: TestClock) -> None:
    env = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    cat = build_catalogue(env)  # Pro: 1,000 calls a month (hard), tier gold; Ada subscribes 1 May 09:30
    sub = cat.subscription
    attach_addon(env, sub.id, cat.boost, clock.now())  # Boost: 500 calls (soft), tier platinum
    attach_addon(env, sub.id, cat.boost, clock.now())
    billing.entitlement_cache.clear()  # the associations were written straight to storage

    calls = env.subscriptions.entitlements(sub.id, feature_ids=[cat.calls]).features[0].entitlement
    assert (calls.usage_limit, calls.is_soft_limit) == (2000, True)  # 1,000 + 500 x 2, soft

    add_override(
        env,
        sub.id,
        cat.calls,
        "metered",
        usage_limit=750,
        usage_reset_period="MONTHLY",
        parent_entitlement_id=cat.addon_entitlement(cat.boost, cat.calls).id,
    )
    billing.entitlement_cache.clear()
    (calls_feature, tier) = env.subscriptions.entitlements(sub.id, feature_ids=[cat.calls, cat.tier]).features
    assert (calls_feature.entitlement.usage_limit, calls_feature.entitlement.is_soft_limit) == (2500, False)
    assert [(s.entity_type.value, s.quantity, s.entitlement.usage_limit) for s in calls_feature.sources] == [
        ("plan", 1, 1000),
        ("subscription", 2, 750),
    ]
    assert tier.entitlement.static_values == ("gold", "platinum")

    # 20 May: 2,499 calls since 1 May 09:30.
    clock.set(datetime(2026, 5, 20, 12, tzinfo=UTC))
    for start in range(0, 2499, 1000):
        env.events.ingest_bulk(
            [
                {"event_id": f"c{i}", "event_name": "api.call", "external_customer_id": "ada",
                 "timestamp": (clock.now() - timedelta(days=1)).isoformat()}
                for i in range(start, min(start + 1000, 2499))
            ]
        )  # fmt: skip
    check = env.entitlements.check("ada", "calls")
    assert (check.allowed, check.usage, check.limit, check.remaining) == (True, 2499, 2500, 1)
    env.events.ingest(event_name="api.call", external_customer_id="ada", event_id="c2499")
    check = env.entitlements.check("ada", "calls")
    assert (check.allowed, check.usage, check.remaining) == (False, 2500, 0)

    # 1 June 09:30: a new window, counted from zero; the billing run bills the old period.
    clock.set(datetime(2026, 6, 1, 9, 30, tzinfo=UTC))
    billing.run_due()
    check = env.entitlements.check("ada", "calls")
    assert (check.allowed, check.usage, check.window_start, check.window_end) == (
        True,
        0,
        datetime(2026, 6, 1, 9, 30, tzinfo=UTC),
        datetime(2026, 7, 1, 9, 30, tzinfo=UTC),
    )

    # The add-on Unlimited makes the feature unlimited.
    attach_addon(env, sub.id, cat.unlimited, clock.now())
    billing.entitlement_cache.clear()
    check = env.entitlements.check("ada", "calls")
    assert (check.allowed, check.limit, check.remaining) == (True, None, None)
