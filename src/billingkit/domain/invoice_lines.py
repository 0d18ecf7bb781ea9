"""Invoice lines: what one subscription line item is charged for one window.

A :class:`LineItemInput` describes a line item as the invoice sees it (price, cadence, quantity or
usage, allowance, commitment, proration). :func:`charge_line` prices it for a charge window and returns
a :class:`LineCharge`; :mod:`billingkit.domain.invoicing` decides the windows and adds discounts,
credits and taxes.

Rules:

* FIXED: ``quantity`` (or the price's ``min_quantity``, else 1) priced, times the proration
  coefficient: an explicit ``proration_coefficient``, else the share of the billing period the line
  covers (``covered seconds / period seconds``), e.g. 10.00 for 15 of 30 days = 5.00.
* USAGE: the caller's usage (a total or one quantity per meter bucket, priced per bucket) less the
  entitlement ``allowance`` (never below 0): 1,200 calls with 1,000 free = 200 billable.
* A line commitment replaces the usage charge by the commitment rule (see
  :mod:`billingkit.domain.commitments`).
* The line amount is rounded once, half away from zero, at the currency's precision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

from billingkit.domain.commitments import (
    CommitmentOutcome,
    LineCommitment,
    TimeBucket,
    UsageBucket,
    commitment_outcome,
    cumulative_commitment_outcome,
    resolve_commitment_amount,
    time_bucket_commitment_outcome,
    windowed_commitment_outcome,
)
from billingkit.domain.invariants import (
    require_bool,
    require_choice,
    require_decimal,
    require_int,
    require_optional_utc,
    require_str,
)
from billingkit.domain.money import ZERO, currency_precision, round_money
from billingkit.domain.periods import InvoiceCadence
from billingkit.domain.pricing import (
    PriceResult,
    PriceSpec,
    default_fixed_quantity,
    price_buckets,
    price_quantity,
)
from billingkit.errors import ValidationError

__all__ = [
    "ADVANCE",
    "ARREAR",
    "FIXED",
    "INVOICE_CADENCES",
    "PRICE_TYPES",
    "USAGE",
    "CommitmentInfo",
    "InvoiceLineDraft",
    "LineCharge",
    "LineItemInput",
    "charge_line",
]

FIXED = "FIXED"
USAGE = "USAGE"
# Plain-string forms of the one InvoiceCadence enum (hot-path records hold plain strings).
ADVANCE: str = InvoiceCadence.ADVANCE.value
ARREAR: str = InvoiceCadence.ARREAR.value
PRICE_TYPES = (FIXED, USAGE)
INVOICE_CADENCES = (ADVANCE, ARREAR)
_ONE = Decimal(1)
# Hot-path records are built with tuple.__new__: the same NamedTuple, without its Python __new__ frame.
_new = tuple.__new__


@dataclass(frozen=True, slots=True)
class LineItemInput:
    """One subscription line item, as invoice assembly needs it.

    * ``price_type`` FIXED or USAGE; ``invoice_cadence`` ADVANCE or ARREAR (USAGE must be ARREAR).
    * FIXED: ``quantity`` (units; None or 0 = the price's ``min_quantity``, else 1).
    * USAGE: ``quantity`` = usage in the charged window, or ``bucket_quantities`` (one per meter
      bucket, priced per bucket), or ``usage_buckets`` (timestamped, for time-of-day commitments);
      ``allowance`` = free quantity subtracted (not with buckets: apply it per bucket beforehand).
    * ``commitment``: a line commitment; ``commitment_prior_usage`` (money already counted in the
      commitment's window) and ``commitment_closes_window`` for cumulative ones; ``window_count`` for
      windowed ones (buckets without usage count as zero).
    * ``time_bucket_prices``: (time bucket price_id, price) pairs overriding ``price`` per time bucket.
    * ``proration_coefficient`` in [0, 1] for FIXED lines (None = coverage of the period).
    * ``start_date``/``end_date``: the line's own life; charges are clipped to it.
    * ``one_time``: a FIXED line charged once, in full, on the invoice whose window holds its
      ``start_date`` (its charge date); an ``end_date`` at or before that date cancels the charge.
    Raises ``ValidationError`` naming the JSON field.
    """

    line_item_id: str
    price: PriceSpec
    price_type: str
    invoice_cadence: str
    display_name: str = ""
    price_id: str = ""
    meter_id: str | None = None
    quantity: Decimal | None = None
    bucket_quantities: tuple[Decimal, ...] | None = None
    usage_buckets: tuple[UsageBucket, ...] = ()
    time_bucket_prices: tuple[tuple[str, PriceSpec], ...] = ()
    allowance: Decimal | None = None
    commitment: LineCommitment | None = None
    commitment_prior_usage: Decimal = ZERO
    commitment_closes_window: bool = True
    window_count: int | None = None
    proration_coefficient: Decimal | None = None
    start_date: datetime | None = None
    end_date: datetime | None = None
    one_time: bool = False
    # Derived once here so assembly does not redo it: the quantity priced, where it came from, and
    # the commitment in money (None for time-bucket commitments, which are per bucket).
    _billable: Decimal = field(default=ZERO, init=False, repr=False, compare=False)
    _source: str = field(default="", init=False, repr=False, compare=False)
    _commit_money: Decimal | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        require_str(self.line_item_id, field="subscription_line_item_id")
        if not isinstance(self.price, PriceSpec):
            raise ValidationError("price must be a PriceSpec", field="price")
        require_choice(self.price_type, PRICE_TYPES, field="price_type")
        require_choice(self.invoice_cadence, INVOICE_CADENCES, field="invoice_cadence")
        if self.price_type == USAGE and self.invoice_cadence != ARREAR:
            raise ValidationError("USAGE prices are billed in ARREAR", field="invoice_cadence")
        if not isinstance(self.display_name, str) or not isinstance(self.price_id, str):
            raise ValidationError("display_name and price_id must be strings", field="display_name")
        if self.meter_id is not None:
            require_str(self.meter_id, field="meter_id")
        if self.quantity is not None:
            set_(self, "quantity", require_decimal(self.quantity, field="quantity", minimum=ZERO))
        if self.bucket_quantities is not None:
            if not isinstance(self.bucket_quantities, tuple):
                raise ValidationError("bucket_quantities must be a tuple", field="bucket_quantities")
            set_(
                self,
                "bucket_quantities",
                tuple(
                    require_decimal(q, field=f"bucket_quantities[{i}]", minimum=ZERO)
                    for i, q in enumerate(self.bucket_quantities)
                ),
            )
        if not isinstance(self.usage_buckets, tuple) or not all(
            isinstance(b, UsageBucket) for b in self.usage_buckets
        ):
            raise ValidationError("usage_buckets must be a tuple of UsageBucket", field="usage_buckets")
        if not isinstance(self.time_bucket_prices, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], PriceSpec)
            for p in self.time_bucket_prices
        ):
            raise ValidationError(
                "time_bucket_prices must be (price_id, PriceSpec) pairs", field="time_bucket_prices"
            )
        usage_forms = (
            (self.quantity is not None) + (self.bucket_quantities is not None) + bool(self.usage_buckets)
        )
        if self.price_type == FIXED and (self.bucket_quantities is not None or self.usage_buckets):
            raise ValidationError("FIXED lines take a quantity, not buckets", field="bucket_quantities")
        if usage_forms > 1:
            raise ValidationError(
                "give one of quantity, bucket_quantities or usage_buckets", field="quantity"
            )
        if self.allowance is not None:
            if self.price_type != USAGE or (self.quantity is None and usage_forms):
                raise ValidationError(
                    "allowance applies to a USAGE line with a total quantity", field="allowance"
                )
            set_(self, "allowance", require_decimal(self.allowance, field="allowance", minimum=ZERO))
        commitment = self.commitment
        if commitment is not None:
            if not isinstance(commitment, LineCommitment):
                raise ValidationError("commitment must be a LineCommitment", field="commitment")
            if self.price_type != USAGE:
                raise ValidationError("commitments apply to USAGE lines", field="commitment_type")
            if commitment.time_buckets and (self.quantity is not None or self.bucket_quantities):
                raise ValidationError(
                    "time-bucket commitments need usage_buckets", field="commitment_time_buckets"
                )
        elif self.usage_buckets:
            raise ValidationError("usage_buckets are only for time-bucket commitments", field="usage_buckets")
        set_(
            self,
            "commitment_prior_usage",
            require_decimal(self.commitment_prior_usage, field="commitment_prior_usage", minimum=ZERO),
        )
        require_bool(self.commitment_closes_window, field="commitment_closes_window")
        if self.window_count is not None:
            require_int(self.window_count, field="window_count", minimum=0)
        if self.proration_coefficient is not None:
            set_(
                self,
                "proration_coefficient",
                require_decimal(
                    self.proration_coefficient,
                    field="proration_coefficient",
                    minimum=ZERO,
                    maximum=_ONE,
                ),
            )
        start = require_optional_utc(self.start_date, field="start_date")
        end = require_optional_utc(self.end_date, field="end_date")
        if start is not None and end is not None and end < start:
            raise ValidationError("end_date must not be before start_date", field="end_date")
        set_(self, "start_date", start)
        set_(self, "end_date", end)
        if require_bool(self.one_time, field="one_time") and (self.price_type != FIXED or start is None):
            raise ValidationError("a one-time line is a FIXED line with a start_date", field="one_time")
        self._derive()

    def _derive(self) -> None:
        set_ = object.__setattr__
        spec = self.price
        if self.price_type == FIXED:
            given = self.quantity
            set_(self, "_billable", default_fixed_quantity(spec, given))
            source = "quantity" if given else ("min_quantity" if spec.min_quantity else "default")
            set_(self, "_source", source)
            return
        if self.bucket_quantities is not None:
            set_(self, "_source", "bucket_quantities")
        elif self.usage_buckets:
            set_(self, "_source", "usage_buckets")
        else:
            quantity = self.quantity if self.quantity is not None else ZERO
            allowance = self.allowance
            if allowance is None:
                set_(self, "_billable", quantity)
                set_(self, "_source", "usage")
            else:
                set_(self, "_billable", quantity - allowance if quantity > allowance else ZERO)
                set_(self, "_source", "usage_after_allowance")
        commitment = self.commitment
        if commitment is not None and not commitment.time_buckets:
            money = resolve_commitment_amount(
                commitment.commitment_type,
                commitment.value,
                lambda q: price_quantity(spec, q).unrounded_amount,
            )
            set_(self, "_commit_money", money)


class CommitmentInfo(NamedTuple):
    """The invoice line's ``commitment_info`` (amounts in currency, rounded)."""

    type: str
    amount: Decimal | None
    quantity: Decimal | None
    duration: int
    is_windowed: bool
    overage_factor: Decimal
    true_up_enabled: bool
    computed_commitment_utilized_amount: Decimal
    computed_overage_amount: Decimal
    computed_true_up_amount: Decimal

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (decimals as strings)."""
        return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in self._asdict().items()}


class LineCharge(NamedTuple):
    """The charge of one line for one window, before discounts and credits (amounts rounded)."""

    amount: Decimal
    quantity: Decimal
    adjusted_entitlement_quantity: Decimal | None
    commitment_info: CommitmentInfo | None
    quantity_source: str
    price_result: PriceResult | None
    proration_coefficient: Decimal | None
    unrounded_amount: Decimal
    commitment_outcome: CommitmentOutcome | None
    bucket_details: tuple[tuple[str, Decimal, Decimal], ...]


def _commitment_info(
    commitment: LineCommitment | None,
    outcome: CommitmentOutcome,
    *,
    amount: Decimal | None = None,
    factor: Decimal = _ONE,
    true_up: bool = False,
) -> CommitmentInfo:
    if commitment is None:
        return CommitmentInfo(
            "amount",
            amount,
            None,
            1,
            False,
            factor,
            true_up,
            outcome.utilized,
            outcome.overage,
            outcome.true_up,
        )
    is_amount = commitment.commitment_type == "amount"
    return CommitmentInfo(
        commitment.commitment_type,
        commitment.value if is_amount else None,
        None if is_amount else commitment.value,
        commitment.duration_periods,
        commitment.windowed,
        commitment.overage_factor,
        commitment.true_up_enabled,
        outcome.utilized,
        outcome.overage,
        outcome.true_up,
    )


_SECOND = timedelta(seconds=1)


def _coverage(start: datetime, end: datetime, full_start: datetime, full_end: datetime) -> Decimal | None:
    """Share of ``[full_start, full_end)`` covered by ``[start, end)`` in whole seconds; None = all."""
    if start <= full_start and end >= full_end:
        return None
    total = (full_end - full_start) // _SECOND
    if total <= 0:
        return None
    return Decimal((end - start) // _SECOND) / Decimal(total)


def _time_bucket_charge(
    item: LineItemInput, commitment: LineCommitment, currency: str
) -> tuple[CommitmentOutcome, tuple[tuple[str, Decimal, Decimal], ...]]:
    prices: Mapping[str, PriceSpec] = dict(item.time_bucket_prices)

    def price(bucket: TimeBucket | None, quantity: Decimal) -> Decimal:
        spec = item.price
        if bucket is not None and bucket.price_id is not None:
            spec = prices.get(bucket.price_id, spec)
        return price_quantity(spec, quantity).unrounded_amount

    return time_bucket_commitment_outcome(item.usage_buckets, commitment.time_buckets, price, currency)


def charge_line(
    item: LineItemInput,
    start: datetime,
    end: datetime,
    full_start: datetime,
    full_end: datetime,
    currency: str,
) -> LineCharge:
    """Price ``item`` for the charge window ``[start, end)`` inside period ``[full_start, full_end)``.

    Example: FIXED 30.00/month, quantity 2, window = the whole month -> 60.00; half -> 30.00.
    Raises ``ValidationError`` (field ``currency``) if the price's currency differs, or whatever
    pricing raises for an out-of-range amount.
    """
    spec = item.price
    if spec.currency != currency:
        raise ValidationError("the price's currency differs from the invoice's", field="currency")
    if item.price_type == FIXED:
        quantity = item._billable
        result = price_quantity(spec, quantity)
        coeff = item.proration_coefficient
        if coeff is None and (start > full_start or end < full_end):
            coeff = _coverage(start, end, full_start, full_end)
        if coeff is None:
            return _new(
                LineCharge,
                (
                    result.amount,
                    quantity,
                    None,
                    None,
                    item._source,
                    result,
                    None,
                    result.unrounded_amount,
                    None,
                    (),
                ),
            )
        unrounded = result.unrounded_amount * coeff
        return _new(
            LineCharge,
            (
                round_money(unrounded, currency),
                quantity,
                None,
                None,
                item._source,
                result,
                coeff,
                unrounded,
                None,
                (),
            ),
        )
    commitment = item.commitment
    buckets = item.bucket_quantities
    adjusted: Decimal | None = None
    if buckets is not None:
        result = price_buckets(spec, buckets)
        quantity = result.quantity
    elif commitment is not None and commitment.time_buckets:
        outcome, details = _time_bucket_charge(item, commitment, currency)
        quantity = sum((b.quantity for b in item.usage_buckets), ZERO)
        return _new(
            LineCharge,
            (
                outcome.amount,
                quantity,
                None,
                _commitment_info(commitment, outcome),
                item._source,
                None,
                None,
                outcome.usage,
                outcome,
                details,
            ),
        )
    else:
        quantity = item.quantity if item.quantity is not None else ZERO
        billable = item._billable
        if item.allowance is not None:
            adjusted = billable
        result = price_quantity(spec, billable)
    if commitment is None:
        return _new(
            LineCharge,
            (
                result.amount,
                quantity,
                adjusted,
                None,
                item._source,
                result,
                None,
                result.unrounded_amount,
                None,
                (),
            ),
        )
    commit = item._commit_money if item._commit_money is not None else ZERO
    factor = commitment.overage_factor
    true_up = commitment.true_up_enabled
    if commitment.windowed and buckets is not None:
        usages = [b.unrounded_amount for b in result.buckets]
        count = item.window_count
        outcome = windowed_commitment_outcome(
            usages,
            commit,
            factor,
            true_up,
            currency,
            window_count=count if count is not None and count >= len(usages) else None,
        )
    elif commitment.duration_periods > 1:
        outcome = cumulative_commitment_outcome(
            result.unrounded_amount,
            item.commitment_prior_usage,
            commit,
            factor,
            true_up,
            item.commitment_closes_window,
            currency,
        )
    else:
        outcome = commitment_outcome(result.unrounded_amount, commit, factor, true_up, currency)
    return _new(
        LineCharge,
        (
            outcome.amount,
            quantity,
            adjusted,
            _commitment_info(commitment, outcome),
            item._source,
            result,
            None,
            outcome.usage,
            outcome,
            (),
        ),
    )


class InvoiceLineDraft(NamedTuple):
    """One line of an invoice draft. Amounts are money in the invoice currency, rounded.

    ``kind`` is ``charge`` or ``true_up`` (the subscription commitment's shortfall line).
    ``amount`` is before discounts and credits; the line owes ``amount - line_item_discount -
    invoice_level_discount - prepaid_credits_applied`` (never below 0). :attr:`trace` explains it.
    """

    line_item_id: str
    kind: str
    display_name: str
    price_id: str
    price_type: str
    invoice_cadence: str
    meter_id: str | None
    quantity: Decimal
    adjusted_entitlement_quantity: Decimal | None
    amount: Decimal
    period_start: datetime
    period_end: datetime
    line_item_discount: Decimal
    invoice_level_discount: Decimal
    prepaid_credits_applied: Decimal
    commitment_info: CommitmentInfo | None
    charge: LineCharge | None
    currency: str

    @property
    def metadata(self) -> dict[str, str]:
        """Line metadata in the wire's terms (``is_commitment_trueup`` on true-up lines)."""
        return {"is_commitment_trueup": "true"} if self.kind == "true_up" else {}

    @property
    def trace(self) -> dict[str, Any]:
        """How the line was computed, JSON-ready (decimals as strings), built on demand.

        Keys: ``quantity_source``, ``quantity``, ``adjusted_entitlement_quantity``, ``pricing``
        (billing model, tier steps, package count), ``proration_coefficient``, ``commitment``,
        ``unrounded_amount``, ``rounding``, ``discounts``, ``prepaid_credits_applied``.
        """
        charge = self.charge
        data: dict[str, Any] = {
            "kind": self.kind,
            "quantity": str(self.quantity),
            "amount": str(self.amount),
            "rounding": {
                "rule": "half_away_from_zero",
                "precision": currency_precision(self.currency),
                "where": "line amount, each discount, each credit, each tax line",
            },
            "discounts": {
                "line_item_discount": str(self.line_item_discount),
                "invoice_level_discount": str(self.invoice_level_discount),
            },
            "prepaid_credits_applied": str(self.prepaid_credits_applied),
        }
        if charge is None:
            data["quantity_source"] = "subscription_commitment"
        else:
            data["quantity_source"] = charge.quantity_source
            data["unrounded_amount"] = str(charge.unrounded_amount)
            if charge.price_result is not None:
                data["pricing"] = charge.price_result.trace()
            if charge.proration_coefficient is not None:
                data["proration_coefficient"] = str(charge.proration_coefficient)
            if charge.bucket_details:
                data["time_buckets"] = [
                    {"time_bucket_id": tb, "quantity": str(q), "charge": str(c)}
                    for tb, q, c in charge.bucket_details
                ]
        if self.adjusted_entitlement_quantity is not None:
            data["adjusted_entitlement_quantity"] = str(self.adjusted_entitlement_quantity)
        if self.commitment_info is not None:
            data["commitment"] = self.commitment_info.to_dict()
            if charge is not None and charge.commitment_outcome is not None:
                data["commitment"]["usage_before_commitment"] = str(charge.commitment_outcome.usage)
        return data
