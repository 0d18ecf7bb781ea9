"""What a subscription (or a customer) is entitled to: each feature's grants from every source,
aggregated into one entitlement (the reference's ``AggregatedFeature``).

Sources of one subscription, in this order:

1. its plan's entitlements (``entity_type`` PLAN, ``entity_id`` the plan), quantity 1;
2. the entitlements of each add-on with an active association on it, quantity = the number of
   its active associations (an add-on bought twice counts twice);
3. its overrides (``entity_type`` SUBSCRIPTION, ``entity_id`` the subscription): one with a
   ``parent_entitlement_id`` takes its parent's place (and quantity) among the sources; one
   without a parent is a new source of quantity 1; one whose parent is no source (an add-on
   removed since, a plan entitlement deleted) grants nothing. Of two overrides of one parent, the
   newer wins.

Aggregation per feature (only enabled sources count; :func:`aggregate_feature`):

- metered: ``usage_limit`` is the sum of ``usage_limit x quantity``, and one unlimited source
  (``usage_limit`` null) makes it unlimited; soft when any source is soft; the reset period is
  the first source's that has one (the plan's when the plan grants the feature).
  Example: plan 1,000 calls + add-on 500 calls bought twice -> 1,000 + 500 x 2 = 2,000.
- boolean: enabled when any source is.
- static: ``static_values`` lists the sources' values in source order, each once.
- config: ``config_values`` lists the sources' ``config_value`` objects in source order.
- ``is_enabled`` is true when any source is enabled; with none enabled the feature is granted
  nothing (``usage_limit`` 0 for a metered one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from billingkit.domain.catalog.entitlements import (
    Entitlement,
    EntitlementAggregationMode,
    UsageResetPeriod,
)
from billingkit.domain.catalog.features import Feature, FeatureType

__all__ = [
    "AggregatedBucket",
    "AggregatedEntitlement",
    "AggregatedFeature",
    "EntitlementSource",
    "EntitlementSourceType",
    "aggregate_feature",
    "aggregate_sources",
    "in_force",
    "subscription_sources",
]


class EntitlementSourceType(StrEnum):
    """Where a source comes from (the reference's ``EntitlementSourceEntityType``)."""

    PLAN = "plan"
    ADDON = "addon"
    SUBSCRIPTION = "subscription"


@dataclass(frozen=True, slots=True)
class EntitlementSource:
    """One entitlement granting a feature to ``subscription_id``, ``quantity`` times, through
    ``entity_type`` / ``entity_id`` (named ``entity_name``)."""

    entitlement: Entitlement
    entity_type: EntitlementSourceType
    entity_id: str
    entity_name: str
    subscription_id: str
    quantity: int = 1

    @property
    def feature_id(self) -> str:
        return self.entitlement.feature_id

    def to_dict(self) -> dict[str, Any]:
        """The wire form (the reference's ``EntitlementSource``)."""
        e = self.entitlement
        return {
            "entitlement_id": e.id,
            "entity_id": self.entity_id,
            "entity_name": self.entity_name,
            "entity_type": self.entity_type.value,
            "is_enabled": e.is_enabled,
            "quantity": self.quantity,
            "static_value": e.static_value,
            "config_value": e.config_value,
            "subscription_id": self.subscription_id,
            "usage_limit": e.usage_limit,
            "usage_reset_period": e.usage_reset_period.value if e.usage_reset_period else None,
        }


@dataclass(frozen=True, slots=True)
class AggregatedBucket:
    """A metered source carrying a usage grant (``grant_quota``), as the aggregate lists it."""

    entitlement_id: str
    source_entity_id: str
    usage_limit: int | None
    grant_measure: str | None
    grant_quota: int | None
    grant_duration_unit: str | None
    grant_duration_value: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "entitlement_id": self.entitlement_id,
            "source_entity_id": self.source_entity_id,
            "usage_limit": self.usage_limit,
            "grant_measure": self.grant_measure,
            "grant_quota": None if self.grant_quota is None else str(self.grant_quota),
            "grant_duration_unit": self.grant_duration_unit,
            "grant_duration_value": self.grant_duration_value,
        }


@dataclass(frozen=True, slots=True)
class AggregatedEntitlement:
    """One feature's grants summed up (the reference's ``AggregatedEntitlement``). ``usage_limit``
    ``None`` is unlimited (metered features only)."""

    is_enabled: bool
    usage_limit: int | None = None
    usage_reset_period: UsageResetPeriod | None = None
    is_soft_limit: bool = False
    static_values: tuple[str, ...] = ()
    config_values: tuple[dict[str, Any], ...] = ()
    aggregation_mode: EntitlementAggregationMode | None = None
    buckets: tuple[AggregatedBucket, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "is_enabled": self.is_enabled,
            "usage_limit": self.usage_limit,
            "usage_reset_period": self.usage_reset_period.value if self.usage_reset_period else None,
            "is_soft_limit": self.is_soft_limit,
            "static_values": list(self.static_values),
            "config_values": [dict(value) for value in self.config_values],
            "aggregation_mode": self.aggregation_mode.value if self.aggregation_mode else None,
            "buckets": [bucket.to_dict() for bucket in self.buckets],
        }


@dataclass(frozen=True, slots=True)
class AggregatedFeature:
    """A feature, what its sources grant together, and the sources (the reference's
    ``AggregatedFeature``)."""

    feature: Feature
    entitlement: AggregatedEntitlement
    sources: tuple[EntitlementSource, ...]

    @property
    def subscription_ids(self) -> tuple[str, ...]:
        """The subscriptions whose sources grant the feature (enabled ones), in source order."""
        return tuple(dict.fromkeys(s.subscription_id for s in self.sources if s.entitlement.is_enabled))

    def to_dict(self) -> dict[str, Any]:
        return {
            "feature": self.feature.to_dict(),
            "entitlement": self.entitlement.to_dict(),
            "sources": [source.to_dict() for source in self.sources],
        }


def in_force(entitlement: Entitlement, now: datetime) -> bool:
    """Whether ``entitlement``'s own ``[start_date, end_date)`` (open ends allowed) holds ``now``."""
    if entitlement.start_date is not None and now < entitlement.start_date:
        return False
    return entitlement.end_date is None or now < entitlement.end_date


def _ordered(entitlements: Iterable[Entitlement]) -> list[Entitlement]:
    return sorted(entitlements, key=lambda e: (e.display_order, e.created_at, e.id))


def subscription_sources(
    *,
    subscription_id: str,
    subscription_name: str,
    plan: tuple[str, str, Sequence[Entitlement]],
    addons: Sequence[tuple[str, str, int, Sequence[Entitlement]]],
    overrides: Sequence[Entitlement],
) -> list[EntitlementSource]:
    """The sources of one subscription, in order (see the module doc).

    ``plan``: (plan id, plan name, its entitlements); ``addons``: (add-on id, name, active
    associations, its entitlements) in association order; ``overrides``: the subscription's own
    entitlements. Entitlements are taken as given (the caller keeps only live ones in force).

    Example: plan grants 1,000 calls (``ent_p``), an override with parent ``ent_p`` grants 5,000:
    one source, the override's, of quantity 1.
    """
    plan_id, plan_name, plan_entitlements = plan
    sources = [
        EntitlementSource(e, EntitlementSourceType.PLAN, plan_id, plan_name, subscription_id)
        for e in _ordered(plan_entitlements)
    ]
    for addon_id, addon_name, count, entitlements in addons:
        if count < 1:
            continue
        sources += [
            EntitlementSource(e, EntitlementSourceType.ADDON, addon_id, addon_name, subscription_id, count)
            for e in _ordered(entitlements)
        ]
    position = {source.entitlement.id: i for i, source in enumerate(sources)}
    newest: dict[str, Entitlement] = {}
    added: list[Entitlement] = []
    for override in sorted(overrides, key=lambda e: (e.created_at, e.id)):
        parent = override.parent_entitlement_id
        if parent is None:
            added.append(override)
        elif parent in position:
            newest[parent] = override  # sorted oldest first: the newest is kept
    for parent, override in newest.items():
        i = position[parent]
        sources[i] = EntitlementSource(
            override,
            EntitlementSourceType.SUBSCRIPTION,
            subscription_id,
            subscription_name,
            subscription_id,
            sources[i].quantity,
        )
    sources += [
        EntitlementSource(
            e, EntitlementSourceType.SUBSCRIPTION, subscription_id, subscription_name, subscription_id
        )
        for e in _ordered(added)
    ]
    return sources


def aggregate_feature(feature: Feature, sources: Sequence[EntitlementSource]) -> AggregatedFeature:
    """The aggregate of ``sources`` (all of ``feature``) by the rules of the module doc.

    Example (metered): sources plan 1,000 (hard, MONTHLY), add-on 500 x 2 (soft) -> enabled,
    limit 2,000, soft, MONTHLY; with a third source unlimited -> limit ``None``.
    """
    enabled = [s for s in sources if s.entitlement.is_enabled]
    if feature.type is FeatureType.METERED:
        return AggregatedFeature(feature, _metered(enabled), tuple(sources))
    values = (
        tuple(
            dict.fromkeys(
                s.entitlement.static_value for s in enabled if s.entitlement.static_value is not None
            )
        )
        if feature.type is FeatureType.STATIC
        else ()
    )
    configs = (
        tuple(s.entitlement.config_value for s in enabled if s.entitlement.config_value is not None)
        if feature.type is FeatureType.CONFIG
        else ()
    )
    aggregate = AggregatedEntitlement(is_enabled=bool(enabled), static_values=values, config_values=configs)
    return AggregatedFeature(feature, aggregate, tuple(sources))


def _metered(enabled: Sequence[EntitlementSource]) -> AggregatedEntitlement:
    if not enabled:
        return AggregatedEntitlement(is_enabled=False, usage_limit=0)
    limit: int | None = 0
    for source in enabled:
        if source.entitlement.usage_limit is None:
            limit = None
            break
        assert limit is not None
        limit += source.entitlement.usage_limit * source.quantity
    reset = next(
        (s.entitlement.usage_reset_period for s in enabled if s.entitlement.usage_reset_period is not None),
        None,
    )
    buckets = tuple(
        AggregatedBucket(
            entitlement_id=s.entitlement.id,
            source_entity_id=s.entity_id,
            usage_limit=s.entitlement.usage_limit,
            grant_measure=s.entitlement.grant_measure.value if s.entitlement.grant_measure else None,
            grant_quota=s.entitlement.grant_quota,
            grant_duration_unit=(
                s.entitlement.grant_duration_unit.value if s.entitlement.grant_duration_unit else None
            ),
            grant_duration_value=s.entitlement.grant_duration_value,
        )
        for s in enabled
        if s.entitlement.grant_quota is not None
    )
    return AggregatedEntitlement(
        is_enabled=True,
        usage_limit=limit,
        usage_reset_period=reset,
        is_soft_limit=any(s.entitlement.is_soft_limit for s in enabled),
        aggregation_mode=EntitlementAggregationMode.ADDITIVE,
        buckets=buckets,
    )


def aggregate_sources(
    sources: Iterable[EntitlementSource],
    features: Mapping[str, Feature],
    *,
    feature_ids: Iterable[str] | None = None,
) -> list[AggregatedFeature]:
    """One :class:`AggregatedFeature` per feature of ``sources`` (in order of first appearance),
    for the features found in ``features`` (a missing or archived one grants nothing), optionally
    only those in ``feature_ids``."""
    wanted = None if feature_ids is None else set(feature_ids)
    by_feature: dict[str, list[EntitlementSource]] = {}
    for source in sources:
        feature_id = source.feature_id
        if feature_id in features and (wanted is None or feature_id in wanted):
            by_feature.setdefault(feature_id, []).append(source)
    return [aggregate_feature(features[fid], grouped) for fid, grouped in by_feature.items()]
