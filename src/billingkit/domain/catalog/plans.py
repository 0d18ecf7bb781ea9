"""Plans and add-ons: named bundles that own prices, entitlements and credit grants."""

from __future__ import annotations

from typing import Any

from billingkit.domain.resources import EnvironmentResource

__all__ = ["Addon", "Plan"]


class Plan(EnvironmentResource):
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
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<Addon {self.id} {self.name!r}>"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
