"""The free usage add-ons give a subscription's billing: their metered entitlements, while their
association is in force.

:func:`load_addon_allowances` reads, for a whole batch of subscriptions, their add-on associations
and those add-ons' metered entitlements in three statements (none when no subscription of the batch
has a metered line or an add-on), so the billing run never queries per subscription.
:func:`line_allowance` then gives one usage line its allowance: the plan's entitlement on the line's
meter plus every add-on entitlement on that meter whose association overlaps the line's usage
window, combined by :func:`billingkit.domain.allowances.combined_allowance` (limits add up,
unlimited wins). Example: plan 1,000 calls free, an add-on adds 500 from 10 May: May's 1,800 calls
bill 300 (soft limit); removed with effect 1 June, June's 1,800 calls bill 800.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from billingkit.domain.addon_associations import AddonAssociationEntityType, AddonStatus
from billingkit.domain.allowances import Allowance, AllowanceReset, combined_allowance
from billingkit.domain.catalog import Entitlement, Feature
from billingkit.domain.catalog.entitlements import EntitlementEntityType
from billingkit.domain.queries import Filter, Op
from billingkit.domain.subscription_addons import in_force
from billingkit.domain.subscriptions import Subscription
from billingkit.ports import UnitOfWork
from billingkit.services.records import list_where_in

__all__ = [
    "AddonAllowance",
    "AddonAllowances",
    "entitlement_allowance",
    "line_allowance",
    "load_addon_allowances",
]


@dataclass(frozen=True, slots=True)
class AddonAllowance:
    """An add-on's metered ``entitlement`` on a subscription, in force over ``[start, end)``
    (``end`` ``None``: until removed)."""

    start: datetime
    end: datetime | None
    entitlement: Entitlement


#: Subscription id -> meter id -> the add-on allowances on that meter.
AddonAllowances = dict[str, dict[str, tuple[AddonAllowance, ...]]]


def load_addon_allowances(uow: UnitOfWork, subscriptions: Sequence[Subscription]) -> AddonAllowances:
    """The add-on allowances of ``subscriptions`` (those with a metered line), by subscription and
    meter: one read of their associations, then (only if there are any) one of the add-ons'
    entitlements and one of their features. Associations awaiting payment (``pending``) give
    nothing; removed ones count until their ``end_date``."""
    ids = [sub.id for sub in subscriptions if any(line.meter_id for line in sub.line_items)]
    if not ids:
        return {}
    associations = [
        a
        for a in list_where_in(
            uow.addon_associations,
            "entity_id",
            ids,
            Filter("entity_type", Op.EQ, AddonAssociationEntityType.SUBSCRIPTION.value),
        )
        if a.addon_status is not AddonStatus.PENDING
    ]
    if not associations:
        return {}
    entitlements = list_where_in(
        uow.entitlements,
        "entity_id",
        {a.addon_id for a in associations},
        Filter("entity_type", Op.EQ, EntitlementEntityType.ADDON.value),
    )
    features: dict[str, Feature] = {
        f.id: f for f in uow.features.find_many({e.feature_id for e in entitlements})
    }
    by_addon: dict[str, list[tuple[str, Entitlement]]] = {}
    for entitlement in entitlements:
        feature = features.get(entitlement.feature_id)
        if feature is not None and feature.meter_id:
            by_addon.setdefault(entitlement.entity_id, []).append((feature.meter_id, entitlement))
    found: dict[str, dict[str, list[AddonAllowance]]] = {}
    for association in associations:
        for meter_id, entitlement in by_addon.get(association.addon_id, ()):
            meters = found.setdefault(association.entity_id, {})
            meters.setdefault(meter_id, []).append(
                AddonAllowance(association.start_date, association.end_date, entitlement)
            )
    return {sub_id: {m: tuple(a) for m, a in meters.items()} for sub_id, meters in found.items()}


def entitlement_allowance(entitlement: Entitlement) -> Allowance:
    """A metered entitlement as the allowance billing applies (its limit per billing period)."""
    limit = entitlement.usage_limit
    return Allowance(
        usage_limit=None if limit is None else Decimal(limit),
        is_soft_limit=entitlement.is_soft_limit,
        is_enabled=entitlement.is_enabled,
        usage_reset_period=AllowanceReset.BILLING_PERIOD,
    )


def line_allowance(
    plan_entitlement: Entitlement | None,
    addons: Sequence[AddonAllowance],
    window: tuple[datetime, datetime] | None,
    sub: Subscription,
    supported: Callable[[Entitlement, Subscription], bool],
    overrides: Mapping[str, Entitlement] | None = None,
) -> Allowance | None:
    """The allowance of a usage line of ``sub`` measured over ``window``: the plan's entitlement
    on its meter and the ``addons``' in force over the window, each replaced by the subscription's
    override of it when ``overrides`` (overridden entitlement id -> override) has one, those
    ``supported`` billing can apply, combined; ``None`` when there is none."""
    sources: list[Entitlement] = []
    if plan_entitlement is not None:
        sources.append(plan_entitlement)
    if addons and window is not None:
        sources += [a.entitlement for a in addons if in_force(a.start, a.end, window[0], window[1])]
    if overrides:
        sources = [overrides.get(e.id, e) for e in sources]
    return combined_allowance(entitlement_allowance(e) for e in sources if supported(e, sub))
