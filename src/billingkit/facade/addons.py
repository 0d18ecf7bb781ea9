"""``scoped.addons``."""

from __future__ import annotations

import builtins
from typing import Any

from billingkit.domain.catalog import Addon, AddonDetail, CreditGrant, Entitlement
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import addons as svc

__all__ = ["Addons"]


class Addons:
    """Add-ons of one environment. Pass a request model or its fields as keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.AddonCreate | None = None, /, **fields: Any) -> AddonDetail:
        """Create an add-on: ``name`` and ``lookup_key`` (unique among live add-ons) required;
        ``description``, ``metadata``; optionally ``prices``, ``entitlements``, ``credit_grants``
        created with it, all or nothing."""
        data = request or parse_input(svc.AddonCreate, fields)
        return self._s.run(svc.create_addon, data=data)

    def get(self, addon_id: str) -> AddonDetail:
        return self._s.run(svc.get_addon, addon_id=addon_id)

    def get_by_lookup_key(self, lookup_key: str) -> AddonDetail:
        return self._s.run(svc.get_addon_by_lookup_key, lookup_key=lookup_key)

    def update(self, addon_id: str, request: svc.AddonUpdate | None = None, /, **fields: Any) -> AddonDetail:
        """Change ``name``, ``description`` or ``metadata``."""
        data = request or parse_input(svc.AddonUpdate, fields)
        return self._s.run(svc.update_addon, addon_id=addon_id, data=data)

    def delete(self, addon_id: str) -> Addon:
        """Archive the add-on together with its prices, entitlements and credit grants."""
        return self._s.run(svc.delete_addon, addon_id=addon_id)

    def list(self, request: svc.AddonSearch | None = None, /, **fields: Any) -> Page[AddonDetail]:
        """A page of add-ons. Filters ``addon_ids``, ``lookup_keys``; ``expand`` fills in items."""
        data = request or parse_input(svc.AddonSearch, fields)
        return self._s.run(svc.search_addons, search=data)

    search = list

    def entitlements(self, addon_id: str) -> builtins.list[Entitlement]:
        return self._s.run(svc.addon_entitlements, addon_id=addon_id)

    def credit_grants(self, addon_id: str) -> builtins.list[CreditGrant]:
        return self._s.run(svc.addon_credit_grants, addon_id=addon_id)
