"""Credit grants: prepaid credits a plan, add-on or subscription hands out, once or every period."""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Any

from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime
from billingkit.errors import ValidationError

__all__ = [
    "CreditGrant",
    "CreditGrantCadence",
    "CreditGrantExpiryType",
    "CreditGrantExpiryUnit",
    "CreditGrantPeriod",
    "CreditGrantScope",
    "check_credit_grant",
]


class CreditGrantScope(StrEnum):
    PLAN = "PLAN"
    ADDON = "ADDON"
    SUBSCRIPTION = "SUBSCRIPTION"


class CreditGrantCadence(StrEnum):
    ONETIME = "ONETIME"
    RECURRING = "RECURRING"


class CreditGrantPeriod(StrEnum):
    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    QUARTERLY = "QUARTERLY"
    HALF_YEARLY = "HALF_YEARLY"
    ANNUAL = "ANNUAL"


class CreditGrantExpiryType(StrEnum):
    NEVER = "NEVER"
    DURATION = "DURATION"
    BILLING_CYCLE = "BILLING_CYCLE"


class CreditGrantExpiryUnit(StrEnum):
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"
    YEAR = "YEAR"


_OWNER_FIELD = {
    CreditGrantScope.PLAN: "plan_id",
    CreditGrantScope.ADDON: "addon_id",
    CreditGrantScope.SUBSCRIPTION: "subscription_id",
}


class CreditGrant(EnvironmentResource):
    """``credits`` granted to the owner named by ``scope`` (``plan_id``, ``addon_id`` or
    ``subscription_id``). One credit is worth ``conversion_rate`` in the subscription's currency;
    lower ``priority`` is consumed first."""

    name: str
    scope: CreditGrantScope
    plan_id: str | None = None
    addon_id: str | None = None
    subscription_id: str | None = None
    cadence: CreditGrantCadence
    credits: Decimal
    period: CreditGrantPeriod | None = None
    period_count: int | None = None
    expiration_type: CreditGrantExpiryType = CreditGrantExpiryType.NEVER
    expiration_duration: int | None = None
    expiration_duration_unit: CreditGrantExpiryUnit | None = None
    priority: int | None = None
    conversion_rate: Decimal | None = None
    topup_conversion_rate: Decimal | None = None
    credit_grant_anchor: UtcDatetime | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<CreditGrant {self.id} {self.credits} credits {self.cadence.value} on {self.scope.value}>"

    @property
    def owner_id(self) -> str | None:
        return getattr(self, _OWNER_FIELD[self.scope])  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def check_credit_grant(grant: CreditGrant) -> None:
    """The owner matches the scope, credits are positive, RECURRING grants have a period, DURATION
    expiry has a duration and unit, rates are positive, priority non-negative, dates ordered.
    Raises ``ValidationError`` naming the field."""
    owner_field = _OWNER_FIELD[grant.scope]
    if not getattr(grant, owner_field):
        raise ValidationError(f"{owner_field} is required for scope {grant.scope.value}", field=owner_field)
    for other in _OWNER_FIELD.values():
        if other != owner_field and getattr(grant, other):
            raise ValidationError(f"{other} does not match scope {grant.scope.value}", field=other)
    if grant.credits <= 0:
        raise ValidationError("credits must be greater than 0", field="credits")
    if grant.cadence is CreditGrantCadence.RECURRING:
        if grant.period is None:
            raise ValidationError("period is required for RECURRING grants", field="period")
        if grant.period_count is not None and grant.period_count < 1:
            raise ValidationError("period_count must be at least 1", field="period_count")
    elif grant.period is not None or grant.period_count is not None:
        raise ValidationError("period is only allowed on RECURRING grants", field="period")
    if grant.expiration_type is CreditGrantExpiryType.DURATION:
        if grant.expiration_duration is None or grant.expiration_duration < 1:
            raise ValidationError(
                "expiration_duration (at least 1) is required for DURATION expiry",
                field="expiration_duration",
            )
        if grant.expiration_duration_unit is None:
            raise ValidationError(
                "expiration_duration_unit is required for DURATION expiry", field="expiration_duration_unit"
            )
    for name in ("conversion_rate", "topup_conversion_rate"):
        value = getattr(grant, name)
        if value is not None and value <= 0:
            raise ValidationError(f"{name} must be greater than 0", field=name)
    if grant.priority is not None and grant.priority < 0:
        raise ValidationError("priority must not be negative", field="priority")
    if grant.start_date and grant.end_date and not grant.start_date < grant.end_date:
        raise ValidationError("end_date must be after start_date", field="end_date")
