"""``scoped.groups``."""

from __future__ import annotations

from billingkit.facade.scoped import Scoped

__all__ = ["Groups"]


class Groups:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped
