"""Custom pricing units (credits, tokens, ...): amounts in the unit convert to a fiat currency."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from billingkit.domain.resources import EnvironmentResource

__all__ = ["PriceUnit"]


class PriceUnit(EnvironmentResource):
    """One ``code`` unit is worth ``conversion_rate`` units of ``base_currency`` (lowercase)."""

    code: str
    name: str
    symbol: str
    base_currency: str
    conversion_rate: Decimal
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<PriceUnit {self.id} {self.code} = {self.conversion_rate} {self.base_currency}>"

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
