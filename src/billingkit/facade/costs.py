"""The cost areas of ``Scoped``: cost sheets (what serving usage costs the seller) and cost
analytics (revenue against cost per customer and meter).

Each operation is declared (see :mod:`billingkit.facade.operations`); the request models live in
``billingkit.services.costsheets`` and ``billingkit.services.cost_analytics``.
"""

from __future__ import annotations

from billingkit.facade.operations import Area, IdOp, IdRequestOp, RequestOp
from billingkit.services import cost_analytics, costsheets

__all__ = ["Costs"]


class Costs(Area):
    """Cost sheets of this environment. A sheet's prices are created with ``prices.create(
    entity_type="COSTSHEET", entity_id=sheet.id, type="USAGE", meter_id=...)``; ``get`` and ``list``
    return each sheet with its live prices; ``delete`` archives the sheet and ends its prices;
    ``active()`` is the environment's live sheet created last."""

    create = RequestOp(costsheets.create_costsheet, costsheets.CostsheetCreate)
    get = IdOp(costsheets.get_costsheet, read_only=True)
    update = IdRequestOp(costsheets.update_costsheet, costsheets.CostsheetUpdate)
    delete = IdOp(costsheets.delete_costsheet)
    list = RequestOp(costsheets.list_costsheets, costsheets.CostsheetSearch, read_only=True)
    #: Cost (the active sheet's prices) against revenue (subscription lines) per customer and
    #: meter over a range, with margin and ROI (``POST /costs/analytics``).
    analytics = RequestOp(
        cost_analytics.get_cost_analytics, cost_analytics.CostAnalyticsRequest, read_only=True
    )

    def active(self) -> costsheets.CostsheetDetail:
        """The active sheet (the live one created last) with its prices; ``NotFound`` if none."""
        return self._s.read(costsheets.get_active_costsheet)
