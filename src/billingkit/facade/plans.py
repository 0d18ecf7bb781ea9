"""``scoped.plans``."""

from __future__ import annotations

import builtins
from typing import Any

from billingkit.domain.catalog import CreditGrant, Entitlement, Plan, PlanDetail
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import plans as svc

__all__ = ["Plans"]


class Plans:
    """Plans of one environment. Pass a request model or its fields as keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.PlanCreate | None = None, /, **fields: Any) -> PlanDetail:
        """Create a plan, optionally with its ``prices``, ``entitlements`` and ``credit_grants``
        (lists of their create fields, without the owner). Fields: ``name`` (required),
        ``description``, ``lookup_key`` (unique among live plans), ``display_order``, ``metadata``.
        All or nothing: an invalid item raises ``ValidationError`` on e.g. ``prices[1].meter_id``.

        Example::

            plan = scoped.plans.create(name="Pro", lookup_key="pro", prices=[{
                "type": "FIXED", "billing_model": "FLAT_FEE", "amount": "49", "currency": "usd",
                "billing_period": "MONTHLY", "invoice_cadence": "ADVANCE"}])
        """
        data = request or parse_input(svc.PlanCreate, fields)
        return self._s.run(svc.create_plan, data=data)

    def get(self, plan_id: str) -> PlanDetail:
        """The live plan with its current prices, entitlements and credit grants."""
        return self._s.run(svc.get_plan, plan_id=plan_id)

    def update(self, plan_id: str, request: svc.PlanUpdate | None = None, /, **fields: Any) -> PlanDetail:
        """Change ``name``, ``description``, ``lookup_key``, ``display_order`` or ``metadata``."""
        data = request or parse_input(svc.PlanUpdate, fields)
        return self._s.run(svc.update_plan, plan_id=plan_id, data=data)

    def delete(self, plan_id: str) -> Plan:
        """Archive the plan together with its prices, entitlements and credit grants."""
        return self._s.run(svc.delete_plan, plan_id=plan_id)

    def clone(self, plan_id: str, request: svc.PlanClone | None = None, /, **fields: Any) -> PlanDetail:
        """Copy the plan and its current items: ``name`` (different) and ``lookup_key`` required."""
        data = request or parse_input(svc.PlanClone, fields)
        return self._s.run(svc.clone_plan, plan_id=plan_id, data=data)

    def list(self, request: svc.PlanSearch | None = None, /, **fields: Any) -> Page[PlanDetail]:
        """A page of plans. Filters ``plan_ids``, ``lookup_key``, ``metadata``; ``expand`` with
        ``prices``, ``entitlements``, ``credit_grants`` fills those in."""
        data = request or parse_input(svc.PlanSearch, fields)
        return self._s.run(svc.search_plans, search=data)

    search = list

    def entitlements(self, plan_id: str) -> builtins.list[Entitlement]:
        return self._s.run(svc.plan_entitlements, plan_id=plan_id)

    def credit_grants(self, plan_id: str) -> builtins.list[CreditGrant]:
        return self._s.run(svc.plan_credit_grants, plan_id=plan_id)
