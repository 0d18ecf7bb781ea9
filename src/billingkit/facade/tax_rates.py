"""``scoped.tax_rates``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.catalog import TaxRate
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import tax_rates as svc

__all__ = ["TaxRates"]


class TaxRates:
    """Tax rates of one environment. Pass a request model or its fields as keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.TaxRateCreate | None = None, /, **fields: Any) -> TaxRate:
        """Fields: ``name``, ``code`` (required; unique among live rates), ``tax_rate_type``
        (``percentage`` default, or ``fixed``), ``percentage_value`` (0-100) or ``fixed_value``,
        ``description``, ``scope`` (``INTERNAL`` default), ``metadata``.
        Example: ``create(name="VAT", code="VAT20", percentage_value="20")``."""
        data = request or parse_input(svc.TaxRateCreate, fields)
        return self._s.run(svc.create_tax_rate, data=data)

    def get(self, tax_rate_id: str) -> TaxRate:
        return self._s.run(svc.get_tax_rate, tax_rate_id=tax_rate_id)

    def update(self, tax_rate_id: str, request: svc.TaxRateUpdate | None = None, /, **fields: Any) -> TaxRate:
        """Change ``name``, ``code``, ``description``, ``tax_rate_status`` or ``metadata``."""
        data = request or parse_input(svc.TaxRateUpdate, fields)
        return self._s.run(svc.update_tax_rate, tax_rate_id=tax_rate_id, data=data)

    def delete(self, tax_rate_id: str) -> TaxRate:
        return self._s.run(svc.delete_tax_rate, tax_rate_id=tax_rate_id)

    def list(self, request: svc.TaxRateSearch | None = None, /, **fields: Any) -> Page[TaxRate]:
        """Filters: ``tax_rate_ids``, ``tax_rate_codes``, ``scope``, ``tax_rate_status``, plus the
        common ``limit``, ``offset``, ``sort``, ``status`` and ``filters``."""
        data = request or parse_input(svc.TaxRateSearch, fields)
        return self._s.run(svc.list_tax_rates, search=data)
