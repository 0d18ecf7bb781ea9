"""``scoped.meters``."""

from __future__ import annotations

from billingkit.facade.scoped import Scoped

__all__ = ["Meters"]


class Meters:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped
