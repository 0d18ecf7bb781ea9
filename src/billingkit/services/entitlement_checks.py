"""The in-process entitlement check: ``scoped.entitlements.check(customer, feature)``.

``customer`` is billingkit's customer id or, when no customer has that id, an external id;
``feature`` is a feature id or, when no feature has that id, a lookup key. The answer
(:class:`~billingkit.domain.entitlement_checks.EntitlementCheck`) says whether the customer may use
the feature now, and for a metered feature its usage in the current window against the limit its
granting subscriptions add up to (rules in :mod:`billingkit.domain.entitlement_checks`).

Made to be called on every request of the host's product: with the cache
(:mod:`billingkit.services.entitlement_cache`) warm, a check is one statement (the usage since
the cached part of the window was measured), none for a feature without a meter. A cold check
reads the customer's grants in a fixed number of statements.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from billingkit.domain.access import Action
from billingkit.domain.catalog import Feature, FeatureType, ResetUsage
from billingkit.domain.entitlement_checks import EntitlementCheck, is_allowed, splits_in_time, usage_window
from billingkit.domain.money import ZERO
from billingkit.domain.resources import Status
from billingkit.domain.usage import EXACT, UsageQuery
from billingkit.errors import NotFound
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.entitlement_cache import CustomerGrants, EntitlementCache, FeatureGrant, UsageHead
from billingkit.services.subscription_entitlements import (
    find_customer_by_reference,
    granting_subscriptions,
    load_entitlement_sources,
)

__all__ = ["LATE_EVENT_GRACE", "check_entitlement", "find_feature_by_reference", "load_customer_grants"]

#: Events stamped up to this long before they are stored still count at once: a usage head stops
#: this long before the instant it was measured, and the rest of the window is read every check.
LATE_EVENT_GRACE = timedelta(seconds=60)


def find_feature_by_reference(uow: UnitOfWork, reference: str) -> Feature:
    """The live feature with id ``reference``, else with that lookup key; ``NotFound`` if none."""
    feature = uow.features.find(reference)
    if feature is None or feature.status is not Status.PUBLISHED:
        feature = uow.features.find_one(lookup_key=reference)
    if feature is None or feature.status is not Status.PUBLISHED:
        raise NotFound(f"feature {reference} not found")
    return feature


def load_customer_grants(uow: UnitOfWork, reference: str, *, now: datetime, ttl: timedelta) -> CustomerGrants:
    """What the customer named ``reference`` is entitled to at ``now``, valid for ``ttl`` or until
    the first instant the loaded data changes by itself, whichever comes first."""
    customer = find_customer_by_reference(uow, reference)
    granting, every = granting_subscriptions(uow, customer.id, now)
    loaded = load_entitlement_sources(uow, granting, now=now, names=False)
    aggregated = loaded.aggregated([sub.id for sub in granting])
    subscriptions = {sub.id: sub for sub in granting}
    meters = {
        m.id: m
        for m in uow.meters.find_many(
            a.feature.meter_id for a in aggregated if a.feature.meter_id and a.entitlement.is_enabled
        )
    }
    features: dict[str, FeatureGrant] = {}
    instants = [now + ttl, loaded.changes_at]
    for granted in aggregated:
        feature = granted.feature
        meter = meters.get(feature.meter_id or "")
        grant = FeatureGrant(feature, granted)
        if feature.type is FeatureType.METERED and granted.entitlement.is_enabled and meter is not None:
            window = usage_window(
                subscriptions[granted.subscription_ids[0]],
                granted.entitlement.usage_reset_period,
                cumulative_meter=meter.reset_usage is ResetUsage.NEVER,
                now=now,
            )
            grant = FeatureGrant(feature, granted, window, meter.to_spec(), meter.id)
            instants.append(window.end)
        features[feature.id] = grant
        if feature.lookup_key:
            features[feature.lookup_key] = grant
    instants += [at for sub in every for at in (sub.start_date, sub.end_date, sub.cancel_at)]
    instants += [sub.current_period_end for sub in granting]
    expires_at = min(at for at in instants if at is not None and at > now) if ttl > timedelta(0) else now
    return CustomerGrants(customer.id, customer.external_id, features, expires_at)


def _measure(
    uow: UnitOfWork,
    cache: EntitlementCache | None,
    ttl: timedelta,
    ctx: Context,
    grants: CustomerGrants,
    grant: FeatureGrant,
) -> Decimal:
    """The customer's usage of ``grant``'s meter in its window: the cached head (the window up to
    :data:`LATE_EVENT_GRACE` before it was measured) plus the rest of the window read now, in one
    statement; the whole window when the meter does not split or nothing is cached."""
    window, meter = grant.window, grant.meter
    assert window is not None and meter is not None
    customers = frozenset((grants.external_id,))
    now = ctx.now
    if cache is None or not splits_in_time(meter):
        (whole,) = uow.usage.aggregate([UsageQuery(meter, window.start, window.end, customers)])
        return whole.value
    key = (
        ctx.tenant_id,
        ctx.environment_id,
        grants.external_id,
        grant.meter_id,
        meter,
        window.start,
        window.end,
    )
    head = cache.usage_head(key, now)
    if head is not None:
        (tail,) = uow.usage.aggregate([UsageQuery(meter, head.until, window.end, customers)])
        return EXACT.add(head.value, tail.value)
    until = min(max(window.start, now - LATE_EVENT_GRACE), window.end)
    if until <= window.start or until >= window.end:
        (whole,) = uow.usage.aggregate([UsageQuery(meter, window.start, window.end, customers)])
        return whole.value
    tail, first = uow.usage.aggregate(
        [UsageQuery(meter, until, window.end, customers), UsageQuery(meter, window.start, until, customers)]
    )
    cache.keep_usage_head(key, UsageHead(first.value, until, min(now + ttl, window.end)))
    return EXACT.add(first.value, tail.value)


def check_entitlement(
    uow: UnitOfWork, ctx: Context, *, customer: str, feature: str, cache: EntitlementCache | None = None
) -> EntitlementCheck:
    """May ``customer`` (id or external id) use ``feature`` (id or lookup key) now? See the module
    doc. ``NotFound`` for an unknown customer or feature. With ``cache`` (``Billing`` passes its
    own), grants and the early part of usage windows are reused for ``settings.entitlement_cache_ttl``."""
    ctx.require("entitlement", Action.READ)
    now = ctx.now
    ttl = ctx.settings.entitlement_cache_ttl if cache is not None else timedelta(0)
    active = cache if ttl > timedelta(0) else None
    scope = (ctx.tenant_id, ctx.environment_id)
    grants = active.grants(scope, customer, now) if active is not None else None
    if grants is None:
        grants = load_customer_grants(uow, customer, now=now, ttl=ttl)
        if active is not None:
            active.keep_grants(scope, customer, grants)
    grant = grants.features.get(feature)
    if grant is None:
        found = find_feature_by_reference(uow, feature)
        grant = grants.features.get(found.id) or FeatureGrant(found)
        if active is not None:
            active.add_feature(grants, {feature, found.id}, grant)
    granted = grant.granted
    kind = grant.feature.type
    if granted is None or not granted.entitlement.is_enabled:
        return EntitlementCheck(
            customer_id=grants.customer_id,
            feature_id=grant.feature.id,
            feature_type=kind,
            allowed=False,
            is_enabled=False,
            limit=ZERO if kind is FeatureType.METERED else None,
        )
    aggregate = granted.entitlement
    usage = _measure(uow, active, ttl, ctx, grants, grant) if grant.window is not None else ZERO
    metered = kind is FeatureType.METERED
    return EntitlementCheck(
        customer_id=grants.customer_id,
        feature_id=grant.feature.id,
        feature_type=kind,
        allowed=is_allowed(aggregate, kind, usage),
        is_enabled=True,
        usage=usage,
        limit=Decimal(aggregate.usage_limit) if metered and aggregate.usage_limit is not None else None,
        is_soft_limit=aggregate.is_soft_limit,
        usage_reset_period=aggregate.usage_reset_period,
        window_start=grant.window.start if grant.window else None,
        window_end=grant.window.end if grant.window else None,
        subscription_ids=granted.subscription_ids,
        static_values=aggregate.static_values,
        config_values=aggregate.config_values,
    )
