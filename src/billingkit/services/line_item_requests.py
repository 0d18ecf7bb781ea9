"""Requests about a subscription's line items, in the reference's shapes: a new line
(:class:`LineItemCreate`, also each of a new subscription's ``line_items``) naming an existing
price or an inline one (:class:`SubscriptionPriceCreate`), a change (:class:`LineItemUpdate`),
an end (:class:`LineItemDelete`), and a new subscription's entitlement overrides
(:class:`OverrideEntitlement`).

Rules that compare fields with each other or with the subscription are checked by the services
(:mod:`billingkit.services.subscription_line_items`), which know the field's full name
(``line_items[2].price_id``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from billingkit.domain.catalog import BillingCadence, PriceType, PriceUnitType
from billingkit.domain.periods import MAX_PERIOD_COUNT, BillingPeriod, InvoiceCadence
from billingkit.domain.pricing import BillingModel, TierMode
from billingkit.domain.subscriptions import ProrationBehavior
from billingkit.domain.validation import (
    INT32_MAX,
    Description,
    InputModel,
    JsonMetadata,
    Key,
    Metadata,
    NonEmptyStr,
    UtcDatetime,
)
from billingkit.services.prices import (
    Amount,
    PriceInput,
    PriceTierInput,
    PriceUnitConfigInput,
    TransformQuantityInput,
)
from billingkit.services.subscription_commitments import (
    CommitmentTimeBucketConfig,
    LineItemCommitmentConfig,
    ReferenceNumber,
)

__all__ = [
    "COMMITMENT_FIELDS",
    "CommitmentFields",
    "LineItemCreate",
    "LineItemDelete",
    "LineItemUpdate",
    "OverrideEntitlement",
    "SubscriptionPriceCreate",
]

#: Most line items, overrides or entitlement overrides one subscription request may carry.
MAX_ITEMS = 100

Text = Annotated[str, Field(max_length=255)]
Id = Annotated[NonEmptyStr, Field(max_length=64)]


def _whole_float(value: Any) -> Any:
    """The reference's SDK sends quantities as floats: ``2.0`` is the quantity ``2``."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: A line item's quantity: a decimal string, an integer or a JSON number, not negative.
Quantity = Annotated[ReferenceNumber, BeforeValidator(_whole_float), Field(ge=0)]

#: A line item's commitment fields (the reference's names), shared by create and update.
COMMITMENT_FIELDS = (
    "commitment_type",
    "commitment_amount",
    "commitment_quantity",
    "commitment_duration",
    "commitment_overage_factor",
    "commitment_true_up_enabled",
    "commitment_windowed",
    "commitment_time_buckets",
)


class SubscriptionPriceCreate(InputModel):
    """The reference's ``SubscriptionPriceCreateRequest``: a price made for one subscription,
    in its currency. ``billing_period`` ``ONETIME`` makes a one-time charge (billing cadence
    ``ONETIME``); any other must be the subscription's."""

    not_supported = frozenset({"filter_values"})

    type: PriceType
    billing_model: BillingModel
    billing_period: BillingPeriod
    billing_period_count: Annotated[int, Field(ge=1, le=MAX_PERIOD_COUNT)] = 1
    invoice_cadence: InvoiceCadence
    price_unit_type: PriceUnitType = PriceUnitType.FIAT
    amount: Amount | None = None
    tier_mode: TierMode | None = None
    tiers: list[PriceTierInput] | None = None
    transform_quantity: TransformQuantityInput | None = None
    meter_id: Annotated[str, Field(max_length=64)] | None = None
    min_quantity: Amount | None = None
    display_name: Text | None = None
    description: Description | None = None
    lookup_key: Key | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    trial_period_days: Annotated[int, Field(ge=0, le=INT32_MAX)] = 0
    price_unit_config: PriceUnitConfigInput | None = None
    metadata: Metadata = {}

    def price_input(self, currency: str) -> PriceInput:
        """The catalogue's price request for this price in ``currency`` (its rules run here:
        ``ValidationError`` naming the price's field)."""
        fields: dict[str, Any] = self.model_dump()
        cadence = BillingCadence.ONETIME if self.billing_period is BillingPeriod.ONETIME else None
        fields["billing_cadence"] = cadence or BillingCadence.RECURRING
        fields["currency"] = currency
        return PriceInput.model_validate(fields)


class CommitmentFields(InputModel):
    """A line item's commitment, in the reference's flat field names."""

    commitment_type: Literal["amount", "quantity"] | None = None
    commitment_amount: Annotated[ReferenceNumber, Field(ge=0)] | None = None
    commitment_quantity: Annotated[ReferenceNumber, Field(ge=0)] | None = None
    commitment_duration: BillingPeriod | None = None
    commitment_overage_factor: Annotated[ReferenceNumber, Field(ge=1)] | None = None
    commitment_true_up_enabled: bool | None = None
    commitment_windowed: bool | None = None
    commitment_time_buckets: Annotated[list[CommitmentTimeBucketConfig], Field(max_length=24)] | None = None

    def commitment_given(self) -> bool:
        """Whether any commitment field was sent."""
        return any(name in self.model_fields_set for name in COMMITMENT_FIELDS)

    def commitment_config(self, current: dict[str, Any] | None = None) -> LineItemCommitmentConfig:
        """The commitment these fields describe, the sent ones over ``current`` (a line item's
        stored ``commitment_*`` fields, for an update)."""
        values = {
            **(current or {}),
            **{n: getattr(self, n) for n in COMMITMENT_FIELDS if n in self.model_fields_set},
        }
        buckets = values.get("commitment_time_buckets") or ()
        return LineItemCommitmentConfig.model_validate(
            {
                "commitment_type": values.get("commitment_type") or "amount",
                "commitment_amount": values.get("commitment_amount"),
                "commitment_quantity": values.get("commitment_quantity"),
                "overage_factor": values.get("commitment_overage_factor") or 1,
                "enable_true_up": bool(values.get("commitment_true_up_enabled")),
                "is_window_commitment": bool(values.get("commitment_windowed")),
                "commitment_duration": values.get("commitment_duration"),
                "commitment_time_buckets": [
                    bucket if isinstance(bucket, CommitmentTimeBucketConfig) else _stored_bucket(bucket)
                    for bucket in buckets
                ],
            }
        )


def _stored_bucket(entry: dict[str, Any]) -> CommitmentTimeBucketConfig:
    """A stored time bucket (a line item's ``commitment_time_buckets`` entry) as request input."""
    return CommitmentTimeBucketConfig.model_validate({k: v for k, v in entry.items() if k != "price_id"})


class LineItemCreate(CommitmentFields):
    """The reference's ``CreateSubscriptionLineItemRequest``: exactly one of ``price_id`` (a live
    price of a plan, an add-on or this subscription) and ``price`` (a new price for this
    subscription). ``quantity``: FIXED lines only (default the price's ``min_quantity``, else 1).
    ``start_date`` defaults to the subscription's start (on create and on a draft) or now;
    ``proration_behavior`` ``create_prorations`` charges a recurring ADVANCE fee for the rest of
    the current period at once."""

    price_id: Id | None = None
    price: SubscriptionPriceCreate | None = None
    quantity: Quantity | None = None
    start_date: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    display_name: Text | None = None
    metadata: Metadata = {}
    subscription_phase_id: Id | None = None
    proration_behavior: ProrationBehavior = ProrationBehavior.NONE


class LineItemUpdate(CommitmentFields):
    """The reference's ``UpdateSubscriptionLineItemRequest`` plus ``quantity``, ``end_date`` and
    ``proration_behavior`` (billingkit's). A change of what the line charges (``amount``,
    ``billing_model``, ``tier_mode``, ``tiers``, ``transform_quantity``, ``price_unit_amount``,
    ``price_unit_tiers``) or of ``quantity`` ends the line at ``effective_from`` (default now) and
    starts a replacement there; ``metadata`` and commitment changes are made in place;
    ``end_date`` moves the line's end (spec rule 7) and goes with no price or quantity change."""

    not_supported = frozenset({"bucket_size"})

    amount: Amount | None = None
    billing_model: BillingModel | None = None
    tier_mode: TierMode | None = None
    tiers: list[PriceTierInput] | None = None
    transform_quantity: TransformQuantityInput | None = None
    price_unit_amount: Amount | None = None
    price_unit_tiers: list[PriceTierInput] | None = None
    quantity: Quantity | None = None
    effective_from: UtcDatetime | None = None
    end_date: UtcDatetime | None = None
    metadata: Metadata | None = None
    proration_behavior: ProrationBehavior = ProrationBehavior.NONE


class LineItemDelete(InputModel):
    """The reference's ``DeleteSubscriptionLineItemRequest``: the line ends at ``effective_from``
    (default now); ``create_prorations`` credits the unused part of a recurring ADVANCE fee."""

    effective_from: UtcDatetime | None = None
    proration_behavior: ProrationBehavior = ProrationBehavior.NONE


class OverrideEntitlement(InputModel):
    """The reference's ``OverrideEntitlementRequest``: the plan's (or an attached add-on's)
    entitlement ``entitlement_id`` granted differently on this subscription. Only the fields sent
    change; ``usage_limit: null`` means unlimited."""

    entitlement_id: Id
    usage_limit: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    is_enabled: bool | None = None
    static_value: Annotated[str, Field(max_length=1000)] | None = None
    config_value: JsonMetadata | None = None
