"""Prices: what a plan, add-on or subscription charges, and the rules a price must satisfy.

A price is either FIXED (charged per period, in advance or in arrear) or USAGE (charged in arrear on
a meter's aggregate). Its money arithmetic is the billing core's: :meth:`Price.to_spec` builds the
:class:`~billingkit.domain.pricing.PriceSpec` that prices a quantity, and :func:`check_price` builds it
once to reject anything the core could not compute.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from babel.numbers import format_currency
from pydantic import BaseModel, ConfigDict

from billingkit.domain.display import Displayed
from billingkit.domain.periods import BillingPeriod, InvoiceCadence
from billingkit.domain.pricing import BillingModel, PriceSpec, Tier, TierMode, TransformQuantity
from billingkit.domain.resources import EnvironmentResource
from billingkit.domain.validation import UtcDatetime
from billingkit.errors import ValidationError

__all__ = [
    "CRITICAL_PRICE_FIELDS",
    "BillingCadence",
    "InvoiceCadence",
    "Price",
    "PriceEntityType",
    "PriceTier",
    "PriceTransform",
    "PriceType",
    "PriceUnitType",
    "check_price",
    "check_price_terms",
    "display_amount",
]

#: Fields whose change makes a new price version (the old one ends, a successor starts).
CRITICAL_PRICE_FIELDS = frozenset(
    {
        "amount",
        "billing_model",
        "tier_mode",
        "tiers",
        "transform_quantity",
        "price_unit_amount",
        "price_unit_tiers",
    }
)


class PriceType(StrEnum):
    FIXED = "FIXED"
    USAGE = "USAGE"


class BillingCadence(StrEnum):
    RECURRING = "RECURRING"
    ONETIME = "ONETIME"


class PriceEntityType(StrEnum):
    PLAN = "PLAN"
    ADDON = "ADDON"
    SUBSCRIPTION = "SUBSCRIPTION"
    COSTSHEET = "COSTSHEET"


class PriceUnitType(StrEnum):
    FIAT = "FIAT"
    CUSTOM = "CUSTOM"


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PriceTier(_Value):
    """Quantities up to ``up_to`` (inclusive; ``None`` on the last, open tier)."""

    up_to: int | None = None
    unit_amount: Decimal
    flat_amount: Decimal | None = None


class PriceTransform(_Value):
    """PACKAGE size: quantities are divided by ``divide_by`` and rounded ``up`` or ``down``."""

    divide_by: int
    round: str = "up"


class Price(Displayed, EnvironmentResource):
    """A price owned by a plan, add-on or subscription (``entity_type`` / ``entity_id``).

    Amounts are in ``currency`` (lowercase ISO code). With a custom pricing unit
    (``price_unit_type="CUSTOM"``) the price is defined by ``price_unit_amount`` /
    ``price_unit_tiers`` in the unit, and ``amount`` / ``tiers`` hold the converted values
    (unit amount x ``conversion_rate``) for display. ``sequence`` increases with every change to the
    owner's set of prices; ``parent_price_id`` links a version to the price it replaced.
    """

    entity_type: PriceEntityType
    entity_id: str
    type: PriceType
    billing_model: BillingModel
    billing_cadence: BillingCadence = BillingCadence.RECURRING
    billing_period: BillingPeriod
    billing_period_count: int = 1
    invoice_cadence: InvoiceCadence
    currency: str
    amount: Decimal = Decimal(0)
    tier_mode: TierMode | None = None
    tiers: tuple[PriceTier, ...] | None = None
    transform_quantity: PriceTransform | None = None
    meter_id: str | None = None
    min_quantity: Decimal | None = None
    trial_period_days: int = 0
    display_name: str | None = None
    description: str | None = None
    lookup_key: str | None = None
    group_id: str | None = None
    parent_price_id: str | None = None
    sequence: int = 1
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    price_unit_type: PriceUnitType = PriceUnitType.FIAT
    price_unit_id: str | None = None
    price_unit: str | None = None
    price_unit_amount: Decimal | None = None
    price_unit_tiers: tuple[PriceTier, ...] | None = None
    conversion_rate: Decimal | None = None
    metadata: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<Price {self.id} {self.type.value} {self.billing_model.value} {self.amount} {self.currency}>"

    def active_at(self, instant: datetime) -> bool:
        """Whether the price applies at ``instant`` (``[start_date, end_date)``, open ends unbounded)."""
        if self.start_date is not None and instant < self.start_date:
            return False
        return self.end_date is None or instant < self.end_date

    def to_spec(self) -> PriceSpec:
        """The core's view of this price (priced in the custom unit when there is one)."""
        custom = self.price_unit_type is PriceUnitType.CUSTOM
        tiers = self.price_unit_tiers if custom else self.tiers
        transform = self.transform_quantity
        return PriceSpec(
            billing_model=self.billing_model,
            amount=(self.price_unit_amount or Decimal(0)) if custom else self.amount,
            currency=self.currency,
            tier_mode=self.tier_mode,
            tiers=tuple(_core_tier(index, t) for index, t in enumerate(tiers or ())),
            transform_quantity=(
                TransformQuantity(divide_by=transform.divide_by, round=transform.round)  # type: ignore[arg-type]
                if transform is not None and self.billing_model is BillingModel.PACKAGE
                else None
            ),
            conversion_rate=self.conversion_rate if custom else None,
            min_quantity=self.min_quantity,
        )

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["display_amount"] = display_amount(self.amount, self.currency)
        data["display_price_unit_amount"] = (
            f"{self.price_unit_amount} {self.price_unit}" if self.price_unit_amount is not None else None
        )
        return data


def _core_tier(index: int, tier: PriceTier) -> Tier:
    try:
        return Tier(
            up_to=tier.up_to, unit_amount=tier.unit_amount, flat_amount=tier.flat_amount or Decimal(0)
        )
    except ValidationError as exc:
        name = f"tiers[{index}].{exc.field}" if exc.field else f"tiers[{index}]"
        raise ValidationError(exc.message.replace(exc.field or "", name, 1), field=name) from None


def display_amount(amount: Decimal, currency: str) -> str:
    """``amount`` formatted for people, e.g. ``$12.50`` (en_US conventions, all its decimals kept)."""
    return format_currency(amount, currency.upper(), locale="en_US", decimal_quantization=False)


def check_price_terms(
    *,
    type: PriceType,
    meter_id: str | None,
    invoice_cadence: InvoiceCadence,
    billing_cadence: BillingCadence,
    billing_period: BillingPeriod,
    billing_period_count: int,
    trial_period_days: int,
    start_date: datetime | None,
    end_date: datetime | None,
    billing_model: BillingModel,
    tier_mode: TierMode | None,
    has_tiers: bool,
    tiers_field: str,
    has_transform_quantity: bool,
) -> None:
    """The rules a price's fields must agree on, stored or requested (``PriceInput`` checks them
    before anything is looked up): USAGE prices need a ``meter_id`` and are billed in ARREAR;
    FIXED prices have no meter; ONETIME cadence goes with billing period ONETIME;
    ``billing_period_count`` >= 1; ``trial_period_days`` >= 0 and only on recurring FIXED prices;
    ``start_date`` before ``end_date``; ``tier_mode`` and at least one tier (named ``tiers_field``)
    exactly on TIERED prices; ``transform_quantity`` on PACKAGE prices. Raises ``ValidationError``
    naming the field."""
    if type is PriceType.USAGE:
        if not meter_id:
            raise ValidationError("meter_id is required for USAGE prices", field="meter_id")
        if invoice_cadence is InvoiceCadence.ADVANCE:
            raise ValidationError(
                "USAGE prices are billed in ARREAR (usage is only known after the period)",
                field="invoice_cadence",
            )
    elif meter_id:
        raise ValidationError("meter_id is only allowed on USAGE prices", field="meter_id")
    onetime_period = billing_period is BillingPeriod.ONETIME
    if (billing_cadence is BillingCadence.ONETIME) != onetime_period:
        raise ValidationError(
            "billing_cadence ONETIME goes with billing_period ONETIME, RECURRING with a recurring one",
            field="billing_cadence",
        )
    if billing_period_count < 1:
        raise ValidationError("billing_period_count must be at least 1", field="billing_period_count")
    if trial_period_days < 0:
        raise ValidationError("trial_period_days must not be negative", field="trial_period_days")
    if trial_period_days and (type is PriceType.USAGE or onetime_period):
        raise ValidationError(
            "trial_period_days is only allowed on recurring FIXED prices", field="trial_period_days"
        )
    if start_date and end_date and not start_date < end_date:
        raise ValidationError("end_date must be after start_date", field="end_date")
    if billing_model is BillingModel.TIERED:
        if tier_mode is None:
            raise ValidationError("tier_mode is required for TIERED prices", field="tier_mode")
        if not has_tiers:
            raise ValidationError("TIERED prices need at least one tier", field=tiers_field)
    elif tier_mode is not None:
        raise ValidationError("tier_mode is only allowed on TIERED prices", field="tier_mode")
    if billing_model is BillingModel.PACKAGE and not has_transform_quantity:
        raise ValidationError(
            "transform_quantity.divide_by is required for PACKAGE prices",
            field="transform_quantity.divide_by",
        )


def check_price(price: Price) -> PriceSpec:
    """Reject a price the billing core could not compute or that contradicts itself; return its spec.

    Rules beyond the core's own (tiers in order, PACKAGE needs ``divide_by``, no negative amounts):
    the fields agree (:func:`check_price_terms`); a CUSTOM price has its unit and unit amount;
    ``min_quantity`` is not negative. Raises ``ValidationError`` naming the field.
    """
    custom = price.price_unit_type is PriceUnitType.CUSTOM
    check_price_terms(
        type=price.type,
        meter_id=price.meter_id,
        invoice_cadence=price.invoice_cadence,
        billing_cadence=price.billing_cadence,
        billing_period=price.billing_period,
        billing_period_count=price.billing_period_count,
        trial_period_days=price.trial_period_days,
        start_date=price.start_date,
        end_date=price.end_date,
        billing_model=price.billing_model,
        tier_mode=price.tier_mode,
        has_tiers=bool(price.price_unit_tiers if custom else price.tiers),
        tiers_field="price_unit_config.price_unit_tiers" if custom else "tiers",
        has_transform_quantity=price.transform_quantity is not None,
    )
    if custom:
        if not price.price_unit_id or price.conversion_rate is None:
            raise ValidationError("a CUSTOM price needs a price unit", field="price_unit_config.price_unit")
        if price.billing_model is not BillingModel.TIERED and price.price_unit_amount is None:
            raise ValidationError("price_unit_config.amount is required", field="price_unit_config.amount")
    if price.min_quantity is not None and price.min_quantity < 0:
        raise ValidationError("min_quantity must not be negative", field="min_quantity")
    try:
        return price.to_spec()
    except ValidationError as exc:
        if custom and exc.field and exc.field.split("[")[0] in ("tiers", "amount"):
            # The custom unit's values arrive in price_unit_config; name them as the caller sent them.
            name = "price_unit_config." + (
                "price_unit_" + exc.field if exc.field.startswith("tiers") else "amount"
            )
            message = exc.message.replace("tiers[", "price_unit_config.price_unit_tiers[")
            raise ValidationError(message, field=name) from None
        raise
