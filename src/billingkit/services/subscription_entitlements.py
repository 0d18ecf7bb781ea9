"""Subscription and customer entitlements: every feature a subscription (or a customer's granting
subscriptions) is entitled to, aggregated with its sources (:mod:`billingkit.domain.entitlement_aggregation`
has the rules).

Reads:

- :func:`get_subscription_entitlements`: ``GET /subscriptions/{id}/entitlements``, optionally only
  some ``feature_ids``; any subscription status (what it includes).
- :func:`search_subscriptions_with_entitlements`: ``POST /subscriptions/search`` with ``expand``
  naming ``entitlements``: each subscription of the page with its aggregated features.
- :func:`get_customer_entitlements`: ``GET /customers/{id}/entitlements``: the customer's granting
  subscriptions (active or trialing, now within their dates) and their features aggregated
  together; optional ``feature_ids`` and ``subscription_ids``.

Sources in force at the call's instant only: live entitlements whose own ``[start_date,
end_date)`` holds it, and add-on associations within their dates (a removed association counts
until its ``end_date``, as billing counts it; a pending one does not). Whatever the
number of subscriptions, loading them is a fixed number of statements
(:func:`load_entitlement_sources`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.addon_associations import AddonAssociation, AddonAssociationEntityType, AddonStatus
from billingkit.domain.catalog import Entitlement, EntitlementEntityType, Feature
from billingkit.domain.customers import Customer
from billingkit.domain.entitlement_aggregation import (
    AggregatedFeature,
    EntitlementSource,
    aggregate_sources,
    in_force,
    subscription_sources,
)
from billingkit.domain.entitlement_checks import grants_now
from billingkit.domain.queries import Filter, Op, Page
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription
from billingkit.errors import NotFound
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import get_live, list_where_in
from billingkit.services.subscriptions import SubscriptionSearch, search_subscriptions

__all__ = [
    "CustomerEntitlements",
    "EntitlementSources",
    "SubscriptionEntitlements",
    "SubscriptionWithEntitlements",
    "expands_entitlements",
    "find_customer_by_reference",
    "get_customer_entitlements",
    "get_subscription_entitlements",
    "granting_subscriptions",
    "load_entitlement_sources",
    "search_subscriptions_with_entitlements",
]


@dataclass(frozen=True, slots=True)
class SubscriptionEntitlements:
    """The reference's ``SubscriptionEntitlementsResponse``."""

    subscription_id: str
    plan_id: str
    features: tuple[AggregatedFeature, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "subscription_id": self.subscription_id,
            "plan_id": self.plan_id,
            "features": [feature.to_dict() for feature in self.features],
        }


@dataclass(frozen=True, slots=True)
class CustomerEntitlements:
    """The reference's ``CustomerEntitlementsResponse``: ``subscriptions`` are the granting ones
    the features were aggregated from."""

    customer_id: str
    features: tuple[AggregatedFeature, ...]
    subscriptions: tuple[Subscription, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "customer_id": self.customer_id,
            "features": [feature.to_dict() for feature in self.features],
            "subscriptions": [sub.to_dict() for sub in self.subscriptions],
        }


@dataclass(frozen=True, slots=True)
class SubscriptionWithEntitlements:
    """A subscription of a search page with its aggregated features (``expand=entitlements``)."""

    subscription: Subscription
    entitlements: tuple[AggregatedFeature, ...]

    def to_dict(self, *, line_items: bool = True) -> dict[str, Any]:
        data = self.subscription.to_dict(line_items=line_items)
        data["entitlements"] = [feature.to_dict() for feature in self.entitlements]
        return data


@dataclass(frozen=True, slots=True)
class EntitlementSources:
    """What :func:`load_entitlement_sources` read: each subscription's sources in order, the live
    features they name, and ``changes_at``, the first instant after the read at which one of the
    loaded rows starts or stops being in force by its own dates (``None``: none does)."""

    sources: dict[str, list[EntitlementSource]]
    features: dict[str, Feature]
    changes_at: datetime | None

    def aggregated(
        self, subscription_ids: Iterable[str], feature_ids: Iterable[str] | None = None
    ) -> list[AggregatedFeature]:
        """The features of these subscriptions' sources, aggregated together (in order)."""
        sources = [source for sub_id in subscription_ids for source in self.sources.get(sub_id, ())]
        return aggregate_sources(sources, self.features, feature_ids=feature_ids)


def _association_in_force(association: AddonAssociation, now: datetime) -> bool:
    return (
        association.addon_status is not AddonStatus.PENDING
        and association.start_date <= now
        and (association.end_date is None or now < association.end_date)
    )


def _first_change(instants: Iterable[datetime | None], now: datetime) -> datetime | None:
    return min((at for at in instants if at is not None and at > now), default=None)


def load_entitlement_sources(
    uow: UnitOfWork, subscriptions: Sequence[Subscription], *, now: datetime, names: bool = True
) -> EntitlementSources:
    """The entitlement sources of ``subscriptions`` at ``now``: a fixed number of statements for
    any number of subscriptions (active add-on associations; every plan, add-on and override
    entitlement in one ``IN``; their features; with ``names``, the plans' and add-ons' names,
    else sources are named by id)."""
    sub_ids = [sub.id for sub in subscriptions]
    associations = list_where_in(
        uow.addon_associations,
        "entity_id",
        sub_ids,
        Filter("entity_type", Op.EQ, AddonAssociationEntityType.SUBSCRIPTION.value),
        Filter("addon_status", Op.IN, [AddonStatus.ACTIVE.value, AddonStatus.CANCELLED.value]),
    )
    current = sorted(
        (a for a in associations if _association_in_force(a, now)), key=lambda a: (a.start_date, a.id)
    )
    plan_ids = {sub.plan_id for sub in subscriptions}
    addon_ids = {a.addon_id for a in current}
    rows = list_where_in(uow.entitlements, "entity_id", plan_ids | addon_ids | set(sub_ids))
    owned: dict[tuple[EntitlementEntityType, str], list[Entitlement]] = {}
    for row in rows:
        if in_force(row, now):
            owned.setdefault((row.entity_type, row.entity_id), []).append(row)
    features = {
        f.id: f for f in uow.features.find_many({e.feature_id for e in rows}) if f.status is Status.PUBLISHED
    }
    plan_names = {p.id: p.name for p in uow.plans.find_many(plan_ids)} if names else {}
    addon_names = {a.id: a.name for a in uow.addons.find_many(addon_ids)} if names else {}

    by_sub: dict[str, dict[str, list[AddonAssociation]]] = {}
    for association in current:
        by_sub.setdefault(association.entity_id, {}).setdefault(association.addon_id, []).append(association)
    sources: dict[str, list[EntitlementSource]] = {}
    for sub in subscriptions:
        addons = [
            (
                addon_id,
                addon_names.get(addon_id, addon_id),
                len(group),
                owned.get((EntitlementEntityType.ADDON, addon_id), []),
            )
            for addon_id, group in by_sub.get(sub.id, {}).items()
        ]
        sources[sub.id] = subscription_sources(
            subscription_id=sub.id,
            subscription_name=sub.lookup_key or sub.id,
            plan=(
                sub.plan_id,
                plan_names.get(sub.plan_id, sub.plan_id),
                owned.get((EntitlementEntityType.PLAN, sub.plan_id), []),
            ),
            addons=addons,
            overrides=owned.get((EntitlementEntityType.SUBSCRIPTION, sub.id), []),
        )
    changes_at = _first_change(
        [
            *(at for row in rows for at in (row.start_date, row.end_date)),
            *(a.end_date for a in associations),
            *(at for sub in subscriptions for at in (sub.start_date, sub.end_date, sub.cancel_at)),
        ],
        now,
    )
    return EntitlementSources(sources, features, changes_at)


def get_subscription_entitlements(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, feature_ids: Sequence[str] | None = None
) -> SubscriptionEntitlements:
    """The subscription's features aggregated with their sources (only ``feature_ids`` when
    given). ``NotFound`` for an unknown subscription."""
    ctx.require("subscription", Action.READ)
    sub = get_live(uow.subscriptions, "subscription", subscription_id)
    loaded = load_entitlement_sources(uow, [sub], now=ctx.now)
    wanted = list(feature_ids) if feature_ids else None
    return SubscriptionEntitlements(sub.id, sub.plan_id, tuple(loaded.aggregated([sub.id], wanted)))


def expands_entitlements(expand: str | None) -> bool:
    """Whether a search's ``expand`` (a comma list) names ``entitlements``."""
    return "entitlements" in {part.strip().lower() for part in (expand or "").split(",")}


def search_subscriptions_with_entitlements(
    uow: UnitOfWork, ctx: Context, *, search: SubscriptionSearch
) -> Page[SubscriptionWithEntitlements]:
    """:func:`~billingkit.services.subscriptions.search_subscriptions`, each subscription with its
    aggregated features (one load for the whole page)."""
    page = search_subscriptions(uow, ctx, search=search)
    loaded = load_entitlement_sources(uow, page.items, now=ctx.now)
    items = [SubscriptionWithEntitlements(sub, tuple(loaded.aggregated([sub.id]))) for sub in page.items]
    return Page(items=items, total=page.total, limit=page.limit, offset=page.offset)


def find_customer_by_reference(uow: UnitOfWork, reference: str) -> Customer:
    """The live customer with id ``reference``, else with that external id; ``NotFound`` if none."""
    customer = uow.customers.find(reference)
    if customer is None or customer.status is not Status.PUBLISHED:
        customer = uow.customers.find_one(external_id=reference)
    if customer is None or customer.status is not Status.PUBLISHED:
        raise NotFound(f"customer {reference} not found")
    return customer


def granting_subscriptions(
    uow: UnitOfWork, customer_id: str, now: datetime
) -> tuple[list[Subscription], list[Subscription]]:
    """The customer's live subscriptions that grant at ``now`` (oldest start first), and all its
    live subscriptions (to know when a future one starts granting)."""
    subs = sorted(
        list_where_in(uow.subscriptions, "customer_id", [customer_id]), key=lambda s: (s.start_date, s.id)
    )
    return [sub for sub in subs if grants_now(sub, now)], subs


def get_customer_entitlements(
    uow: UnitOfWork,
    ctx: Context,
    *,
    customer_id: str,
    feature_ids: Sequence[str] | None = None,
    subscription_ids: Sequence[str] | None = None,
    external: bool = False,
) -> CustomerEntitlements:
    """The features of the customer's granting subscriptions (only ``subscription_ids`` among
    them when given), aggregated together, only ``feature_ids`` when given. ``customer_id`` is
    billingkit's id, or with ``external`` the customer's external id. ``NotFound`` for an unknown
    customer."""
    ctx.require("customer", Action.READ)
    ctx.require("subscription", Action.READ)
    if external:
        customer = uow.customers.find_one(external_id=customer_id)
        if customer is None:
            raise NotFound(f"customer with external id {customer_id!r} not found")
    else:
        customer = get_live(uow.customers, "customer", customer_id)
    granting, _ = granting_subscriptions(uow, customer.id, ctx.now)
    if subscription_ids:
        wanted = set(subscription_ids)
        granting = [sub for sub in granting if sub.id in wanted]
    loaded = load_entitlement_sources(uow, granting, now=ctx.now)
    features = loaded.aggregated([sub.id for sub in granting], list(feature_ids) if feature_ids else None)
    return CustomerEntitlements(customer.id, tuple(features), tuple(granting))
