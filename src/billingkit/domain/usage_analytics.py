"""The arithmetic of usage and cost analytics: time windows, usage of one group, and the cost of
usage under a price, whole and window by window.

- Windows cover ``[start, end)`` on the UTC grid of :mod:`.usage_buckets` (MONTH by calendar
  month, WEEK from Monday): the first and last are clipped to the range, so they tile it exactly.
- The cost of a usage result under a price is what billing charges for that usage: the price
  applied to the value (a bucketed meter: to each bucket, :func:`~.pricing.price_buckets`),
  rounded once at the currency's precision. Negative usage costs nothing.
- Window costs are increments of the cost of the usage so far: window ``i`` costs
  ``cost([s, end_i)) - cost([s, start_i))``, so they always add up to the whole range's cost,
  exactly, whatever the price's tiers or packages.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from billingkit.domain.money import ZERO
from billingkit.domain.pricing import PriceSpec, price_buckets, price_quantity
from billingkit.domain.usage_buckets import BucketSize, bucket_end, bucket_start
from billingkit.domain.usage_results import UsageBucketValue, UsageResult
from billingkit.errors import ValidationError

__all__ = ["MAX_WINDOWS", "Window", "group_usage", "usage_cost", "windows"]

#: At most this many windows in one answer (a minute grid over a year would be half a million).
MAX_WINDOWS = 1000

Window = tuple[datetime, datetime]


def windows(start: datetime, end: datetime, size: BucketSize) -> list[Window]:
    """The windows of ``size`` covering ``[start, end)``, the first and last clipped to it.

    Example: DAY from 10:00 on the 1st to 06:00 on the 3rd → [1st 10:00, 2nd), [2nd, 3rd),
    [3rd, 3rd 06:00). Raises ``ValidationError`` (field ``window_size``) past :data:`MAX_WINDOWS`.
    """
    out: list[Window] = []
    current = bucket_start(start, size)
    while current < end:
        following = bucket_end(current, size)
        out.append((max(current, start), min(following, end)))
        if len(out) > MAX_WINDOWS:
            raise ValidationError(
                f"window_size {size.value} splits the range into more than {MAX_WINDOWS} windows;"
                " choose a larger window or a shorter range",
                field="window_size",
            )
        current = following
    return out


def group_usage(result: UsageResult, key: str | None, grouped: bool) -> tuple[Decimal, int]:
    """The value and event count of group ``key`` (the whole result when not ``grouped``)."""
    if not grouped:
        return result.value, result.event_count
    for group in result.groups:
        if group.key == key:
            return group.value, group.event_count
    return ZERO, 0


def usage_cost(price: PriceSpec, result: UsageResult, key: str | None, grouped: bool) -> Decimal:
    """What ``price`` charges for group ``key`` of ``result`` (see the module docs)."""
    if result.buckets:
        quantities = [
            max(value, ZERO) for bucket in result.buckets for value in _bucket_values(bucket, key, grouped)
        ]
        return price_buckets(price, quantities).amount
    value, _ = group_usage(result, key, grouped)
    return price_quantity(price, max(value, ZERO)).amount


def _bucket_values(bucket: UsageBucketValue, key: str | None, grouped: bool) -> list[Decimal]:
    if not grouped:
        return [bucket.value]
    return [group.value for group in bucket.groups if group.key == key]
