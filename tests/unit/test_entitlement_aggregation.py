"""The pure entitlement rules: sources of a subscription, their aggregation per feature, the usage
window and the check's decision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billingkit.domain.catalog import Entitlement, Feature, FeatureType, UsageResetPeriod
from billingkit.domain.entitlement_aggregation import (
    AggregatedEntitlement,
    EntitlementSourceType,
    aggregate_feature,
    aggregate_sources,
    in_force,
    subscription_sources,
)
from billingkit.domain.entitlement_checks import (
    EntitlementCheck,
    grants_now,
    is_allowed,
    splits_in_time,
    usage_window,
)
from billingkit.domain.periods import Period
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.usage import AggregationType, BucketSize, MeterSpec
from billingkit.testing.contracts.storage import sample

T = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
METERED = "feat_calls"


def feature(feature_id: str = METERED, kind: FeatureType = FeatureType.METERED) -> Feature:
    extra: dict[str, Any] = {} if kind is FeatureType.METERED else {"meter_id": None}
    return sample("features", id=feature_id, type=kind, **extra)  # type: ignore[no-any-return]


def ent(entitlement_id: str, feature_id: str = METERED, **fields: Any) -> Entitlement:
    kind = fields.pop("feature_type", "metered")
    values = {"config_value": None, "feature_type": kind, **fields}
    return sample("entitlements", id=entitlement_id, feature_id=feature_id, **values)  # type: ignore[no-any-return]


def sources(
    plan: list[Entitlement],
    addons: list[tuple[str, int, list[Entitlement]]] | None = None,
    overrides: list[Entitlement] | None = None,
) -> list[Any]:
    return subscription_sources(
        subscription_id="subs_1",
        subscription_name="ada-pro",
        plan=("plan_1", "Pro", plan),
        addons=[(addon_id, addon_id.title(), count, items) for addon_id, count, items in addons or []],
        overrides=overrides or [],
    )


# -- sources -------------------------------------------------------------------------------------


def test_plan_sources_come_first_then_add_ons_with_their_quantity() -> None:
    found = sources(
        [ent("ent_p", usage_limit=1000)],
        addons=[("boost", 2, [ent("ent_b", usage_limit=500)]), ("never", 0, [ent("ent_n", usage_limit=9)])],
    )
    assert [(s.entitlement.id, s.entity_type, s.entity_id, s.entity_name, s.quantity) for s in found] == [
        ("ent_p", EntitlementSourceType.PLAN, "plan_1", "Pro", 1),
        ("ent_b", EntitlementSourceType.ADDON, "boost", "Boost", 2),
    ]
    assert {s.subscription_id for s in found} == {"subs_1"}


def test_an_override_takes_its_parents_place_and_quantity() -> None:
    plan = ent("ent_p", usage_limit=1000)
    boost = ent("ent_b", usage_limit=500)
    override = ent("ent_o", usage_limit=5000, parent_entitlement_id="ent_b")
    found = sources([plan], addons=[("boost", 3, [boost])], overrides=[override])
    assert [(s.entitlement.id, s.entity_type, s.entity_id, s.entity_name, s.quantity) for s in found] == [
        ("ent_p", EntitlementSourceType.PLAN, "plan_1", "Pro", 1),
        ("ent_o", EntitlementSourceType.SUBSCRIPTION, "subs_1", "ada-pro", 3),
    ]


def test_the_newest_override_of_a_parent_wins_new_ones_add_and_orphans_grant_nothing() -> None:
    plan = ent("ent_p", usage_limit=1000)
    older = ent("ent_o1", usage_limit=2000, parent_entitlement_id="ent_p", created_at=T)
    newer = ent(
        "ent_o2", usage_limit=3000, parent_entitlement_id="ent_p", created_at=T + timedelta(seconds=1)
    )
    orphan = ent("ent_x", usage_limit=9, parent_entitlement_id="ent_gone")
    extra = ent("ent_new", "feat_sso", feature_type="boolean")
    found = sources([plan], overrides=[newer, orphan, extra, older])
    assert [s.entitlement.id for s in found] == ["ent_o2", "ent_new"]
    assert found[1].entity_type is EntitlementSourceType.SUBSCRIPTION and found[1].quantity == 1


def test_sources_of_one_owner_follow_display_order() -> None:
    found = sources([ent("ent_2", display_order=2), ent("ent_1", "feat_b", display_order=1)])
    assert [s.entitlement.id for s in found] == ["ent_1", "ent_2"]


def test_an_entitlement_is_in_force_within_its_own_dates() -> None:
    assert in_force(ent("e"), T)
    assert not in_force(ent("e", start_date=T + timedelta(seconds=1)), T)
    assert in_force(ent("e", start_date=T, end_date=T + timedelta(days=1)), T)
    assert not in_force(ent("e", end_date=T), T)


# -- aggregation ---------------------------------------------------------------------------------


def test_metered_limits_add_up_with_quantities_and_any_soft_source_makes_it_soft() -> None:
    found = sources(
        [ent("ent_p", usage_limit=1000, usage_reset_period="MONTHLY")],
        addons=[
            ("boost", 2, [ent("ent_b", usage_limit=500, is_soft_limit=True, usage_reset_period="DAILY")])
        ],
    )
    aggregate = aggregate_feature(feature(), found).entitlement
    # 1,000 + 500 x 2 = 2,000; the plan's reset period (the first source's) wins.
    assert aggregate == AggregatedEntitlement(
        is_enabled=True,
        usage_limit=2000,
        usage_reset_period=UsageResetPeriod.MONTHLY,
        is_soft_limit=True,
        aggregation_mode="additive",  # type: ignore[arg-type]
    )


def test_an_unlimited_source_makes_the_feature_unlimited() -> None:
    found = sources(
        [ent("ent_p", usage_limit=1000)], addons=[("unlimited", 1, [ent("ent_u", usage_limit=None)])]
    )
    assert aggregate_feature(feature(), found).entitlement.usage_limit is None


def test_disabled_sources_grant_nothing() -> None:
    only_disabled = sources([ent("ent_p", usage_limit=None, is_enabled=False)])
    aggregate = aggregate_feature(feature(), only_disabled).entitlement
    assert (aggregate.is_enabled, aggregate.usage_limit) == (False, 0)
    mixed = sources(
        [ent("ent_p", usage_limit=100)],
        overrides=[ent("ent_o", usage_limit=None, is_enabled=False, parent_entitlement_id=None)],
    )
    assert aggregate_feature(feature(), mixed).entitlement.usage_limit == 100


def test_boolean_static_and_config_features() -> None:
    sso = feature("feat_sso", FeatureType.BOOLEAN)
    off = sources([ent("ent_s", "feat_sso", feature_type="boolean", is_enabled=False)])
    on = sources(
        [ent("ent_s", "feat_sso", feature_type="boolean", is_enabled=False)],
        addons=[("boost", 1, [ent("ent_b", "feat_sso", feature_type="boolean")])],
    )
    assert not aggregate_feature(sso, off).entitlement.is_enabled
    assert aggregate_feature(sso, on).entitlement == AggregatedEntitlement(is_enabled=True)

    tier = feature("feat_tier", FeatureType.STATIC)
    static = sources(
        [ent("ent_t", "feat_tier", feature_type="static", static_value="gold")],
        addons=[
            ("boost", 1, [ent("ent_b", "feat_tier", feature_type="static", static_value="platinum")]),
            ("again", 1, [ent("ent_a", "feat_tier", feature_type="static", static_value="gold")]),
        ],
    )
    assert aggregate_feature(tier, static).entitlement.static_values == ("gold", "platinum")

    regions = feature("feat_regions", FeatureType.CONFIG)
    config = sources(
        [ent("ent_r", "feat_regions", feature_type="config", config_value={"regions": ["eu"]})],
        overrides=[ent("ent_o", "feat_regions", feature_type="config", config_value={"regions": ["us"]})],
    )
    assert aggregate_feature(regions, config).entitlement.config_values == (
        {"regions": ["eu"]},
        {"regions": ["us"]},
    )


def test_grants_with_a_quota_are_listed_as_buckets() -> None:
    found = sources(
        [ent("ent_p", usage_limit=10, grant_measure="quantity", grant_quota=250, grant_duration_unit="day")]
    )
    (bucket,) = aggregate_feature(feature(), found).entitlement.buckets
    assert bucket.to_dict() == {
        "entitlement_id": "ent_p",
        "source_entity_id": "plan_1",
        "usage_limit": 10,
        "grant_measure": "quantity",
        "grant_quota": "250",
        "grant_duration_unit": "day",
        "grant_duration_value": None,
    }


def test_aggregate_sources_groups_by_feature_in_order_and_filters() -> None:
    found = sources(
        [
            ent("ent_p", usage_limit=10),
            ent("ent_s", "feat_sso", feature_type="boolean"),
            ent("ent_x", "feat_gone"),
        ]
    )
    features = {METERED: feature(), "feat_sso": feature("feat_sso", FeatureType.BOOLEAN)}
    assert [a.feature.id for a in aggregate_sources(found, features)] == [METERED, "feat_sso"]
    assert [a.feature.id for a in aggregate_sources(found, features, feature_ids=["feat_sso"])] == [
        "feat_sso"
    ]


def test_the_wire_form_names_every_field_of_the_reference() -> None:
    (aggregated,) = aggregate_sources(
        sources([ent("ent_p", usage_limit=1000, usage_reset_period="MONTHLY")]), {METERED: feature()}
    )
    body = aggregated.to_dict()
    assert list(body) == ["feature", "entitlement", "sources"]
    assert body["sources"] == [
        {
            "entitlement_id": "ent_p",
            "entity_id": "plan_1",
            "entity_name": "Pro",
            "entity_type": "plan",
            "is_enabled": True,
            "quantity": 1,
            "static_value": None,
            "config_value": None,
            "subscription_id": "subs_1",
            "usage_limit": 1000,
            "usage_reset_period": "MONTHLY",
        }
    ]
    assert aggregated.subscription_ids == ("subs_1",)


# -- windows and the decision --------------------------------------------------------------------


def sub(**fields: Any) -> Subscription:
    start = datetime(2026, 1, 15, 9, 0, tzinfo=UTC)
    values: dict[str, Any] = {
        "billing_anchor": start,
        "start_date": start,
        "current_period_start": datetime(2026, 5, 15, 9, 0, tzinfo=UTC),
        "current_period_end": datetime(2026, 6, 15, 9, 0, tzinfo=UTC),
        **fields,
    }
    return sample("subscriptions", **values)  # type: ignore[no-any-return]


NOW = datetime(2026, 5, 20, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("reset", "cumulative", "window"),
    [
        # Unset or the subscription's own monthly cycle: the current period.
        (None, False, ("2026-05-15 09:00", "2026-06-15 09:00")),
        (UsageResetPeriod.MONTHLY, False, ("2026-05-15 09:00", "2026-06-15 09:00")),
        # Lifetime: from the start to the current period's end.
        (UsageResetPeriod.NEVER, False, ("2026-01-15 09:00", "2026-06-15 09:00")),
        (None, True, ("2026-01-15 09:00", "2026-06-15 09:00")),
        # Another length: counted from the anchor (15 Jan 09:00 UTC, a Thursday).
        (UsageResetPeriod.DAILY, False, ("2026-05-20 09:00", "2026-05-21 09:00")),
        (UsageResetPeriod.WEEKLY, False, ("2026-05-14 09:00", "2026-05-21 09:00")),
        (UsageResetPeriod.QUARTERLY, False, ("2026-04-15 09:00", "2026-07-15 09:00")),
        (UsageResetPeriod.ANNUAL, False, ("2026-01-15 09:00", "2027-01-15 09:00")),
    ],
)
def test_usage_windows(reset: UsageResetPeriod | None, cumulative: bool, window: tuple[str, str]) -> None:
    found = usage_window(sub(), reset, cumulative_meter=cumulative, now=NOW)
    expected = tuple(datetime.fromisoformat(f"{w}+00:00") for w in window)
    assert (found.start, found.end) == expected


def test_a_window_never_starts_before_the_subscription() -> None:
    started = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)
    young = sub(
        billing_anchor=datetime(2026, 5, 15, 9, 0, tzinfo=UTC),
        start_date=started,
        current_period_start=started,
    )
    found = usage_window(young, UsageResetPeriod.DAILY, cumulative_meter=False, now=NOW)
    assert found == Period(started, datetime(2026, 5, 21, 9, 0, tzinfo=UTC))


def test_a_period_the_billing_run_has_not_advanced_yet_is_taken_from_the_schedule() -> None:
    late = datetime(2026, 6, 16, tzinfo=UTC)
    found = usage_window(sub(), None, cumulative_meter=False, now=late)
    assert found == Period(datetime(2026, 6, 15, 9, 0, tzinfo=UTC), datetime(2026, 7, 15, 9, 0, tzinfo=UTC))


def test_a_two_month_cycle_with_a_monthly_reset_counts_monthly_windows() -> None:
    two = sub(billing_period_count=2, current_period_end=datetime(2026, 7, 15, 9, 0, tzinfo=UTC))
    found = usage_window(two, UsageResetPeriod.MONTHLY, cumulative_meter=False, now=NOW)
    assert found == Period(datetime(2026, 5, 15, 9, 0, tzinfo=UTC), datetime(2026, 6, 15, 9, 0, tzinfo=UTC))


@pytest.mark.parametrize(
    ("fields", "grants"),
    [
        ({}, True),
        ({"subscription_status": "trialing"}, True),
        ({"subscription_status": "paused"}, False),
        ({"subscription_status": "incomplete"}, False),
        ({"subscription_status": "draft"}, False),
        ({"subscription_status": "cancelled"}, False),
        ({"status": Status.ARCHIVED}, False),
        ({"start_date": NOW + timedelta(seconds=1)}, False),
        ({"end_date": NOW}, False),
        ({"end_date": NOW + timedelta(seconds=1)}, True),
        ({"cancel_at": NOW}, False),
    ],
)
def test_which_subscriptions_grant(fields: dict[str, Any], grants: bool) -> None:
    assert grants_now(sub(**fields), NOW) is grants


@pytest.mark.parametrize(
    ("aggregate", "kind", "usage", "allowed"),
    [
        (None, FeatureType.METERED, "0", False),
        (AggregatedEntitlement(is_enabled=False, usage_limit=0), FeatureType.METERED, "0", False),
        (AggregatedEntitlement(is_enabled=True, usage_limit=1000), FeatureType.METERED, "999", True),
        (AggregatedEntitlement(is_enabled=True, usage_limit=1000), FeatureType.METERED, "1000", False),
        (AggregatedEntitlement(is_enabled=True, usage_limit=1000), FeatureType.METERED, "1200.5", False),
        (
            AggregatedEntitlement(is_enabled=True, usage_limit=1000, is_soft_limit=True),
            FeatureType.METERED,
            "1200",
            True,
        ),
        (AggregatedEntitlement(is_enabled=True, usage_limit=None), FeatureType.METERED, "1e9", True),
        (AggregatedEntitlement(is_enabled=True, usage_limit=0), FeatureType.METERED, "0", False),
        (AggregatedEntitlement(is_enabled=True), FeatureType.BOOLEAN, "0", True),
        (AggregatedEntitlement(is_enabled=False), FeatureType.BOOLEAN, "0", False),
        (AggregatedEntitlement(is_enabled=True, static_values=("gold",)), FeatureType.STATIC, "0", True),
    ],
)
def test_the_decision(
    aggregate: AggregatedEntitlement | None, kind: FeatureType, usage: str, allowed: bool
) -> None:
    assert is_allowed(aggregate, kind, Decimal(usage)) is allowed


def test_which_meters_split_in_time() -> None:
    assert splits_in_time(MeterSpec("e", AggregationType.COUNT))
    assert splits_in_time(MeterSpec("e", AggregationType.SUM, "n"))
    assert splits_in_time(MeterSpec("e", AggregationType.SUM_WITH_MULTIPLIER, "n", multiplier=Decimal(2)))
    assert not splits_in_time(MeterSpec("e", AggregationType.MAX, "n"))
    assert not splits_in_time(MeterSpec("e", AggregationType.COUNT_UNIQUE, "n"))
    assert not splits_in_time(MeterSpec("e", AggregationType.SUM, "n", bucket_size=BucketSize.DAY))


def test_a_check_tells_what_remains() -> None:
    check = EntitlementCheck(
        customer_id="cust_1",
        feature_id=METERED,
        feature_type=FeatureType.METERED,
        allowed=True,
        is_enabled=True,
        usage=Decimal("250"),
        limit=Decimal("1000"),
        window_start=T,
        window_end=T + timedelta(days=31),
    )
    assert check.remaining == Decimal("750")
    over = EntitlementCheck("c", METERED, FeatureType.METERED, False, True, Decimal(1200), Decimal(1000))
    assert over.remaining == 0
    assert EntitlementCheck("c", METERED, FeatureType.METERED, True, True, limit=None).remaining is None
    body = check.to_dict()
    assert (body["usage"], body["usage_limit"], body["remaining"], body["window_start"]) == (
        "250",
        "1000",
        "750",
        "2026-05-01T09:30:00Z",
    )


# -- properties ----------------------------------------------------------------------------------

_grants = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),  # usage_limit (None: unlimited)
        st.integers(min_value=1, max_value=5),  # quantity (add-on associations)
        st.booleans(),  # is_enabled
        st.booleans(),  # is_soft_limit
    ),
    min_size=1,
    max_size=6,
)


@given(grants=_grants, order=st.randoms(use_true_random=False))
def test_metered_aggregation_properties(grants: list[tuple[int | None, int, bool, bool]], order: Any) -> None:
    items = [
        (f"addon_{i}", quantity, [ent(f"ent_{i}", usage_limit=limit, is_enabled=on, is_soft_limit=soft)])
        for i, (limit, quantity, on, soft) in enumerate(grants)
    ]
    aggregate = aggregate_feature(feature(), sources([], addons=items)).entitlement
    enabled = [(limit, quantity, soft) for limit, quantity, on, soft in grants if on]
    # The limit is the sum of limit x quantity over enabled sources, unless one is unlimited.
    if not enabled:
        assert (aggregate.is_enabled, aggregate.usage_limit) == (False, 0)
    elif any(limit is None for limit, _, _ in enabled):
        assert aggregate.usage_limit is None
    else:
        assert aggregate.usage_limit == sum(limit * quantity for limit, quantity, _ in enabled)  # type: ignore[operator]
    assert aggregate.is_soft_limit == any(soft for _, _, soft in enabled)
    # The order of the add-ons changes nothing but the order of the sources.
    order.shuffle(items)
    shuffled = aggregate_feature(feature(), sources([], addons=items)).entitlement
    assert (shuffled.is_enabled, shuffled.usage_limit, shuffled.is_soft_limit) == (
        aggregate.is_enabled,
        aggregate.usage_limit,
        aggregate.is_soft_limit,
    )
    # One more enabled source never lowers the limit.
    more = aggregate_feature(feature(), sources([ent("ent_x", usage_limit=1)], addons=items)).entitlement
    assert more.usage_limit is None or (
        aggregate.usage_limit is not None and more.usage_limit > aggregate.usage_limit
    )
