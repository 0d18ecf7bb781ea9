"""Plans and add-ons: named bundles that own prices, entitlements and credit grants."""

from __future__ import annotations

from typing import Any

from billingkit.domain.catalog.credit_grants import CreditGrant
from billingkit.domain.catalog.entitlements import Entitlement
from billingkit.domain.catalog.prices import Price
from billingkit.domain.display import Displayed
from billingkit.domain.resources import EnvironmentResource

__all__ = ["Addon", "AddonDetail", "Plan", "PlanDetail"]


class Plan(Displayed, EnvironmentResource):
    """What a customer subscribes to. Its prices, entitlements and credit grants are separate
    resources that name the plan as their owner (``entity_type="PLAN"``, ``entity_id=plan.id``)."""

    name: str
    description: str | None = None
    lookup_key: str | None = None
    display_order: int = 0
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<Plan {self.id} {self.name!r}>"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class Addon(EnvironmentResource):
    """Something sold on top of a plan; owns prices, entitlements and credit grants like a plan."""

    name: str
    lookup_key: str
    description: str | None = None
    metadata: dict[str, Any] = {}  # any JSON values, as the reference allows for add-ons

    def __repr__(self) -> str:
        return f"<Addon {self.id} {self.name!r}>"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _with_items(data: dict[str, Any], owner: PlanDetail | AddonDetail) -> dict[str, Any]:
    data["prices"] = [price.to_dict() for price in owner.prices]
    data["entitlements"] = [item.to_dict() for item in owner.entitlements]
    data["credit_grants"] = [grant.to_dict() for grant in owner.credit_grants]
    return data


class PlanDetail(Plan):
    """A plan as reads return it: with its live prices, entitlements and credit grants (those are
    separate resources; the plan row does not store them)."""

    prices: tuple[Price, ...] = ()
    entitlements: tuple[Entitlement, ...] = ()
    credit_grants: tuple[CreditGrant, ...] = ()

    def plan(self) -> Plan:
        """The stored plan without its items."""
        return Plan.model_validate(self.model_dump(include=set(Plan.model_fields)))

    def to_dict(self) -> dict[str, Any]:
        return _with_items(self.plan().to_dict(), self)


class AddonDetail(Addon):
    """An add-on with its live prices, entitlements and credit grants."""

    prices: tuple[Price, ...] = ()
    entitlements: tuple[Entitlement, ...] = ()
    credit_grants: tuple[CreditGrant, ...] = ()

    def addon(self) -> Addon:
        """The stored add-on without its items."""
        return Addon.model_validate(self.model_dump(include=set(Addon.model_fields)))

    def to_dict(self) -> dict[str, Any]:
        return _with_items(self.addon().to_dict(), self)
