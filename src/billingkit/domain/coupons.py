"""Coupons: fixed and percentage discounts, their cadence, and how they land on invoice lines.

Rules:

* A discount is ``base * percentage_off / 100`` or ``amount_off``, rounded, and never more than the
  base (20% of 45.55 = 9.11; 50 off 30.00 = 30.00).
* Cadence: ``once`` discounts exactly one invoice; ``repeated`` discounts ``duration_in_periods``
  invoices; ``forever`` every invoice while attached.
* An association applies to an invoice period when its ``[start_date, end_date)`` overlaps the
  period; an association with ``start_date == end_date`` applies to nothing. Only a discount above
  zero counts as an application (a ``once`` coupon is not used up by an empty invoice).
* Coupons on a line apply first, to that line. Invoice-level coupons then apply one after another
  (ordered by association start, then id) to what remains of the whole invoice, and each discount is
  spread over the lines in proportion to what remains on them, in minor units, so the parts sum
  exactly to the discount (10.00 over lines of 10.00 each -> 3.33, 3.34, 3.33).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from operator import add, sub
from typing import NamedTuple

from billingkit.domain.invariants import (
    require_choice,
    require_decimal,
    require_int,
    require_optional_utc,
    require_str,
    require_utc,
)
from billingkit.domain.money import ZERO, normalize_currency, quantize_exponent, round_money
from billingkit.errors import ValidationError

__all__ = [
    "COUPON_CADENCES",
    "COUPON_TYPES",
    "Coupon",
    "CouponApplication",
    "CouponAssociation",
    "CouponResult",
    "apply_coupons",
    "association_applies",
    "coupon_discount",
    "distribute",
    "ensure_redeemable",
]

COUPON_TYPES = ("fixed", "percentage")
COUPON_CADENCES = ("once", "repeated", "forever")
_HUNDRED = Decimal(100)


@dataclass(frozen=True, slots=True)
class Coupon:
    """A coupon definition.

    ``type`` ``fixed`` needs ``amount_off`` > 0 (money, in ``currency``); ``percentage`` needs
    0 < ``percentage_off`` <= 100. ``cadence`` ``repeated`` needs ``duration_in_periods`` > 0, the
    others forbid it. ``redeem_after`` < ``redeem_before`` when both are set (aware instants).
    Raises ``ValidationError`` naming the JSON field.
    """

    id: str
    type: str
    cadence: str
    amount_off: Decimal | None = None
    percentage_off: Decimal | None = None
    currency: str | None = None
    duration_in_periods: int | None = None
    redeem_after: datetime | None = None
    redeem_before: datetime | None = None

    def __post_init__(self) -> None:
        require_str(self.id, field="coupon_id")
        require_choice(self.type, COUPON_TYPES, field="type")
        require_choice(self.cadence, COUPON_CADENCES, field="cadence")
        if self.type == "fixed":
            if self.amount_off is None:
                raise ValidationError("amount_off is required for fixed coupons", field="amount_off")
            amount = require_decimal(self.amount_off, field="amount_off", strictly_above=ZERO)
            object.__setattr__(self, "amount_off", amount)
            if self.currency is not None:
                object.__setattr__(self, "currency", normalize_currency(self.currency))
            object.__setattr__(self, "percentage_off", None)
        else:
            if self.percentage_off is None:
                raise ValidationError(
                    "percentage_off is required for percentage coupons", field="percentage_off"
                )
            pct = require_decimal(
                self.percentage_off,
                field="percentage_off",
                strictly_above=ZERO,
                maximum=_HUNDRED,
            )
            object.__setattr__(self, "percentage_off", pct)
            object.__setattr__(self, "amount_off", None)
            object.__setattr__(self, "currency", None)
        if self.cadence == "repeated":
            if self.duration_in_periods is None:
                raise ValidationError(
                    "duration_in_periods is required for repeated coupons",
                    field="duration_in_periods",
                )
            require_int(self.duration_in_periods, field="duration_in_periods", minimum=1)
        elif self.duration_in_periods is not None:
            raise ValidationError(
                "duration_in_periods is only allowed for repeated coupons",
                field="duration_in_periods",
            )
        after = require_optional_utc(self.redeem_after, field="redeem_after")
        before = require_optional_utc(self.redeem_before, field="redeem_before")
        if after is not None and before is not None and not after < before:
            raise ValidationError("redeem_after must be before redeem_before", field="redeem_after")
        object.__setattr__(self, "redeem_after", after)
        object.__setattr__(self, "redeem_before", before)

    def redeemable_at(self, instant: datetime) -> bool:
        """Whether ``instant`` lies in ``[redeem_after, redeem_before]`` (open ends unbounded)."""
        if self.redeem_after is not None and instant < self.redeem_after:
            return False
        return self.redeem_before is None or instant <= self.redeem_before


def ensure_redeemable(coupon: Coupon, at: datetime, *, currency: str | None = None) -> None:
    """Check a coupon may be redeemed (attached) at ``at`` for a subscription in ``currency``.

    Raises ``ValidationError``: field ``redeem_after``/``redeem_before`` outside the window, field
    ``currency`` when a fixed coupon's currency differs.
    """
    instant = require_utc(at, field="at")
    if coupon.redeem_after is not None and instant < coupon.redeem_after:
        raise ValidationError("the coupon cannot be redeemed yet", field="redeem_after")
    if coupon.redeem_before is not None and instant > coupon.redeem_before:
        raise ValidationError("the coupon can no longer be redeemed", field="redeem_before")
    if (
        currency is not None
        and coupon.currency is not None
        and coupon.currency != normalize_currency(currency)
    ):
        raise ValidationError("the coupon's currency differs", field="currency")


@dataclass(frozen=True, slots=True)
class CouponAssociation:
    """A coupon attached to a subscription (``line_item_id`` None) or to one of its line items.

    ``[start_date, end_date)`` bounds when it applies (``end_date`` None = open). ``applications``
    counts invoices it already discounted (for ``once`` and ``repeated``). Raises
    ``ValidationError`` for naive instants or ``end_date`` before ``start_date``.
    """

    id: str
    coupon: Coupon
    start_date: datetime
    end_date: datetime | None = None
    line_item_id: str | None = None
    applications: int = 0

    def __post_init__(self) -> None:
        require_str(self.id, field="coupon_association_id")
        if not isinstance(self.coupon, Coupon):
            raise ValidationError("coupon must be a Coupon", field="coupon")
        start = require_utc(self.start_date, field="start_date")
        end = require_optional_utc(self.end_date, field="end_date")
        if end is not None and end < start:
            raise ValidationError("end_date must not be before start_date", field="end_date")
        object.__setattr__(self, "start_date", start)
        object.__setattr__(self, "end_date", end)
        if self.line_item_id is not None:
            require_str(self.line_item_id, field="subscription_line_item_id")
        require_int(self.applications, field="applications", minimum=0)


def association_applies(
    association: CouponAssociation,
    period_start: datetime,
    period_end: datetime,
    *,
    currency: str,
    as_of: datetime | None = None,
) -> bool:
    """Whether the association discounts the invoice for ``[period_start, period_end)``.

    False when: the association has zero duration; it does not overlap the period; a ``once``
    coupon was already applied; a ``repeated`` one was applied ``duration_in_periods`` times; a fixed
    coupon's currency differs; ``as_of`` (the computation instant, if given) lies outside the
    redeem window for a non-``forever`` coupon. Example: ``repeated`` for 3 periods with 3
    applications -> False.
    """
    start, end = association.start_date, association.end_date
    if end is not None and (end <= start or end <= period_start):
        return False
    if start >= period_end:
        return False
    coupon = association.coupon
    cadence = coupon.cadence
    if cadence == "once" and association.applications >= 1:
        return False
    if cadence == "repeated" and association.applications >= (coupon.duration_in_periods or 0):
        return False
    if coupon.currency is not None and coupon.currency != currency:
        return False
    return as_of is None or cadence == "forever" or coupon.redeemable_at(as_of)


def coupon_discount(coupon: Coupon, base: Decimal, currency: str) -> Decimal:
    """The discount ``coupon`` gives on ``base`` (money), rounded, between 0 and ``base``.

    Example: 15% of 200.00 = 30.00; fixed 50 on 30.00 = 30.00; anything on 0 = 0.
    """
    if base <= ZERO:
        return ZERO
    if coupon.percentage_off is not None:
        discount = round_money(base * coupon.percentage_off / _HUNDRED, currency)
    else:
        discount = round_money(coupon.amount_off or ZERO, currency)
    return base if discount > base else discount


def distribute(total: Decimal, weights: Sequence[Decimal], currency: str) -> tuple[Decimal, ...]:
    """Split ``total`` over ``weights`` in proportion, summing exactly to ``total``.

    Cumulative rounding: part ``i`` = round(total * W_i / W) - round(total * W_(i-1) / W), where W_i
    is the sum of the first ``i`` weights and rounding is half away from zero at the currency's
    minor unit. The parts therefore sum to ``total`` exactly, each part is within one minor unit of
    its exact share, and with weights in whole minor units and ``total <= sum(weights)`` no part is
    negative or above its weight. Example: 10.00 over [10, 10, 10] -> (3.33, 3.34, 3.33).
    Raises ``ValidationError`` (field ``discount``) for negative weights or a total outside
    ``[0, sum(weights)]``.
    """
    weight_sum = sum(weights, ZERO)
    if total < ZERO or total > weight_sum or (weights and min(weights) < ZERO):
        raise ValidationError(
            "a distributed amount must be between 0 and the sum of non-negative weights",
            field="discount",
        )
    unit = quantize_exponent(currency)
    if total == ZERO or weight_sum == ZERO:
        zero = ZERO.quantize(unit)
        return tuple(zero for _ in weights)
    factor = total / weight_sum
    parts: list[Decimal] = []
    append = parts.append
    running = ZERO
    previous = ZERO.quantize(unit)
    last = len(weights) - 1
    for index in range(last):
        running += weights[index]
        share = round_money(running * factor, currency)
        append(share - previous)
        previous = share
    # The last cumulative share is the total itself, so rounding cannot lose a unit.
    append(total - previous)
    return tuple(parts)


class CouponApplication(NamedTuple):
    """One coupon applied to an invoice (the spec's "Invoice coupon application").

    ``line_item_id`` is the subscription line item for a line coupon, None for an invoice-level one.
    ``original_price`` - ``discounted_amount`` = ``final_price``, all money, rounded.
    """

    coupon_id: str
    coupon_association_id: str
    line_item_id: str | None
    discount_type: str
    discount_percentage: Decimal | None
    discounted_amount: Decimal
    original_price: Decimal
    final_price: Decimal
    currency: str


class CouponResult(NamedTuple):
    """Discounts per line (input order), the application records, and what each line still owes."""

    line_item_discounts: tuple[Decimal, ...]
    invoice_level_discounts: tuple[Decimal, ...]
    applications: tuple[CouponApplication, ...]
    remaining: tuple[Decimal, ...]

    @property
    def total_discount(self) -> Decimal:
        """Σ line-item discounts + Σ invoice-level discounts."""
        return sum(self.line_item_discounts, ZERO) + sum(self.invoice_level_discounts, ZERO)


def _order_key(association: CouponAssociation) -> tuple[datetime, str]:
    return association.start_date, association.id


def apply_coupons(
    line_ids: Sequence[str],
    line_amounts: Sequence[Decimal],
    associations: Sequence[CouponAssociation],
    *,
    currency: str,
    period_start: datetime,
    period_end: datetime,
    as_of: datetime | None = None,
) -> CouponResult:
    """Apply the associations that apply to this period to invoice lines (amounts rounded, >= 0).

    ``line_ids[i]`` is the subscription line item id of line ``i``. Line coupons apply first (a
    coupon on a line item id matches every invoice line of that id); invoice-level coupons then
    apply in order of (start_date, id) to the remaining total, spread with :func:`distribute`.
    Example: lines [100, 50], 10% on line 1, then 20.00 off the invoice -> line discounts [10, 0],
    remaining [90, 50], invoice-level [12.86, 7.14]. Raises ``ValidationError`` on mismatched inputs.
    """
    count = len(line_amounts)
    if len(line_ids) != count:
        raise ValidationError("line ids and amounts differ in length", field="line_items")
    remaining = list(line_amounts)
    line_disc = [ZERO] * count
    inv_disc = [ZERO] * count
    applications: list[CouponApplication] = []
    applicable = [
        a
        for a in associations
        if association_applies(a, period_start, period_end, currency=currency, as_of=as_of)
    ]
    applicable.sort(key=_order_key)
    for assoc in applicable:
        target = assoc.line_item_id
        if target is None:
            continue
        coupon = assoc.coupon
        for i in range(count):
            if line_ids[i] != target:
                continue
            before = remaining[i]
            discount = coupon_discount(coupon, before, currency)
            if discount == ZERO:
                continue
            remaining[i] = before - discount
            line_disc[i] += discount
            applications.append(
                CouponApplication(
                    coupon.id,
                    assoc.id,
                    target,
                    coupon.type,
                    coupon.percentage_off,
                    discount,
                    before,
                    before - discount,
                    currency,
                )
            )
    for assoc in applicable:
        if assoc.line_item_id is not None:
            continue
        coupon = assoc.coupon
        before = sum(remaining, ZERO)
        discount = coupon_discount(coupon, before, currency)
        if discount == ZERO:
            continue
        parts = distribute(discount, remaining, currency)  # one part per line, by construction
        remaining = list(map(sub, remaining, parts))
        inv_disc = list(map(add, inv_disc, parts))
        applications.append(
            CouponApplication(
                coupon.id,
                assoc.id,
                None,
                coupon.type,
                coupon.percentage_off,
                discount,
                before,
                before - discount,
                currency,
            )
        )
    return CouponResult(tuple(line_disc), tuple(inv_disc), tuple(applications), tuple(remaining))
