"""A phase's extra line items (``phases[i].line_items``, the reference's
``CreateSubscriptionLineItemRequest``): lines billed only inside their phase, besides the phase's
copies of the plan lines.

Rules:

* Each item names an existing price (``price_id``: the plan's, an add-on's, or one this
  subscription owns) or gives one inline (``price``, the reference's
  ``SubscriptionPriceCreateRequest``: stored as a price owned by the subscription, in its
  currency); exactly one of the two.
* The price is live, in the subscription's currency, recurring, and billed every
  ``billing_period_count`` ``billing_period`` like the subscription.
* ``quantity``: a FIXED line's billed quantity (default the price's ``min_quantity``, else 1); a
  USAGE line's quantity is measured, so only 0 may be given.
* ``start_date``/``end_date`` default to the phase's window and must lie inside it.
* The line is ``entity_type`` ``subscription`` (``entity_id`` the subscription), carries
  ``subscription_phase_id`` and its window as ``[start_date, end_date)``.

Errors are ``ValidationError`` naming ``<field>[j].<name>`` (``phases[0].line_items[1].price_id``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field

from billingkit.domain.catalog import BillingCadence, Price, PriceEntityType, PriceType, PriceUnitType
from billingkit.domain.input_rules import prefixed
from billingkit.domain.periods import MAX_PERIOD_COUNT, BillingPeriod, InvoiceCadence
from billingkit.domain.pricing import BillingModel, TierMode
from billingkit.domain.resources import Status
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.domain.validation import (
    INT32_MAX,
    DecimalText,
    Description,
    InputModel,
    Key,
    Metadata,
    NonEmptyStr,
    UtcDatetime,
    parse_input,
)
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.owned_prices import add_owned_price
from billingkit.services.prices import (
    Amount,
    PriceInput,
    PriceTierInput,
    PriceUnitConfigInput,
    TransformQuantityInput,
)

__all__ = ["MAX_PHASE_LINE_ITEMS", "PhaseLineItemInput", "PhasePriceInput", "phase_line_items"]

#: Most extra line items one phase may give.
MAX_PHASE_LINE_ITEMS = 50


class PhasePriceInput(InputModel):
    """An inline price (the reference's ``SubscriptionPriceCreateRequest``): a price's fields
    without currency and owner; the subscription owns it and its currency applies. Its rules are
    :class:`~billingkit.services.prices.PriceInput`'s, checked when the line is built."""

    not_supported = frozenset({"filter_values"})
    amount: Amount | None = None
    type: PriceType
    billing_model: BillingModel
    billing_period: BillingPeriod
    billing_period_count: Annotated[int, Field(ge=1, le=MAX_PERIOD_COUNT)] = 1
    invoice_cadence: InvoiceCadence
    tier_mode: TierMode | None = None
    tiers: list[PriceTierInput] | None = None
    transform_quantity: TransformQuantityInput | None = None
    meter_id: Annotated[str, Field(max_length=64)] | None = None
    min_quantity: Amount | None = None
    display_name: Annotated[str, Field(max_length=255)] | None = None
    description: Description | None = None
    lookup_key: Key | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    trial_period_days: Annotated[int, Field(ge=0, le=INT32_MAX)] = 0
    price_unit_type: PriceUnitType = PriceUnitType.FIAT
    price_unit_config: PriceUnitConfigInput | None = None
    metadata: Metadata = {}


class PhaseLineItemInput(InputModel):
    """One extra line of a phase: ``price_id`` or an inline ``price``, its ``quantity`` (FIXED),
    ``display_name``, ``metadata`` and ``[start_date, end_date)`` inside the phase. The
    reference's commitment fields and ``proration_behavior`` are refused unless empty;
    ``subscription_phase_id`` is the phase's and is ignored."""

    not_supported = frozenset(
        {
            "commitment_amount",
            "commitment_duration",
            "commitment_overage_factor",
            "commitment_quantity",
            "commitment_time_buckets",
            "commitment_true_up_enabled",
            "commitment_type",
            "commitment_windowed",
            "proration_behavior",
        }
    )
    ignored = frozenset({"subscription_phase_id"})

    price_id: NonEmptyStr | None = None
    price: PhasePriceInput | None = None
    quantity: Annotated[DecimalText, Field(ge=0)] | None = None
    display_name: Annotated[str, Field(max_length=255)] | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    metadata: Metadata = {}


def _existing_price(uow: UnitOfWork, sub: Subscription, price_id: str, prefix: str) -> Price:
    price = uow.prices.find(price_id)
    if price is None or price.status is not Status.PUBLISHED:
        raise ValidationError(f"price {price_id} not found", field=prefix + "price_id")
    owned_elsewhere = price.entity_type is PriceEntityType.SUBSCRIPTION and price.entity_id != sub.id
    if owned_elsewhere:
        raise ValidationError(f"price {price_id} belongs to another subscription", field=prefix + "price_id")
    return price


def _inline_price(
    uow: UnitOfWork, ctx: Context, sub: Subscription, price: PhasePriceInput, prefix: str
) -> Price:
    data: dict[str, Any] = {**price.model_dump(exclude_unset=True), "currency": sub.currency}
    try:
        checked = parse_input(PriceInput, data)
    except ValidationError as exc:
        raise prefixed(exc, prefix) from None
    return add_owned_price(
        uow, ctx, checked, entity_type=PriceEntityType.SUBSCRIPTION, entity_id=sub.id, field_prefix=prefix
    )


def _check_terms(sub: Subscription, price: Price, field: str) -> None:
    """The price bills like the subscription: same currency, recurring, same period and count."""
    if price.currency != sub.currency:
        raise ValidationError(
            f"price {price.id} is in {price.currency}, the subscription in {sub.currency}", field=field
        )
    if price.billing_cadence is not BillingCadence.RECURRING:
        raise ValidationError(f"price {price.id} is not recurring", field=field)
    if (price.billing_period, price.billing_period_count) != (sub.billing_period, sub.billing_period_count):
        raise ValidationError(
            f"price {price.id} bills every {price.billing_period_count} x {price.billing_period.value}, "
            f"the subscription every {sub.billing_period_count} x {sub.billing_period.value}",
            field=field,
        )


def _window(
    request: PhaseLineItemInput, start: datetime, end: datetime | None, prefix: str
) -> tuple[datetime, datetime | None]:
    line_start = request.start_date or start
    line_end = request.end_date if request.end_date is not None else end
    if line_start < start or (end is not None and line_start >= end):
        raise ValidationError("start_date must lie inside the phase", field=prefix + "start_date")
    if line_end is not None and (line_end <= line_start or (end is not None and line_end > end)):
        raise ValidationError(
            "end_date must be after start_date and not after the phase's end", field=prefix + "end_date"
        )
    return line_start, line_end


def _quantity(request: PhaseLineItemInput, price: Price, prefix: str) -> Decimal:
    if price.type is PriceType.FIXED:
        if request.quantity is not None:
            return Decimal(request.quantity)
        return price.min_quantity or Decimal(1)
    if request.quantity:
        raise ValidationError("a USAGE line's quantity is measured; give none", field=prefix + "quantity")
    return Decimal(0)


def phase_line_items(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    requests: Sequence[PhaseLineItemInput],
    *,
    start: datetime,
    end: datetime | None,
    phase_id: str,
    field: str,
) -> tuple[SubscriptionLineItem, ...]:
    """The line items of ``requests`` for phase ``phase_id`` of ``sub``, whose window is
    ``[start, end)`` (see the module doc). Inline prices are stored in ``uow``; nothing else is.
    Raises ``ValidationError`` naming ``field[j].<name>``."""
    lines = []
    for index, request in enumerate(requests):
        prefix = f"{field}[{index}]."
        if (request.price_id is None) == (request.price is None):
            raise ValidationError("give exactly one of price_id and price", field=prefix + "price_id")
        if request.price_id is not None:
            price = _existing_price(uow, sub, request.price_id, prefix)
            terms_field = prefix + "price_id"
        else:
            assert request.price is not None  # exactly one is given
            price = _inline_price(uow, ctx, sub, request.price, prefix + "price.")
            terms_field = prefix + "price.billing_period"
        _check_terms(sub, price, terms_field)
        line_start, line_end = _window(request, start, end, prefix)
        meter = uow.meters.find(price.meter_id) if price.meter_id else None
        lines.append(
            SubscriptionLineItem(
                id=ctx.ids.new("subs_line"),
                subscription_id=sub.id,
                customer_id=sub.customer_id,
                entity_type="subscription",
                entity_id=sub.id,
                display_name=request.display_name
                or price.display_name
                or (meter.name if meter is not None else price.id),
                price_id=price.id,
                price_type=price.type,
                price_unit=price.price_unit,
                price_unit_id=price.price_unit_id,
                meter_id=price.meter_id,
                meter_display_name=meter.name if meter is not None else None,
                quantity=_quantity(request, price, prefix),
                currency=price.currency,
                billing_period=price.billing_period,
                billing_period_count=price.billing_period_count,
                invoice_cadence=price.invoice_cadence,
                start_date=line_start,
                end_date=line_end,
                subscription_phase_id=phase_id,
                metadata=dict(request.metadata),
            )
        )
    return tuple(lines)
