"""Subscription and customer entitlements, aggregated with their sources, on every store."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from billingkit import Billing, NotFound, PermissionDenied, Scoped, TestClock
from billingkit.domain.access import Actor, Role
from billingkit.domain.entitlement_aggregation import AggregatedFeature
from billingkit.domain.queries import ListQuery
from billingkit.services.access import BootstrapResult
from billingkit.services.subscription_entitlements import load_entitlement_sources
from tests.entitlement_catalogue import (
    MONTHLY_FEE,
    EntitlementCatalogue,
    add_override,
    attach_addon,
    build_catalogue,
)


@pytest.fixture
def cat(test_env: Scoped) -> EntitlementCatalogue:
    return build_catalogue(test_env)


def by_feature(features: Any) -> dict[str, AggregatedFeature]:
    return {f.feature.id: f for f in features}


def summary(feature: AggregatedFeature) -> tuple[Any, ...]:
    e = feature.entitlement
    return (
        e.is_enabled,
        e.usage_limit,
        e.is_soft_limit,
        [(s.entity_type.value, s.quantity) for s in feature.sources],
    )


def test_plan_only(cat: EntitlementCatalogue) -> None:
    found = cat.scoped.subscriptions.entitlements(cat.subscription.id)
    assert (found.subscription_id, found.plan_id) == (cat.subscription.id, cat.plan_id)
    assert [f.feature.id for f in found.features] == [cat.calls, cat.sso, cat.tier, cat.regions]
    features = by_feature(found.features)
    calls = features[cat.calls]
    assert summary(calls) == (True, 1000, False, [("plan", 1)])
    assert calls.entitlement.usage_reset_period.value == "MONTHLY"  # type: ignore[union-attr]
    (source,) = calls.sources
    assert source.to_dict() == {
        "entitlement_id": cat.plan_entitlement(cat.calls).id,
        "entity_id": cat.plan_id,
        "entity_name": "Pro",
        "entity_type": "plan",
        "is_enabled": True,
        "quantity": 1,
        "static_value": None,
        "config_value": None,
        "subscription_id": cat.subscription.id,
        "usage_limit": 1000,
        "usage_reset_period": "MONTHLY",
    }
    assert features[cat.sso].entitlement.is_enabled
    assert features[cat.tier].entitlement.static_values == ("gold",)
    assert features[cat.regions].entitlement.config_values == ({"storage": {"region": "eu"}},)


def test_plan_and_an_add_on_bought_twice(cat: EntitlementCatalogue, clock: TestClock) -> None:
    sub = cat.subscription
    attach_addon(cat.scoped, sub.id, cat.boost, clock.now())
    attach_addon(cat.scoped, sub.id, cat.boost, clock.now())
    features = by_feature(cat.scoped.subscriptions.entitlements(sub.id).features)
    # 1,000 (plan, hard) + 500 x 2 (Boost, soft) = 2,000, soft.
    assert summary(features[cat.calls]) == (True, 2000, True, [("plan", 1), ("addon", 2)])
    assert features[cat.calls].sources[1].entity_name == "Boost"
    assert features[cat.tier].entitlement.static_values == ("gold", "platinum")


def test_add_ons_count_only_while_their_association_is_active(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    sub, now = cat.subscription, clock.now()
    attach_addon(cat.scoped, sub.id, cat.boost, now, addon_status="cancelled", end_date=now)
    attach_addon(cat.scoped, sub.id, cat.boost, now + timedelta(days=3), addon_status="pending")
    attach_addon(
        cat.scoped, sub.id, cat.boost, now - timedelta(days=30), end_date=now
    )  # ended, not yet marked
    attach_addon(cat.scoped, "subs_other", cat.boost, now)
    features = by_feature(cat.scoped.subscriptions.entitlements(sub.id).features)
    assert summary(features[cat.calls]) == (True, 1000, False, [("plan", 1)])


def test_a_removed_add_on_counts_until_its_end_date_as_billing_counts_it(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    sub, now = cat.subscription, clock.now()
    # Removed at the period end: marked cancelled at once, in force until then.
    attach_addon(
        cat.scoped, sub.id, cat.boost, now, addon_status="cancelled", end_date=now + timedelta(days=5)
    )
    features = by_feature(cat.scoped.subscriptions.entitlements(sub.id).features)
    assert summary(features[cat.calls]) == (True, 1500, True, [("plan", 1), ("addon", 1)])
    clock.advance(timedelta(days=5))
    features = by_feature(cat.scoped.subscriptions.entitlements(sub.id).features)
    assert summary(features[cat.calls]) == (True, 1000, False, [("plan", 1)])


def test_an_override_replaces_the_plan_limit(cat: EntitlementCatalogue) -> None:
    sub = cat.subscription
    parent = cat.plan_entitlement(cat.calls)
    override = add_override(
        cat.scoped,
        sub.id,
        cat.calls,
        "metered",
        usage_limit=5000,
        usage_reset_period="MONTHLY",
        parent_entitlement_id=parent.id,
    )
    calls = by_feature(cat.scoped.subscriptions.entitlements(sub.id).features)[cat.calls]
    assert summary(calls) == (True, 5000, False, [("subscription", 1)])
    (source,) = calls.sources
    assert (source.entitlement.id, source.entity_id, source.entity_name) == (override.id, sub.id, sub.id)


def test_an_override_of_an_add_on_entitlement_keeps_its_quantity(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    sub = cat.subscription
    attach_addon(cat.scoped, sub.id, cat.boost, clock.now())
    attach_addon(cat.scoped, sub.id, cat.boost, clock.now())
    parent = cat.addon_entitlement(cat.boost, cat.calls)
    add_override(cat.scoped, sub.id, cat.calls, "metered", usage_limit=50, parent_entitlement_id=parent.id)
    calls = by_feature(cat.scoped.subscriptions.entitlements(sub.id).features)[cat.calls]
    # 1,000 + 50 x 2; the override is hard (any soft source would make it soft).
    assert summary(calls) == (True, 1100, False, [("plan", 1), ("subscription", 2)])


def test_unlimited_wins(cat: EntitlementCatalogue, clock: TestClock) -> None:
    attach_addon(cat.scoped, cat.subscription.id, cat.boost, clock.now())
    attach_addon(cat.scoped, cat.subscription.id, cat.unlimited, clock.now())
    calls = by_feature(cat.scoped.subscriptions.entitlements(cat.subscription.id).features)[cat.calls]
    assert summary(calls) == (True, None, True, [("plan", 1), ("addon", 1), ("addon", 1)])


def test_boolean_and_static_overrides(cat: EntitlementCatalogue) -> None:
    sub = cat.subscription
    add_override(
        cat.scoped,
        sub.id,
        cat.sso,
        "boolean",
        is_enabled=False,
        parent_entitlement_id=cat.plan_entitlement(cat.sso).id,
    )
    add_override(
        cat.scoped,
        sub.id,
        cat.tier,
        "static",
        static_value="silver",
        parent_entitlement_id=cat.plan_entitlement(cat.tier).id,
    )
    features = by_feature(cat.scoped.subscriptions.entitlements(sub.id).features)
    assert not features[cat.sso].entitlement.is_enabled
    assert features[cat.tier].entitlement.static_values == ("silver",)


def test_a_new_feature_granted_by_the_subscription_alone(cat: EntitlementCatalogue) -> None:
    audit = cat.scoped.features.create(name="Audit log", type="boolean", lookup_key="audit")
    add_override(cat.scoped, cat.subscription.id, audit.id, "boolean")
    audit_log = by_feature(cat.scoped.subscriptions.entitlements(cat.subscription.id).features)[audit.id]
    assert summary(audit_log) == (True, None, False, [("subscription", 1)])


def test_entitlements_out_of_their_dates_or_deleted_grant_nothing(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    add_override(
        cat.scoped,
        cat.subscription.id,
        cat.calls,
        "metered",
        usage_limit=1,
        parent_entitlement_id=cat.plan_entitlement(cat.calls).id,
        start_date=clock.now() + timedelta(days=1),
    )
    cat.scoped.entitlements.delete(cat.plan_entitlement(cat.regions).id)
    features = by_feature(cat.scoped.subscriptions.entitlements(cat.subscription.id).features)
    assert features[cat.calls].entitlement.usage_limit == 1000
    assert cat.regions not in features
    clock.advance(timedelta(days=1))
    features = by_feature(cat.scoped.subscriptions.entitlements(cat.subscription.id).features)
    assert features[cat.calls].entitlement.usage_limit == 1


def test_feature_ids_filter_and_unknown_subscription(cat: EntitlementCatalogue) -> None:
    found = cat.scoped.subscriptions.entitlements(cat.subscription.id, feature_ids=[cat.sso, cat.tier])
    assert [f.feature.id for f in found.features] == [cat.sso, cat.tier]
    with pytest.raises(NotFound):
        cat.scoped.subscriptions.entitlements("subs_missing")


def test_search_with_entitlements(cat: EntitlementCatalogue, clock: TestClock) -> None:
    other = cat.scoped.customers.create(external_id="bob", name="Bob")
    plain = cat.scoped.plans.create(name="Free", prices=[{**MONTHLY_FEE, "amount": "0"}])
    bobs = cat.scoped.subscriptions.create(
        customer_id=other.id, plan_id=plain.id, currency="usd", billing_period="MONTHLY"
    )
    attach_addon(cat.scoped, bobs.id, cat.boost, clock.now())
    page = cat.scoped.subscriptions.search_with_entitlements(order="asc")
    assert page.total == 2
    ada, bob = page.items
    assert ada.subscription.id == cat.subscription.id and bob.subscription.id == bobs.id
    assert [f.feature.id for f in ada.entitlements] == [cat.calls, cat.sso, cat.tier, cat.regions]
    assert [summary(f) for f in bob.entitlements] == [
        (True, 500, True, [("addon", 1)]),
        (True, None, False, [("addon", 1)]),
    ]
    body = bob.to_dict(line_items=False)
    assert "line_items" not in body and [f["feature"]["id"] for f in body["entitlements"]] == [
        cat.calls,
        cat.tier,
    ]


def test_customer_entitlements_aggregate_the_granting_subscriptions(
    cat: EntitlementCatalogue, clock: TestClock
) -> None:
    scoped = cat.scoped
    second = scoped.subscriptions.create(
        customer_id=cat.customer_id, plan_id=cat.plan_id, currency="usd", billing_period="MONTHLY"
    )
    scoped.subscriptions.create(
        customer_id=cat.customer_id,
        plan_id=cat.plan_id,
        currency="usd",
        billing_period="MONTHLY",
        subscription_status="draft",
    )
    found = scoped.entitlements.for_customer(cat.customer_id)
    assert found.customer_id == cat.customer_id
    assert [s.id for s in found.subscriptions] == [cat.subscription.id, second.id]
    calls = by_feature(found.features)[cat.calls]
    assert summary(calls) == (True, 2000, False, [("plan", 1), ("plan", 1)])
    assert calls.subscription_ids == (cat.subscription.id, second.id)

    only = scoped.entitlements.for_customer(
        "ada", external=True, subscription_ids=[second.id], feature_ids=[cat.calls]
    )
    assert [s.id for s in only.subscriptions] == [second.id]
    assert [summary(f) for f in only.features] == [(True, 1000, False, [("plan", 1)])]
    body = only.to_dict()
    assert (
        list(body) == ["customer_id", "features", "subscriptions"]
        and body["subscriptions"][0]["id"] == second.id
    )
    with pytest.raises(NotFound):
        scoped.entitlements.for_customer("nobody", external=True)
    with pytest.raises(NotFound):
        scoped.entitlements.for_customer("cust_missing")


def test_reads_need_permissions(billing: Billing, setup: BootstrapResult, cat: EntitlementCatalogue) -> None:
    ingestor = billing.scope(
        setup.tenant.id, setup.environments[0][0].id, actor=Actor(id="k", roles=(Role.EVENT_INGESTOR,))
    )
    with pytest.raises(PermissionDenied):
        ingestor.subscriptions.entitlements(cat.subscription.id)
    with pytest.raises(PermissionDenied):
        ingestor.entitlements.for_customer(cat.customer_id)
    reader = billing.scope(
        setup.tenant.id, setup.environments[0][0].id, actor=Actor(id="r", roles=(Role.ALL_READER,))
    )
    assert reader.subscriptions.entitlements(cat.subscription.id).features


def test_loading_sources_is_a_fixed_number_of_reads(
    billing: Billing, cat: EntitlementCatalogue, clock: TestClock
) -> None:
    """The search of a page loads every subscription's sources together: more subscriptions do not
    mean more repository calls."""
    scoped = cat.scoped
    for n in range(3):
        customer = scoped.customers.create(external_id=f"c{n}", name=f"C{n}")
        sub = scoped.subscriptions.create(
            customer_id=customer.id, plan_id=cat.plan_id, currency="usd", billing_period="MONTHLY"
        )
        attach_addon(scoped, sub.id, cat.boost, clock.now())

    def count(limit: int) -> int:
        calls, depth = 0, 0
        with billing.storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
            subs = list(uow.subscriptions.list(ListQuery(limit=limit)).items)
            for name in ("addon_associations", "entitlements", "features", "plans", "addons"):
                repo = getattr(uow, name)
                for method in ("list", "find_many", "find"):
                    original = getattr(repo, method)

                    def counted(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                        nonlocal calls, depth
                        calls += depth == 0  # a store's own inner calls are not the caller's reads
                        depth += 1
                        try:
                            return _original(*args, **kwargs)
                        finally:
                            depth -= 1

                    setattr(repo, method, counted)
            loaded = load_entitlement_sources(uow, subs, now=clock.now())
            assert len(loaded.sources) == limit
        return calls

    assert count(1) == count(4) == 5


def test_overrides_made_on_create_replace_their_parent(cat: EntitlementCatalogue) -> None:
    """The override create path of ``POST /subscriptions`` (``override_entitlements``) stores what
    the aggregation reads: the override takes the plan source's place, and the check follows it."""
    scoped = cat.scoped
    bob = scoped.customers.create(external_id="bob", name="Bob")
    sub = scoped.subscriptions.create(
        customer_id=bob.id,
        plan_id=cat.plan_id,
        currency="usd",
        billing_period="MONTHLY",
        override_entitlements=[
            {"entitlement_id": cat.plan_entitlement(cat.calls).id, "usage_limit": 5000},
            {"entitlement_id": cat.plan_entitlement(cat.tier).id, "static_value": "silver"},
        ],
    )
    features = by_feature(scoped.subscriptions.entitlements(sub.id).features)
    assert summary(features[cat.calls]) == (True, 5000, False, [("subscription", 1)])
    parent = cat.plan_entitlement(cat.calls).id
    assert features[cat.calls].sources[0].entitlement.parent_entitlement_id == parent
    assert features[cat.tier].entitlement.static_values == ("silver",)
    assert scoped.entitlements.check("bob", "calls").limit == 5000
