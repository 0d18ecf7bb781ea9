"""``scoped.entitlements``."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from billingkit.domain.catalog import Entitlement
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import entitlements as svc

__all__ = ["Entitlements"]


class Entitlements:
    """Entitlements of plans and add-ons in one environment. Pass a request model or its fields as
    keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.EntitlementCreate | None = None, /, **fields: Any) -> Entitlement:
        """Fields: ``feature_id`` (a live feature; the type is taken from it), the owner as
        ``entity_type`` (``PLAN`` default or ``ADDON``) and ``entity_id`` (or just ``plan_id``),
        ``is_enabled``, ``usage_limit``, ``usage_reset_period``, ``is_soft_limit``, ``static_value``,
        ``config_value``, ``aggregation_mode``, the ``grant_*`` fields, ``parent_entitlement_id``,
        ``display_order``, ``start_date``, ``end_date``.
        Example: ``create(plan_id=plan.id, feature_id=f.id, usage_limit=1000)``."""
        data = request or parse_input(svc.EntitlementCreate, fields)
        return self._s.run(svc.create_entitlement, data=data)

    def create_bulk(
        self, request: svc.EntitlementBulkCreate | None = None, /, **fields: Any
    ) -> builtins.list[Entitlement]:
        """``create_bulk(items=[{...}, {...}])``: all are created or none; errors name
        ``items[i].<field>``."""
        data = request or parse_input(svc.EntitlementBulkCreate, fields)
        return self._s.run(svc.create_entitlements_bulk, data=data)

    def get(self, entitlement_id: str) -> Entitlement:
        return self._s.run(svc.get_entitlement, entitlement_id=entitlement_id)

    def update(
        self, entitlement_id: str, request: svc.EntitlementUpdate | None = None, /, **fields: Any
    ) -> Entitlement:
        """Change ``is_enabled``, ``is_soft_limit``, ``usage_limit``, ``usage_reset_period``,
        ``static_value``, ``config_value``, ``aggregation_mode`` or the ``grant_*`` fields;
        ``clear_grant_config=True`` clears every ``grant_*`` field."""
        data = request or parse_input(svc.EntitlementUpdate, fields)
        return self._s.run(svc.update_entitlement, entitlement_id=entitlement_id, data=data)

    def delete(self, entitlement_id: str) -> Entitlement:
        return self._s.run(svc.delete_entitlement, entitlement_id=entitlement_id)

    def list(self, request: svc.EntitlementSearch | None = None, /, **fields: Any) -> Page[Entitlement]:
        """Filters: ``entitlement_ids``, ``feature_ids``, ``plan_ids``, ``entity_type``,
        ``entity_ids``, ``feature_type``, ``is_enabled``, ``has_grant_config``, plus the common
        ``limit``, ``offset``, ``sort``, ``status`` and ``filters``."""
        data = request or parse_input(svc.EntitlementSearch, fields)
        return self._s.run(svc.list_entitlements, search=data)

    def search(self, request: svc.EntitlementSearch | None = None, /, **fields: Any) -> Page[Entitlement]:
        """The same filters as :meth:`list` (the body of ``POST /entitlements/search``)."""
        return self.list(request, **fields)

    def expand(
        self, entitlements: Sequence[Entitlement], expand: str | None
    ) -> builtins.list[dict[str, Any]]:
        """The entitlements as dicts with what ``expand`` names added: ``features`` -> ``feature``,
        ``plans`` -> ``plan``, ``addons`` -> ``addon``."""
        return self._s.run(svc.expand_entitlements, entitlements=entitlements, expand=expand)
