"""Tax rates as catalogue resources (the tax arithmetic is :mod:`billingkit.domain.taxes`)."""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any

from billingkit.domain import taxes as core
from billingkit.domain.resources import EnvironmentResource
from billingkit.errors import ValidationError

__all__ = ["TaxRate", "TaxRateScope", "TaxRateStatus", "TaxRateType", "check_tax_rate"]


class TaxRateType(StrEnum):
    PERCENTAGE = "percentage"
    FIXED = "fixed"


class TaxRateScope(StrEnum):
    INTERNAL = "INTERNAL"
    EXTERNAL = "EXTERNAL"
    ONETIME = "ONETIME"


class TaxRateStatus(StrEnum):
    ACTIVE = "ACTIVE"
    INACTIVE = "INACTIVE"


class TaxRate(EnvironmentResource):
    """``percentage_value`` percent (0-100) or a ``fixed_value`` amount; ``code`` is unique among
    live tax rates of an environment. Only ``ACTIVE`` rates are applied to new invoices."""

    name: str
    code: str
    tax_rate_type: TaxRateType
    percentage_value: Decimal | None = None
    fixed_value: Decimal | None = None
    description: str | None = None
    scope: TaxRateScope = TaxRateScope.INTERNAL
    tax_rate_status: TaxRateStatus = TaxRateStatus.ACTIVE
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        value = (
            f"{self.percentage_value}%" if self.tax_rate_type is TaxRateType.PERCENTAGE else self.fixed_value
        )
        return f"<TaxRate {self.id} {self.code} {value}>"

    def to_core(self) -> core.TaxRate:
        return core.TaxRate(
            id=self.id,
            tax_rate_type=self.tax_rate_type.value,
            percentage_value=self.percentage_value,
            fixed_value=self.fixed_value,
            code=self.code,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def check_tax_rate(rate: TaxRate) -> core.TaxRate:
    """The core's rules: a percentage rate needs 0 <= ``percentage_value`` <= 100, a fixed rate a
    ``fixed_value`` >= 0; the other type's value must be absent (null), as it would never be
    applied. Raises ``ValidationError`` naming the field."""
    if rate.tax_rate_type is TaxRateType.PERCENTAGE and rate.fixed_value is not None:
        raise ValidationError(
            "fixed_value: a percentage tax rate has no fixed_value (leave it out)", field="fixed_value"
        )
    if rate.tax_rate_type is TaxRateType.FIXED and rate.percentage_value is not None:
        raise ValidationError(
            "percentage_value: a fixed tax rate has no percentage_value (leave it out)",
            field="percentage_value",
        )
    return rate.to_core()
