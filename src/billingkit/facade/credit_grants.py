"""``scoped.credit_grants``."""

from __future__ import annotations

from billingkit.facade.scoped import Scoped

__all__ = ["CreditGrants"]


class CreditGrants:
    def __init__(self, scoped: Scoped) -> None:
        self._s = scoped
