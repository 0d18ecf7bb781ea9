"""``scoped.price_units``."""

from __future__ import annotations

from typing import Any

from billingkit.domain.catalog import PriceUnit
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import price_units as svc

__all__ = ["PriceUnits"]


class PriceUnits:
    """Custom pricing units of one environment. Pass a request model or its fields as keyword
    arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.PriceUnitCreate | None = None, /, **fields: Any) -> PriceUnit:
        """Fields: ``code`` (unique among live units, at most 32 characters), ``name``, ``symbol``,
        ``base_currency`` (3 letters), ``conversion_rate`` (> 0: one unit = rate x base currency),
        ``metadata``. Example: ``create(code="credits", name="Credits", symbol="CR",
        base_currency="USD", conversion_rate="0.01")``."""
        data = request or parse_input(svc.PriceUnitCreate, fields)
        return self._s.run(svc.create_price_unit, data=data)

    def get(self, price_unit_id: str) -> PriceUnit:
        return self._s.run(svc.get_price_unit, price_unit_id=price_unit_id)

    def get_by_code(self, code: str) -> PriceUnit:
        return self._s.run(svc.get_price_unit_by_code, code=code)

    def update(
        self, price_unit_id: str, request: svc.PriceUnitUpdate | None = None, /, **fields: Any
    ) -> PriceUnit:
        """Change ``name`` or ``metadata`` (the rate and currency are fixed at creation)."""
        data = request or parse_input(svc.PriceUnitUpdate, fields)
        return self._s.run(svc.update_price_unit, price_unit_id=price_unit_id, data=data)

    def delete(self, price_unit_id: str) -> PriceUnit:
        """Archive the unit; ``InvalidOperation`` while a live price uses it."""
        return self._s.run(svc.delete_price_unit, price_unit_id=price_unit_id)

    def list(self, request: svc.PriceUnitSearch | None = None, /, **fields: Any) -> Page[PriceUnit]:
        """Filters: ``price_unit_ids``, ``codes``, plus the common ``limit``, ``offset``, ``sort``,
        ``order``, ``status`` and ``filters``."""
        data = request or parse_input(svc.PriceUnitSearch, fields)
        return self._s.run(svc.list_price_units, search=data)

    search = list
