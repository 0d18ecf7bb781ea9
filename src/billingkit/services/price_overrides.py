"""Per-subscription price overrides (``override_line_items``; spec rule 8).

An override never edits the catalogue: it makes a price owned by the subscription (``entity_type``
``SUBSCRIPTION``, ``entity_id`` the subscription, ``parent_price_id`` the price it overrides) with
the overridden values, and points the line item at it; a quantity override changes the line
item's quantity. Billing then needs nothing special: a line item is priced by the price it names,
on every invoice (grouped invoicing included). Plan lines at create, add-on lines and phase lines
all go through :func:`override_lines`.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field

from billingkit.domain.catalog import Price, PriceEntityType, check_price
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.input_rules import prefixed
from billingkit.domain.pricing import BillingModel, TierMode
from billingkit.domain.subscriptions import SubscriptionLineItem
from billingkit.domain.validation import DecimalText, InputModel, NonEmptyStr
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.owned_prices import add_price
from billingkit.services.price_values import value_changes
from billingkit.services.prices import Amount, PriceTierInput, TransformQuantityInput
from billingkit.services.records import COMMON_FIELDS, build, new_fields

__all__ = ["OverrideLineItem", "override_lines", "override_price"]

#: The override fields that change what the price charges (the rest: ``price_id``, ``quantity``).
_PRICE_VALUES = (
    "amount",
    "billing_model",
    "tier_mode",
    "tiers",
    "transform_quantity",
    "price_unit_amount",
    "price_unit_tiers",
)


class OverrideLineItem(InputModel):
    """The reference's ``OverrideLineItemRequest``: the price ``price_id`` charged differently for
    this subscription (its amount, tiers, billing model...) and/or its line at another quantity."""

    price_id: NonEmptyStr
    quantity: Annotated[DecimalText, Field(ge=0)] | None = None
    amount: Amount | None = None
    billing_model: BillingModel | None = None
    tier_mode: TierMode | None = None
    tiers: list[PriceTierInput] | None = None
    transform_quantity: TransformQuantityInput | None = None
    price_unit_amount: Amount | None = None
    price_unit_tiers: list[PriceTierInput] | None = None


def override_price(
    uow: UnitOfWork, ctx: Context, price: Price, override: OverrideLineItem, *, subscription_id: str
) -> Price | None:
    """A new price owned by ``subscription_id`` charging ``price`` with ``override``'s values
    (stored in ``uow``), or ``None`` when the override changes no value of the price."""
    changes: dict[str, Any] = {
        name: getattr(override, name) for name in _PRICE_VALUES if name in override.model_fields_set
    }
    differing = value_changes(price, changes)
    if not differing:
        return None
    fields = price.model_dump(include=set(Price.model_fields) - COMMON_FIELDS)
    fields.update(
        new_fields(ctx, "price"),
        entity_type=PriceEntityType.SUBSCRIPTION,
        entity_id=subscription_id,
        lookup_key=None,
        parent_price_id=price.id,
        **differing,
    )
    return add_price(uow, build(Price, fields, check_price), "")


def override_lines(
    uow: UnitOfWork,
    ctx: Context,
    lines: Sequence[SubscriptionLineItem],
    overrides: Sequence[OverrideLineItem],
    *,
    field: str = "override_line_items",
) -> tuple[SubscriptionLineItem, ...]:
    """``lines`` with ``overrides`` applied: each override names the ``price_id`` of one of the
    lines; its price values make a subscription-owned price the line then names, its ``quantity``
    replaces the line's (FIXED lines only: a usage line's quantity is measured). Errors name
    ``field[i].<name>``; on an error the prices made for earlier overrides go with the caller's
    rolled-back unit of work."""
    by_price = {line.price_id: index for index, line in enumerate(lines)}
    result = list(lines)
    seen: set[str] = set()
    for index, override in enumerate(overrides):
        prefix = f"{field}[{index}]."
        position = by_price.get(override.price_id)
        if position is None:
            raise ValidationError(
                f"price {override.price_id} is not one of the prices this subscription bills",
                field=prefix + "price_id",
            )
        if override.price_id in seen:
            raise ValidationError(f"price {override.price_id} is overridden twice", field=prefix + "price_id")
        seen.add(override.price_id)
        line = result[position]
        update: dict[str, Any] = {}
        if override.quantity is not None:
            if line.price_type is not PriceType.FIXED:
                raise ValidationError(
                    "only a FIXED price's quantity can be overridden (usage is measured)",
                    field=prefix + "quantity",
                )
            update["quantity"] = Decimal(override.quantity)
        price = uow.prices.find(override.price_id)
        if price is None:
            raise ValidationError(f"price {override.price_id} not found", field=prefix + "price_id")
        try:
            new_price = override_price(uow, ctx, price, override, subscription_id=line.subscription_id)
        except ValidationError as exc:
            raise prefixed(exc, prefix) from None
        if new_price is not None:
            update["price_id"] = new_price.id
        result[position] = line.model_copy(update=update)
    return tuple(result)
