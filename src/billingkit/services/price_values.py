"""What a price charges, in its stored form: the input's values with a custom pricing unit
resolved and converted, and the changes to them that make a new version.

A CUSTOM price names a live pricing unit by code; its ``currency`` is the unit's base currency and
its ``amount`` / ``tiers`` are the unit values times the unit's ``conversion_rate``, exact and
unrounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Context as DecimalContext
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from billingkit.domain.catalog import Price, PriceTier, PriceUnitType
from billingkit.domain.pricing import BillingModel
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.price_units import find_live_unit_by_code

if TYPE_CHECKING:
    from billingkit.services.prices import PriceInput, PriceTierInput

__all__ = ["convert", "convert_tiers", "tiers_of", "update_field_name", "value_changes", "value_fields"]

_EXACT = DecimalContext(prec=80)  # unit amount x conversion rate, never rounded


def convert(value: Decimal, rate: Decimal) -> Decimal:
    return _EXACT.multiply(value, rate)


def convert_tiers(tiers: tuple[PriceTier, ...] | None, rate: Decimal) -> tuple[PriceTier, ...] | None:
    if tiers is None:
        return None
    return tuple(
        PriceTier(
            up_to=t.up_to,
            unit_amount=convert(t.unit_amount, rate),
            flat_amount=convert(t.flat_amount, rate) if t.flat_amount is not None else None,
        )
        for t in tiers
    )


def tiers_of(values: Sequence[PriceTierInput] | None) -> tuple[PriceTier, ...] | None:
    return tuple(t.to_tier() for t in values) if values is not None else None


def value_fields(uow: UnitOfWork, data: PriceInput) -> dict[str, Any]:
    """The stored fields of ``data`` (custom unit resolved and converted). The fields agree with
    each other already (``PriceInput`` checks that); this checks the unit exists and its currency."""
    fields = data.model_dump(
        exclude={"amount", "tiers", "transform_quantity", "price_unit_config", "entity_type", "entity_id"}
    )
    fields["meter_id"] = data.meter_id or None
    fields["group_id"] = data.group_id or None
    fields["transform_quantity"] = data.transform_quantity.to_transform() if data.transform_quantity else None
    config = data.price_unit_config
    if data.price_unit_type is PriceUnitType.CUSTOM:
        assert config is not None  # PriceInput refuses a CUSTOM price without one
        unit = find_live_unit_by_code(uow, config.price_unit)
        if unit is None:
            raise ValidationError(
                f"price unit {config.price_unit!r} not found", field="price_unit_config.price_unit"
            )
        if data.currency != unit.base_currency:
            raise ValidationError(
                f"currency must be the price unit's base currency {unit.base_currency}", field="currency"
            )
        unit_tiers = tiers_of(config.price_unit_tiers)
        fields.update(
            price_unit_id=unit.id,
            price_unit=unit.code,
            conversion_rate=unit.conversion_rate,
            price_unit_amount=config.amount,
            price_unit_tiers=unit_tiers,
            amount=convert(config.amount, unit.conversion_rate) if config.amount is not None else Decimal(0),
            tiers=convert_tiers(unit_tiers, unit.conversion_rate),
        )
        return fields
    # Only a TIERED price may omit its amount (PriceInput refuses the others).
    amount = data.amount if data.amount is not None else Decimal(0)
    fields.update(amount=amount, tiers=tiers_of(data.tiers))
    return fields


def value_changes(current: Price, changes: dict[str, Any]) -> dict[str, Any]:
    """The changes to what the price charges that differ from its current values (stored form)."""
    custom = current.price_unit_type is PriceUnitType.CUSTOM
    out: dict[str, Any] = {}
    for name in ("amount", "tiers"):
        if name in changes and custom:
            raise ValidationError(
                f"a CUSTOM price's {name} is derived from price_unit_{name if name == 'tiers' else 'amount'}",
                field=name,
            )
    for name in ("price_unit_amount", "price_unit_tiers"):
        if name in changes and not custom:
            raise ValidationError(f"{name} is only allowed on CUSTOM prices", field=name)
    if "amount" in changes:
        out["amount"] = changes["amount"]
    if "tiers" in changes:
        out["tiers"] = tiers_of(changes["tiers"])
    if custom:
        rate = current.conversion_rate or Decimal(1)
        if "price_unit_amount" in changes:
            unit_amount = changes["price_unit_amount"]
            out["price_unit_amount"] = unit_amount
            out["amount"] = convert(unit_amount, rate) if unit_amount is not None else Decimal(0)
        if "price_unit_tiers" in changes:
            out["price_unit_tiers"] = tiers_of(changes["price_unit_tiers"])
            out["tiers"] = convert_tiers(out["price_unit_tiers"], rate)
    for name in ("billing_model", "tier_mode"):
        if name in changes:
            out[name] = changes[name]
    if "transform_quantity" in changes:
        value = changes["transform_quantity"]
        out["transform_quantity"] = value.to_transform() if value is not None else None
    differing = {k: v for k, v in out.items() if getattr(current, k) != v}
    model = differing.get("billing_model")
    if model is not None:
        # A new billing model drops the settings only the old one used, unless they were sent.
        if model is not BillingModel.TIERED:
            for name in ("tier_mode", "tiers", "price_unit_tiers"):
                if name not in changes:
                    differing[name] = None
        if model is not BillingModel.PACKAGE and "transform_quantity" not in changes:
            differing["transform_quantity"] = None
    return differing


def update_field_name(exc: ValidationError) -> ValidationError:
    """Name a custom unit's values as ``PUT`` takes them (not as ``price_unit_config``)."""
    field = exc.field or ""
    for old, new in (("price_unit_config.amount", "price_unit_amount"), ("price_unit_config.", "")):
        if field.startswith(old):
            field = new + field.removeprefix(old)
            return ValidationError(exc.message, field=field, details={**exc.details, "field": field})
    return exc
