"""The entitlement check: may a customer use a feature now, and how much has it used?

Rules (decisions in docs/decisions.md, worked examples in docs/billing-rules.md):

- **Granting subscriptions**: a live (``published``) subscription grants while it is ``active`` or
  ``trialing`` and ``now`` lies in ``[start_date, end_date)`` and before a ``cancel_at``; drafts,
  ``incomplete``, ``paused`` and ``cancelled`` subscriptions grant nothing.
- **Decision** (:func:`is_allowed`): a feature no granting subscription enables is refused; an
  enabled boolean, static or config feature is allowed; a metered one is allowed when unlimited,
  when its limit is soft (the host sees ``usage`` above ``limit`` and may warn), or when
  ``usage < limit``: at or over a hard limit it is refused. Example: hard limit 1,000, usage 999 ->
  allowed; usage 1,000 -> refused; soft limit 1,000, usage 1,200 -> allowed.
- **Usage window** (:func:`usage_window`), from the subscription that grants the feature:
  reset period unset (with a meter that resets per billing period) or equal to the subscription's
  own one-period cycle -> its current billing period; ``NEVER`` (or unset with a meter whose
  ``reset_usage`` is ``NEVER``) -> from the subscription's start to its current period's end;
  another period -> windows of that length counted from the billing anchor in the subscription's
  time zone (e.g. DAILY on a monthly subscription anchored 15 Jan 09:00 UTC: each day from 09:00
  UTC), never starting before the subscription.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.catalog.entitlements import UsageResetPeriod
from billingkit.domain.catalog.features import FeatureType
from billingkit.domain.entitlement_aggregation import AggregatedEntitlement
from billingkit.domain.money import ZERO
from billingkit.domain.periods import BillingPeriod, BillingSchedule, Period
from billingkit.domain.resources import Status, iso
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.usage_meters import AggregationType, MeterSpec

__all__ = [
    "GRANTING_STATUSES",
    "EntitlementCheck",
    "grants_now",
    "is_allowed",
    "splits_in_time",
    "usage_window",
]

#: The subscription statuses that grant their entitlements.
GRANTING_STATUSES = frozenset({SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING})

# Aggregations whose value over [a, c) is the value over [a, b) plus the value over [b, c), exactly.
_ADDITIVE = frozenset({AggregationType.COUNT, AggregationType.SUM, AggregationType.SUM_WITH_MULTIPLIER})


def grants_now(sub: Subscription, now: datetime) -> bool:
    """Whether ``sub`` grants its entitlements at ``now`` (see the module doc)."""
    return (
        sub.status is Status.PUBLISHED
        and sub.subscription_status in GRANTING_STATUSES
        and sub.start_date <= now
        and (sub.end_date is None or now < sub.end_date)
        and (sub.cancel_at is None or now < sub.cancel_at)
    )


def _billing_period_at(sub: Subscription, now: datetime) -> Period:
    """The subscription's current period, or (when the billing run has not advanced it yet) the
    period of its schedule that holds ``now``."""
    if sub.current_period_start <= now < sub.current_period_end:
        return Period(sub.current_period_start, sub.current_period_end)
    return sub.schedule().period_containing(now)


def usage_window(
    sub: Subscription, reset: UsageResetPeriod | None, *, cumulative_meter: bool, now: datetime
) -> Period:
    """The window ``[start, end)`` holding ``now`` in which usage counts against a limit that
    ``sub`` grants with reset period ``reset`` (see the module doc). ``cumulative_meter``: the
    feature's meter never resets (``reset_usage`` ``NEVER``).

    Example: monthly subscription, current period 1 May - 1 Jun, reset ``MONTHLY`` -> 1 May - 1 Jun;
    reset ``NEVER``, started 1 Jan -> 1 Jan - 1 Jun.
    """
    period = _billing_period_at(sub, now)
    if reset is UsageResetPeriod.NEVER or (reset is None and cumulative_meter):
        return Period(min(sub.start_date, period.start), period.end)
    if reset is None or (sub.billing_period_count == 1 and reset.value == sub.billing_period.value):
        return period
    schedule = BillingSchedule(
        anchor=sub.billing_anchor, period=BillingPeriod(reset.value), timezone=sub.timezone
    )
    window = schedule.period_containing(now)
    if window.start < sub.start_date < window.end:
        return Period(sub.start_date, window.end)
    return window


def splits_in_time(meter: MeterSpec) -> bool:
    """Whether the meter's usage over a window is exactly the sum of its usage over two halves
    (COUNT, SUM, SUM_WITH_MULTIPLIER without buckets or groups), so an earlier part can be kept
    and only the rest measured again."""
    return meter.aggregation in _ADDITIVE and meter.bucket_size is None and meter.group_by is None


def is_allowed(entitlement: AggregatedEntitlement | None, feature_type: FeatureType, usage: Decimal) -> bool:
    """The decision of the module doc for an aggregate (``None``: nothing grants the feature)."""
    if entitlement is None or not entitlement.is_enabled:
        return False
    if feature_type is not FeatureType.METERED:
        return True
    if entitlement.usage_limit is None or entitlement.is_soft_limit:
        return True
    return usage < entitlement.usage_limit


@dataclass(frozen=True, slots=True)
class EntitlementCheck:
    """The answer of ``scoped.entitlements.check(customer, feature)``.

    ``allowed``: the decision; ``is_enabled``: some granting subscription enables the feature;
    ``usage``: the customer's usage of a metered feature's meter in ``[window_start, window_end)``
    (0 and no window for other features or when nothing grants it); ``limit``: the aggregated
    limit (``None``: unlimited; 0 when nothing grants a metered feature); ``subscription_ids``:
    the granting subscriptions; ``static_values`` / ``config_values``: what static and config
    features grant.
    """

    customer_id: str
    feature_id: str
    feature_type: FeatureType
    allowed: bool
    is_enabled: bool
    usage: Decimal = ZERO
    limit: Decimal | None = ZERO
    is_soft_limit: bool = False
    usage_reset_period: UsageResetPeriod | None = None
    window_start: datetime | None = None
    window_end: datetime | None = None
    subscription_ids: tuple[str, ...] = ()
    static_values: tuple[str, ...] = ()
    config_values: tuple[dict[str, Any], ...] = ()

    @property
    def remaining(self) -> Decimal | None:
        """What is left of the limit (never below 0); ``None`` when unlimited."""
        if self.limit is None:
            return None
        return max(ZERO, self.limit - self.usage)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: quantities as decimal strings, instants in ISO 8601 UTC."""
        return {
            "customer_id": self.customer_id,
            "feature_id": self.feature_id,
            "feature_type": self.feature_type.value,
            "allowed": self.allowed,
            "is_enabled": self.is_enabled,
            "usage": str(self.usage),
            "usage_limit": None if self.limit is None else str(self.limit),
            "remaining": None if self.remaining is None else str(self.remaining),
            "is_soft_limit": self.is_soft_limit,
            "usage_reset_period": self.usage_reset_period.value if self.usage_reset_period else None,
            "window_start": iso(self.window_start),
            "window_end": iso(self.window_end),
            "subscription_ids": list(self.subscription_ids),
            "static_values": list(self.static_values),
            "config_values": [dict(value) for value in self.config_values],
        }
