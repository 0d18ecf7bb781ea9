"""Commitments: a minimum spend with overage and true-up.

The rule, for a usage cost ``u`` (money) measured against a commitment ``c`` (money):

* ``u >= c``: the charge is ``c + (u - c) * overage_factor``
  (commit 1000, usage 1200, factor 1.5: ``1000 + 200 * 1.5 = 1300``);
* ``u < c`` with true-up: the charge is ``c`` (usage 700: ``700 + true-up 300 = 1000``);
* ``u < c`` without true-up: the charge is ``u`` (700).

Variants: a commitment by quantity is turned into money by pricing the committed quantity through the
line's price; a windowed commitment applies the rule to every meter bucket separately and sums; time of
day buckets apply their own commitment to every usage bucket whose start falls in their window; a
cumulative commitment (longer than the billing period) measures usage across the periods of its
duration and trues up only on the invoice that closes it; a subscription commitment is used up by the
usage lines in order, the excess of the line that crosses it becoming overage.

Every figure is rounded with :func:`billingkit.domain.money.round_money`; a charge is the sum of its
rounded parts (``utilized + overage + true_up``). Below the commitment with true-up the charge is
exactly the rounded commitment: the true-up is ``round(commitment) - round(usage)``, never the
separately rounded shortfall (usage 749.995 against 1,000.00 bills 750.00 + 250.00 = 1,000.00, not
750.00 + 250.01). A cumulative commitment keeps that across its window: the prior usage it is given
is what earlier invoices already billed (rounded figures), so the window bills ``round(commitment)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from functools import partial
from typing import NamedTuple

from billingkit.domain.invariants import (
    require_bool,
    require_choice,
    require_decimal,
    require_int,
    require_str,
    require_utc,
)
from billingkit.domain.money import ZERO, normalize_currency, round_money
from billingkit.errors import ValidationError

__all__ = [
    "COMMITMENT_TYPES",
    "CommitmentOutcome",
    "LineCommitment",
    "SubscriptionCommitment",
    "SubscriptionCommitmentSplit",
    "TimeBucket",
    "TimeOfDay",
    "UsageBucket",
    "commitment_outcome",
    "cumulative_commitment_outcome",
    "resolve_commitment_amount",
    "split_subscription_commitment",
    "time_bucket_commitment_outcome",
    "windowed_commitment_outcome",
]

COMMITMENT_TYPES = ("amount", "quantity")
_ONE = Decimal(1)


class CommitmentOutcome(NamedTuple):
    """What committed usage costs, in currency units, rounded.

    ``amount = utilized + overage + true_up``. ``usage`` is the usage cost measured (before the
    commitment). ``overage`` is the charged excess (excess * factor); these map to the invoice line's
    ``commitment_info`` fields ``computed_commitment_utilized_amount``, ``computed_overage_amount`` and
    ``computed_true_up_amount``.
    """

    amount: Decimal
    usage: Decimal
    utilized: Decimal
    overage: Decimal
    true_up: Decimal


def commitment_outcome(
    usage: Decimal,
    commitment: Decimal,
    overage_factor: Decimal,
    true_up_enabled: bool,
    currency: str,
) -> CommitmentOutcome:
    """Apply the commitment rule to one usage cost (money, >= 0) and one commitment (money, >= 0).

    Example: usage 1200, commitment 1000, factor 1.5 -> amount 1300 (utilized 1000, overage 300).
    Inputs are expected validated (see :class:`LineCommitment`); the result is rounded at the
    currency's precision.
    """
    if usage >= commitment:
        utilized = round_money(commitment, currency)
        overage = round_money((usage - commitment) * overage_factor, currency)
        return CommitmentOutcome(utilized + overage, usage, utilized, overage, ZERO)
    utilized = round_money(usage, currency)
    true_up = _shortfall(round_money(commitment, currency), utilized) if true_up_enabled else ZERO
    return CommitmentOutcome(utilized + true_up, usage, utilized, ZERO, true_up)


def _shortfall(commitment: Decimal, billed: Decimal) -> Decimal:
    """What tops ``billed`` (rounded) up to ``commitment`` (rounded); never negative.

    Both figures are rounded already, so ``billed + shortfall`` is exactly the rounded commitment.
    """
    return commitment - billed if commitment > billed else ZERO


def cumulative_commitment_outcome(
    usage: Decimal,
    prior_usage: Decimal,
    commitment: Decimal,
    overage_factor: Decimal,
    true_up_enabled: bool,
    closes_window: bool,
    currency: str,
) -> CommitmentOutcome:
    """Commitment spanning several billing periods (e.g. an ANNUAL commitment billed MONTHLY).

    ``prior_usage`` is the usage cost already counted in earlier periods of the commitment window.
    Usage within the remaining commitment is charged as is; beyond it, * factor; the true-up
    ``commitment - (prior + usage)`` is charged only when ``closes_window`` (the invoice whose
    period ends the window). Example: commit 12000, prior 11000, usage 1500, factor 2 ->
    within 1000 + overage 500 * 2 = 2000. The true-up is ``round(commitment) - round(prior_usage) -
    utilized``, so with ``prior_usage`` the rounded usage billed before, the window bills exactly
    ``round(commitment)`` when usage stays below it.
    """
    remaining = commitment - prior_usage
    if remaining < ZERO:
        remaining = ZERO
    within = usage if usage < remaining else remaining
    utilized = round_money(within, currency)
    overage = round_money((usage - within) * overage_factor, currency)
    true_up = ZERO
    if closes_window and true_up_enabled and prior_usage + usage < commitment:
        true_up = _shortfall(round_money(commitment, currency), round_money(prior_usage, currency) + utilized)
    return CommitmentOutcome(utilized + overage + true_up, usage, utilized, overage, true_up)


def windowed_commitment_outcome(
    window_usages: Sequence[Decimal],
    commitment: Decimal,
    overage_factor: Decimal,
    true_up_enabled: bool,
    currency: str,
    *,
    window_count: int | None = None,
) -> CommitmentOutcome:
    """Apply the commitment to each meter bucket's usage cost separately and sum the outcomes.

    ``window_count`` (>= number of usages) counts windows without usage as zero usage, so a true-up
    is charged for them too. Example: commit 10 per day, days [12, 4], factor 2, true-up ->
    (10 + 2*2) + (4 + 6) = 24. Raises ``ValidationError`` (field ``window_count``) if fewer windows
    than usages are declared.
    """
    count = len(window_usages)
    if window_count is not None:
        require_int(window_count, field="window_count", minimum=count)
    amount = usage_total = utilized = overage = true_up = ZERO
    for usage in window_usages:
        part = commitment_outcome(usage, commitment, overage_factor, true_up_enabled, currency)
        amount += part.amount
        usage_total += usage
        utilized += part.utilized
        overage += part.overage
        true_up += part.true_up
    if window_count is not None and window_count > count and true_up_enabled:
        # Windows without any usage still owe the commitment.
        empty = round_money(commitment, currency) * (window_count - count)
        true_up += empty
        amount += empty
    return CommitmentOutcome(amount, usage_total, utilized, overage, true_up)


def resolve_commitment_amount(
    commitment_type: str, value: Decimal, price_quantity: Callable[[Decimal], Decimal]
) -> Decimal:
    """The commitment in money: ``value`` for type ``amount``; ``price_quantity(value)`` for ``quantity``.

    Example: a commitment of 1000 units on a price of 0.02/unit is 20.00. Raises ``ValidationError``
    (field ``commitment_type``) for an unknown type.
    """
    if commitment_type == "amount":
        return value
    if commitment_type == "quantity":
        return price_quantity(value)
    raise ValidationError("commitment_type must be amount or quantity", field="commitment_type")


@dataclass(frozen=True, slots=True)
class TimeOfDay:
    """A wall-clock time (``hour`` 0-24, ``minute`` 0-59; 24:00 only as an end = midnight)."""

    hour: int
    minute: int = 0

    def __post_init__(self) -> None:
        require_int(self.hour, field="hour", minimum=0)
        require_int(self.minute, field="minute", minimum=0)
        if self.hour > 24:
            raise ValidationError("hour must be between 0 and 24 (24:00 = midnight)", field="hour")
        if self.minute > 59 or (self.hour == 24 and self.minute != 0):
            raise ValidationError(
                "minute must be between 0 and 59, and 0 at hour 24 (24:00 = midnight)", field="minute"
            )

    @property
    def minutes(self) -> int:
        """Minutes since midnight."""
        return self.hour * 60 + self.minute


@dataclass(frozen=True, slots=True)
class TimeBucket:
    """A time-of-day window with its own commitment (one ``commitment_time_buckets`` entry).

    The window is ``[start, end)`` in local time; ``end`` before ``start`` wraps past midnight
    (22:00-06:00); ``start == end`` is the whole day. ``commitment_value`` is money for type
    ``amount`` and a quantity for ``quantity``. Raises ``ValidationError`` naming the bad field.
    """

    start: TimeOfDay
    end: TimeOfDay
    commitment_type: str
    commitment_value: Decimal
    overage_factor: Decimal = _ONE
    true_up_enabled: bool = False
    id: str = ""
    price_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.start, TimeOfDay):
            raise ValidationError("start must be a time of day", field="start")
        if not isinstance(self.end, TimeOfDay):
            raise ValidationError("end must be a time of day", field="end")
        if self.start.hour == 24:
            raise ValidationError("start must be before 24:00", field="start")
        require_choice(self.commitment_type, COMMITMENT_TYPES, field="commitment_type")
        object.__setattr__(
            self,
            "commitment_value",
            require_decimal(self.commitment_value, field="commitment_value", minimum=ZERO),
        )
        object.__setattr__(
            self,
            "overage_factor",
            require_decimal(self.overage_factor, field="overage_factor", minimum=_ONE),
        )
        require_bool(self.true_up_enabled, field="true_up_enabled")
        if not isinstance(self.id, str):
            raise ValidationError("id must be a string", field="id")
        if self.price_id is not None:
            require_str(self.price_id, field="price_id")

    def contains(self, minutes: int) -> bool:
        """Whether a local time (minutes since midnight) falls in ``[start, end)``."""
        start, end = self.start.minutes, self.end.minutes % 1440
        if start == end:
            return True
        if start < end:
            return start <= minutes < end
        return minutes >= start or minutes < end


@dataclass(frozen=True, slots=True)
class UsageBucket:
    """The usage quantity of one meter bucket starting at ``start`` (aware; stored as UTC)."""

    start: datetime
    quantity: Decimal

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", require_utc(self.start, field="start"))
        object.__setattr__(self, "quantity", require_decimal(self.quantity, field="quantity", minimum=ZERO))


def time_bucket_commitment_outcome(
    buckets: Sequence[UsageBucket],
    time_buckets: Sequence[TimeBucket],
    price: Callable[[TimeBucket | None, Decimal], Decimal],
    currency: str,
    *,
    zone: tzinfo = UTC,
) -> tuple[CommitmentOutcome, tuple[tuple[str, Decimal, Decimal], ...]]:
    """Charge every usage bucket by the time bucket whose window holds its start (local ``zone``).

    ``price(time_bucket, quantity)`` prices a quantity with the time bucket's price (``None`` for a
    usage bucket no time bucket covers, which is charged at its price without commitment). Each usage
    bucket is measured against its time bucket's commitment separately. The first matching time
    bucket wins. Returns the summed outcome and, per usage bucket, ``(time_bucket_id, quantity,
    charge)``. Example: peak 09:00-17:00 commit 5.00, factor 2; a 10:00 bucket costing 7.00 ->
    5 + 2 * 2 = 9.00.
    """
    currency = normalize_currency(currency)
    amount = usage_total = utilized = overage = true_up = ZERO
    details: list[tuple[str, Decimal, Decimal]] = []
    for bucket in buckets:
        local = bucket.start.astimezone(zone)
        minutes = local.hour * 60 + local.minute
        chosen = next((tb for tb in time_buckets if tb.contains(minutes)), None)
        usage = price(chosen, bucket.quantity)
        if chosen is None:
            charge = round_money(usage, currency)
            amount += charge
            usage_total += usage
            utilized += charge
            details.append(("", bucket.quantity, charge))
            continue
        commit = resolve_commitment_amount(
            chosen.commitment_type, chosen.commitment_value, partial(price, chosen)
        )
        part = commitment_outcome(usage, commit, chosen.overage_factor, chosen.true_up_enabled, currency)
        amount += part.amount
        usage_total += usage
        utilized += part.utilized
        overage += part.overage
        true_up += part.true_up
        details.append((chosen.id, bucket.quantity, part.amount))
    return CommitmentOutcome(amount, usage_total, utilized, overage, true_up), tuple(details)


@dataclass(frozen=True, slots=True)
class LineCommitment:
    """A commitment on one subscription line item.

    ``commitment_type`` ``amount`` (``value`` is money) or ``quantity`` (``value`` is units, priced
    through the line's price). ``overage_factor`` >= 1 multiplies usage beyond the commitment;
    ``true_up_enabled`` charges the shortfall. ``windowed`` applies the rule per meter bucket.
    ``time_buckets`` (non-empty) applies time-of-day commitments per bucket instead.
    ``duration_periods`` > 1 makes it cumulative over that many billing periods.
    Raises ``ValidationError`` naming the JSON field for every bad value.
    """

    commitment_type: str
    value: Decimal
    overage_factor: Decimal = _ONE
    true_up_enabled: bool = False
    windowed: bool = False
    time_buckets: tuple[TimeBucket, ...] = ()
    duration_periods: int = 1

    def __post_init__(self) -> None:
        require_choice(self.commitment_type, COMMITMENT_TYPES, field="commitment_type")
        field = "commitment_amount" if self.commitment_type == "amount" else "commitment_quantity"
        object.__setattr__(self, "value", require_decimal(self.value, field=field, minimum=ZERO))
        object.__setattr__(
            self,
            "overage_factor",
            require_decimal(self.overage_factor, field="commitment_overage_factor", minimum=_ONE),
        )
        require_bool(self.true_up_enabled, field="commitment_true_up_enabled")
        require_bool(self.windowed, field="commitment_windowed")
        if not isinstance(self.time_buckets, tuple) or not all(
            isinstance(tb, TimeBucket) for tb in self.time_buckets
        ):
            raise ValidationError(
                "commitment_time_buckets must be a tuple of time buckets",
                field="commitment_time_buckets",
            )
        require_int(self.duration_periods, field="commitment_duration", minimum=1)
        if self.duration_periods > 1 and (self.windowed or self.time_buckets):
            raise ValidationError(
                "a cumulative commitment cannot also be windowed or time-bucketed",
                field="commitment_duration",
            )


@dataclass(frozen=True, slots=True)
class SubscriptionCommitment:
    """A subscription-level minimum spend on usage charges per billing period.

    ``amount`` > 0 (``commitment_amount``); ``overage_factor`` >= 1 (the spec's minimum; below ->
    ``ValidationError`` on ``overage_factor``); ``enable_true_up`` bills the shortfall;
    ``duration_periods`` > 1 makes it cumulative over that many billing periods.
    """

    amount: Decimal
    overage_factor: Decimal = _ONE
    enable_true_up: bool = False
    duration_periods: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "amount",
            require_decimal(self.amount, field="commitment_amount", strictly_above=ZERO),
        )
        object.__setattr__(
            self,
            "overage_factor",
            require_decimal(self.overage_factor, field="overage_factor", minimum=_ONE),
        )
        require_bool(self.enable_true_up, field="enable_true_up")
        require_int(self.duration_periods, field="commitment_duration", minimum=1)


class SubscriptionCommitmentSplit(NamedTuple):
    """How usage lines used up a subscription commitment.

    ``within[i]`` is the part of usage line ``i`` inside the commitment, ``overage[i]`` the charged
    excess (excess * factor), both rounded; ``true_up`` the shortfall charged (0 unless due).
    """

    within: tuple[Decimal, ...]
    overage: tuple[Decimal, ...]
    true_up: Decimal
    utilized: Decimal
    total_overage: Decimal


def split_subscription_commitment(
    usage_amounts: Sequence[Decimal],
    commitment: SubscriptionCommitment,
    currency: str,
    *,
    prior_usage: Decimal = ZERO,
    closes_window: bool = True,
) -> SubscriptionCommitmentSplit:
    """Use up the subscription commitment with the usage lines' costs in order.

    A line crossing the remaining commitment is split: the part inside is charged as is, the excess
    * ``overage_factor``. The true-up (commitment - all usage in the window) is due only when
    ``enable_true_up`` and ``closes_window``. Example: commit 100, factor 2, lines [60, 70] ->
    within [60, 40], overage [0, 30 * 2 = 60]. The true-up is ``round(commitment) -
    round(prior_usage) - utilized``: below the commitment the window bills exactly the rounded
    commitment. Raises ``ValidationError`` for negative amounts.
    """
    remaining = commitment.amount - require_decimal(prior_usage, field="prior_usage", minimum=ZERO)
    if remaining < ZERO:
        remaining = ZERO
    factor = commitment.overage_factor
    within_parts: list[Decimal] = []
    overage_parts: list[Decimal] = []
    used = ZERO
    for index, amount in enumerate(usage_amounts):
        if not isinstance(amount, Decimal) or not amount.is_finite() or amount < ZERO:
            raise ValidationError(
                "usage amounts must be non-negative decimals", field=f"usage_amounts[{index}]"
            )
        inside = amount if amount < remaining else remaining
        remaining -= inside
        excess = amount - inside
        # The excess is measured before rounding: a line inside the commitment has no overage.
        extra = round_money(excess * factor, currency) if excess > ZERO else ZERO
        within_parts.append(round_money(inside, currency))
        overage_parts.append(extra)
        used += amount
    true_up = ZERO
    utilized = sum(within_parts, ZERO)
    if commitment.enable_true_up and closes_window and prior_usage + used < commitment.amount:
        true_up = _shortfall(
            round_money(commitment.amount, currency), round_money(prior_usage, currency) + utilized
        )
    return SubscriptionCommitmentSplit(
        tuple(within_parts),
        tuple(overage_parts),
        true_up,
        utilized,
        sum(overage_parts, ZERO),
    )
