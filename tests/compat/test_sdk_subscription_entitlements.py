"""Subscription and customer entitlements through the official SDK: the aggregated features
(``getSubscriptionEntitlements``, ``getCustomerEntitlements``, by external id, and the search with
``expand=entitlements``) parse into the SDK's models with every value known to it."""

from __future__ import annotations

import pytest
from flexprice import Flexprice, models
from flexprice.models import errors

from billingkit import TestClock
from billingkit.facade import Scoped
from tests.compat.conftest import known, status_and_code
from tests.entitlement_catalogue import EntitlementCatalogue, attach_addon, build_catalogue


@pytest.fixture
def cat(env: Scoped, clock: TestClock) -> EntitlementCatalogue:
    found = build_catalogue(env)
    attach_addon(env, found.subscription.id, found.boost, clock.now())
    attach_addon(env, found.subscription.id, found.boost, clock.now())
    return found


def _calls(features: list[models.AggregatedFeature] | None, feature_id: str) -> models.AggregatedFeature:
    (found,) = [f for f in features or [] if f.feature is not None and f.feature.id == feature_id]
    return found


def test_get_subscription_entitlements(sdk: Flexprice, cat: EntitlementCatalogue) -> None:
    sub = cat.subscription
    got = known(sdk.subscriptions.get_subscription_entitlements(id=sub.id))
    assert isinstance(got, models.SubscriptionEntitlementsResponse)
    assert (got.subscription_id, got.plan_id) == (sub.id, cat.plan_id)
    assert [f.feature.lookup_key for f in got.features or [] if f.feature] == [
        "calls",
        "sso",
        "tier",
        "regions",
    ]
    calls = _calls(got.features, cat.calls)
    assert calls.entitlement is not None
    # 1,000 (plan) + 500 x 2 (Boost bought twice) = 2,000, soft because Boost is.
    assert (
        calls.entitlement.is_enabled,
        calls.entitlement.usage_limit,
        calls.entitlement.is_soft_limit,
        calls.entitlement.usage_reset_period,
        calls.entitlement.aggregation_mode,
    ) == (True, 2000, True, "MONTHLY", "additive")
    assert [(s.entity_type, s.entity_name, s.quantity, s.usage_limit) for s in calls.sources or []] == [
        ("plan", "Pro", 1, 1000),
        ("addon", "Boost", 2, 500),
    ]
    only = known(sdk.subscriptions.get_subscription_entitlements(id=sub.id, feature_ids=[cat.tier, cat.sso]))
    tier = _calls(only.features, cat.tier)
    assert tier.entitlement is not None and tier.entitlement.static_values == ["gold", "platinum"]
    assert len(only.features or []) == 2
    with pytest.raises(errors.FlexpriceError) as missing:
        sdk.subscriptions.get_subscription_entitlements(id="subs_missing")
    assert status_and_code(missing.value) == (404, "not_found")


def test_get_customer_entitlements(sdk: Flexprice, cat: EntitlementCatalogue) -> None:
    got = known(sdk.customers.get_customer_entitlements(id=cat.customer_id))
    assert isinstance(got, models.CustomerEntitlementsResponse)
    assert got.customer_id == cat.customer_id
    assert [s.id for s in got.subscriptions or []] == [cat.subscription.id]
    assert _calls(got.features, cat.calls).entitlement.usage_limit == 2000  # type: ignore[union-attr]

    external = known(sdk.customers.get_customer_entitlements_by_external_id(external_id="ada"))
    assert external.customer_id == cat.customer_id
    assert len(external.features or []) == 4


def test_query_subscription_with_entitlements(sdk: Flexprice, cat: EntitlementCatalogue) -> None:
    found = known(sdk.subscriptions.query_subscription(expand="entitlements", with_line_items=False))
    (sub,) = found.items or []
    assert sub.id == cat.subscription.id
    assert _calls(sub.entitlements, cat.calls).entitlement.usage_limit == 2000  # type: ignore[union-attr]
    bare = known(sdk.subscriptions.query_subscription())
    assert (bare.items or [])[0].entitlements is None
