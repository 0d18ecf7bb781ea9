"""A catalogue with entitlements of every feature type, shared by the entitlement tests.

Plan ``Pro`` (monthly, 20.00 usd in advance) grants: 1,000 ``calls`` a month (hard), ``sso``,
``tier`` "gold" (static) and ``regions`` {"storage": {"region": "eu"}} (config). Add-on ``Boost`` grants 500
``calls`` (soft) and ``tier`` "platinum"; add-on ``Unlimited`` grants unlimited ``calls``. The
customer ``ada`` subscribes to Pro at the clock's instant (2026-05-01 09:30 UTC in the tests).

Add-on associations and subscription overrides are written straight to storage (their create
paths belong to other parts): :func:`attach_addon` and :func:`add_override`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from billingkit import Scoped, Subscription
from billingkit.domain.addon_associations import AddonAssociation
from billingkit.domain.catalog import Entitlement
from billingkit.testing.contracts.storage import sample

MONTHLY_FEE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "20.00",
    "currency": "usd",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
}


@dataclass
class EntitlementCatalogue:
    scoped: Scoped
    meter_id: str
    calls: str
    sso: str
    tier: str
    regions: str
    plan_id: str
    boost: str
    unlimited: str
    customer_id: str
    subscription: Subscription

    def plan_entitlement(self, feature_id: str) -> Entitlement:
        (found,) = [e for e in self.scoped.plans.entitlements(self.plan_id) if e.feature_id == feature_id]
        return found

    def addon_entitlement(self, addon_id: str, feature_id: str) -> Entitlement:
        (found,) = [e for e in self.scoped.addons.entitlements(addon_id) if e.feature_id == feature_id]
        return found


def build_catalogue(scoped: Scoped, *, external_id: str = "ada") -> EntitlementCatalogue:
    meter = scoped.meters.create(name="Calls", event_name="api.call", aggregation={"type": "COUNT"})
    calls = scoped.features.create(name="API calls", type="metered", meter_id=meter.id, lookup_key="calls")
    sso = scoped.features.create(name="SSO", type="boolean", lookup_key="sso")
    tier = scoped.features.create(name="Support tier", type="static", lookup_key="tier")
    regions = scoped.features.create(name="Regions", type="config", lookup_key="regions")
    plan = scoped.plans.create(
        name="Pro",
        prices=[MONTHLY_FEE],
        entitlements=[
            {"feature_id": calls.id, "usage_limit": 1000, "usage_reset_period": "MONTHLY"},
            {"feature_id": sso.id},
            {"feature_id": tier.id, "static_value": "gold"},
            {"feature_id": regions.id, "config_value": {"storage": {"region": "eu"}}},
        ],
    )
    boost = scoped.addons.create(
        name="Boost",
        lookup_key="boost",
        entitlements=[
            {
                "feature_id": calls.id,
                "usage_limit": 500,
                "usage_reset_period": "MONTHLY",
                "is_soft_limit": True,
            },
            {"feature_id": tier.id, "static_value": "platinum"},
        ],
    )
    unlimited = scoped.addons.create(
        name="Unlimited", lookup_key="unlimited", entitlements=[{"feature_id": calls.id, "usage_limit": None}]
    )
    customer = scoped.customers.create(external_id=external_id, name=external_id.title())
    sub = scoped.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    return EntitlementCatalogue(
        scoped,
        meter.id,
        calls.id,
        sso.id,
        tier.id,
        regions.id,
        plan.id,
        boost.id,
        unlimited.id,
        customer.id,
        sub,
    )


def _store(scoped: Scoped, kind: str, **fields: Any) -> Any:
    item = sample(kind, scoped.tenant_id, str(scoped.environment_id), **fields)
    with scoped.billing.storage.unit_of_work(scoped.tenant_id, scoped.environment_id) as uow:
        getattr(uow, kind).add(item)
        uow.commit()
    return item


def attach_addon(
    scoped: Scoped, subscription_id: str, addon_id: str, start: datetime, **fields: Any
) -> AddonAssociation:
    """An add-on association of the shared representation (entity_type subscription)."""
    association: AddonAssociation = _store(
        scoped,
        "addon_associations",
        entity_id=subscription_id,
        entity_type="subscription",
        addon_id=addon_id,
        start_date=start,
        **fields,
    )
    return association


def add_override(
    scoped: Scoped, subscription_id: str, feature_id: str, feature_type: str, **fields: Any
) -> Entitlement:
    """A subscription-owned entitlement (an override when ``parent_entitlement_id`` is given)."""
    entitlement: Entitlement = _store(
        scoped,
        "entitlements",
        entity_type="SUBSCRIPTION",
        entity_id=subscription_id,
        plan_id=None,
        feature_id=feature_id,
        feature_type=feature_type,
        config_value=None,
        **fields,
    )
    return entitlement
