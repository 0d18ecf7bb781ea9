"""``scoped.coupons``."""

from __future__ import annotations

from billingkit.facade.scoped import Scoped

__all__ = ["Coupons"]


class Coupons:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped
