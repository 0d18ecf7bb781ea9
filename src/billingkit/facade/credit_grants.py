"""``scoped.credit_grants``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.catalog import CreditGrant
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import credit_grants as svc

__all__ = ["CreditGrants"]


class CreditGrants:
    """Credit grants of plans and add-ons in one environment. Pass a request model or its fields as
    keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.CreditGrantCreate | None = None, /, **fields: Any) -> CreditGrant:
        """Fields: ``name``, ``credits`` (decimal string > 0), ``cadence`` (``ONETIME`` or
        ``RECURRING`` with ``period`` and ``period_count``), ``scope`` (``PLAN`` with ``plan_id`` or
        ``ADDON`` with ``addon_id``), ``expiration_type`` (``NEVER`` default, ``DURATION`` with
        ``expiration_duration`` and ``expiration_duration_unit``, ``BILLING_CYCLE``), ``priority``,
        ``conversion_rate``, ``topup_conversion_rate``, ``start_date``, ``end_date``, ``metadata``.
        Example: ``create(name="Welcome", scope="PLAN", plan_id=p.id, credits="100", cadence="ONETIME")``."""
        data = request or parse_input(svc.CreditGrantCreate, fields)
        return self._s.run(svc.create_credit_grant, data=data)

    def get(self, credit_grant_id: str) -> CreditGrant:
        return self._s.run(svc.get_credit_grant, credit_grant_id=credit_grant_id)

    def update(
        self, credit_grant_id: str, request: svc.CreditGrantUpdate | None = None, /, **fields: Any
    ) -> CreditGrant:
        """Change ``name``, ``metadata`` or ``end_date``."""
        data = request or parse_input(svc.CreditGrantUpdate, fields)
        return self._s.run(svc.update_credit_grant, credit_grant_id=credit_grant_id, data=data)

    def delete(self, credit_grant_id: str) -> CreditGrant:
        return self._s.run(svc.delete_credit_grant, credit_grant_id=credit_grant_id)

    def list(self, request: svc.CreditGrantSearch | None = None, /, **fields: Any) -> Page[CreditGrant]:
        """Filters: ``credit_grant_ids``, ``plan_ids``, ``addon_ids``, ``subscription_ids``,
        ``scope``, plus the common ``limit``, ``offset``, ``sort``, ``status`` and ``filters``."""
        data = request or parse_input(svc.CreditGrantSearch, fields)
        return self._s.run(svc.list_credit_grants, search=data)
