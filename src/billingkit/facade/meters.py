"""``scoped.meters``."""

from __future__ import annotations

import builtins
from typing import Any

from billingkit.domain.catalog import Meter
from billingkit.domain.queries import Page
from billingkit.domain.validation import parse_input
from billingkit.facade.scoped import Scoped
from billingkit.services import meters as svc

__all__ = ["Meters"]


class Meters:
    """Meters of one environment. Pass a request model or its fields as keyword arguments."""

    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped

    def create(self, request: svc.MeterCreate | None = None, /, **fields: Any) -> Meter:
        """Fields: ``name``, ``event_name``, ``aggregation`` ({``type``, ``field``, ``multiplier``,
        ``bucket_size``, ``group_by``}), ``filters`` ([{``key``, ``values``}]), ``reset_usage``
        (``BILLING_PERIOD`` default, or ``NEVER``). Example:
        ``create(name="API calls", event_name="api_call", aggregation={"type": "COUNT"})``."""
        data = request or parse_input(svc.MeterCreate, fields)
        return self._s.run(svc.create_meter, data=data)

    def get(self, meter_id: str) -> Meter:
        """The live meter with this id, or ``NotFound``."""
        return self._s.run(svc.get_meter, meter_id=meter_id)

    def update(self, meter_id: str, request: svc.MeterUpdate | None = None, /, **fields: Any) -> Meter:
        """Change ``name`` and add ``filters`` (merged in; existing keys and values are never
        removed). ``event_name``, ``aggregation`` and ``reset_usage`` cannot change."""
        data = request or parse_input(svc.MeterUpdate, fields)
        return self._s.run(svc.update_meter, meter_id=meter_id, data=data)

    def delete(self, meter_id: str) -> Meter:
        """Archive the meter; ``InvalidOperation`` while a live feature or price uses it."""
        return self._s.run(svc.delete_meter, meter_id=meter_id)

    def list(self, request: svc.MeterSearch | None = None, /, **fields: Any) -> Page[Meter]:
        """Filters: ``meter_ids``, ``event_name``, plus the common ``limit``, ``offset``, ``sort``,
        ``status`` and ``filters``."""
        data = request or parse_input(svc.MeterSearch, fields)
        return self._s.run(svc.list_meters, search=data)

    def search(self, request: svc.MeterSearch | None = None, /, **fields: Any) -> Page[Meter]:
        """The same as :meth:`list` (the ``POST /meters/search`` body)."""
        return self.list(request, **fields)

    def list_for_event(self, event_name: str) -> builtins.list[Meter]:
        """Every live meter of ``event_name``, oldest first."""
        return self._s.run(svc.list_meters_for_event, event_name=event_name)
