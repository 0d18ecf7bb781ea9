"""``scoped.price_units``."""

from __future__ import annotations

from billingkit.facade.scoped import Scoped

__all__ = ["PriceUnits"]


class PriceUnits:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped
