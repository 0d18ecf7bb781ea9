"""``scoped.prices``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from billingkit.domain.catalog import Price
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import prices as svc

__all__ = ["Prices"]


class Prices:
    """Prices of one environment's plans and add-ons. Pass a request model or its fields as
    keyword arguments; reads return :class:`~billingkit.services.prices.PriceDetail` (a
    :class:`Price` with the expanded ``meter``, ``pricing_unit``, ``group``, ``plan``, ``addon``)."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.PriceCreate | None = None, /, **fields: Any) -> Price:
        """Fields: ``entity_type`` (``PLAN``/``ADDON``) and ``entity_id`` of a live owner,
        ``currency``, ``type`` (``FIXED``/``USAGE``), ``billing_model`` (``FLAT_FEE``/``PACKAGE``/
        ``TIERED``), ``billing_period``, ``invoice_cadence`` (``ARREAR``/``ADVANCE``), ``amount``
        (decimal string; not for TIERED), ``tier_mode`` and ``tiers`` (TIERED),
        ``transform_quantity`` (PACKAGE), ``meter_id`` (USAGE), ``billing_cadence``,
        ``billing_period_count``, ``min_quantity``, ``display_name``, ``description``,
        ``lookup_key``, ``group_id``, ``start_date``, ``end_date``, ``trial_period_days``,
        ``price_unit_type`` with ``price_unit_config`` for CUSTOM units, ``metadata``.
        Example: ``create(entity_type="PLAN", entity_id=plan.id, currency="USD", type="FIXED",
        billing_model="FLAT_FEE", billing_period="MONTHLY", invoice_cadence="ADVANCE",
        amount="10")``. Raises ``ValidationError`` naming the field, ``AlreadyExists``."""
        data = request or parse_input(svc.PriceCreate, fields)
        return self._s.run(svc.create_price, data=data)

    def create_bulk(
        self, items: svc.PriceBulkCreate | Sequence[svc.PriceCreate | Mapping[str, Any]]
    ) -> list[Price]:
        """Create up to 100 prices, all or none; an error names ``items[i].<field>``."""
        data = (
            items
            if isinstance(items, svc.PriceBulkCreate)
            else parse_input(svc.PriceBulkCreate, {"items": list(items)})
        )
        return self._s.run(svc.create_prices_bulk, data=data)

    def get(self, price_id: str, *, expand: str | Iterable[str] | None = None) -> svc.PriceDetail:
        """The live price with its meter and pricing unit, plus ``expand`` (``groups``, ``plan``,
        ``addon``)."""
        return self._s.run(svc.get_price, price_id=price_id, expand=expand)

    def get_by_lookup_key(
        self, lookup_key: str, *, expand: str | Iterable[str] | None = None
    ) -> svc.PriceDetail:
        return self._s.run(svc.get_price_by_lookup_key, lookup_key=lookup_key, expand=expand)

    def update(self, price_id: str, request: svc.PriceUpdate | None = None, /, **fields: Any) -> Price:
        """Descriptive fields (``description``, ``display_name``, ``lookup_key``, ``metadata``,
        ``group_id``) change in place. ``amount``, ``billing_model``, ``tier_mode``, ``tiers``,
        ``transform_quantity``, ``price_unit_amount`` or ``price_unit_tiers`` end this price at
        ``effective_from`` (default now) and return its successor."""
        data = request or parse_input(svc.PriceUpdate, fields)
        return self._s.run(svc.update_price, price_id=price_id, data=data)

    def delete(self, price_id: str, end_date: datetime | None = None) -> Price:
        """With a future ``end_date`` the price ends then; without, it is archived now."""
        if end_date is not None:
            end_date = parse_input(svc.PriceDelete, {"end_date": end_date}).end_date
        return self._s.run(svc.delete_price, price_id=price_id, end_date=end_date)

    def list(self, request: svc.PriceSearch | None = None, /, **fields: Any) -> Page[svc.PriceDetail]:
        """Filters: ``price_ids``, ``plan_ids``, ``subscription_id``, ``entity_type``,
        ``entity_ids``, ``meter_ids``, ``billing_periods``, ``parent_price_id``,
        ``allow_expired_prices`` (default false), ``expand``, plus the common ``limit``,
        ``offset``, ``sort``, ``order``, ``status`` and ``filters``."""
        data = request or parse_input(svc.PriceSearch, fields)
        return self._s.run(svc.list_prices, search=data)

    search = list
