"""Entitlement allowances: free usage of a metered feature deducted before pricing.

An enabled entitlement with a ``usage_limit`` gives that much usage free in every reset window; only
what lies above the limit (the **overage**) can be billed:

- **soft limit** (``is_soft_limit=True``): the overage is billed.
  Example: limit 1,000 API calls, 1,250 used → 1,000 included, 250 billable.
- **hard limit** (``is_soft_limit=False``): usage above the limit should have been blocked, so it is
  not billed; it is still reported as ``overage`` so that leaks of the enforcement show up.
  Example: limit 1,000, 1,250 used → 1,000 included, 0 billable, overage 250.
- **unlimited** (``usage_limit=None``): all usage is covered; nothing is billable.
  Example: 1,250 used → 1,250 included, 0 billable.
- **disabled** entitlement (``is_enabled=False``): no allowance; all usage is billable.

Reset windows (``usage_reset_period``): the limit applies per window and the results are summed.
With a billing-period reset the billing period is the only window (plain subtraction); with a
shorter reset (e.g. DAILY on a monthly subscription) each day has its own limit, e.g. limit 100/day,
usage 150 on day 1 and 80 on day 2 → billable 50 + 0 = 50; with ``NEVER`` the limit is for the
lifetime of the subscription, so usage counted in earlier periods uses it up (see
:func:`apply_lifetime_allowance`).

Several sources on one meter (the plan's entitlement and those of the add-ons in force) make one
allowance (:func:`combined_allowance`): limits add up, unlimited wins, disabled sources give
nothing, and the overage is billable when any enabled source has a soft limit. Example: plan 1,000
(hard) + add-on 500 (soft) → 1,500, soft: 1,800 used → 300 billable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from billingkit.domain.money import ZERO, parse_decimal
from billingkit.domain.validation import parse_enum
from billingkit.errors import ValidationError

__all__ = [
    "Allowance",
    "AllowanceReset",
    "AllowanceResult",
    "apply_allowance",
    "apply_allowance_per_window",
    "apply_lifetime_allowance",
    "combined_allowance",
]


class AllowanceReset(StrEnum):
    """The window an allowance applies to: the catalogue's ``UsageResetPeriod`` values plus
    ``BILLING_PERIOD`` (billingkit's name for "with the subscription's own period", which the
    reference has no value for and entitlements therefore do not accept)."""

    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    QUARTERLY = "QUARTERLY"
    HALF_YEARLY = "HALF_YEARLY"
    ANNUAL = "ANNUAL"
    NEVER = "NEVER"
    BILLING_PERIOD = "BILLING_PERIOD"


@dataclass(frozen=True, slots=True)
class Allowance:
    """The allowance of one metered entitlement.

    ``usage_limit``: non-negative quantity per reset window (ints, Decimals or decimal strings), or
    ``None`` for unlimited. Raises ``ValidationError`` on ``usage_limit``, ``is_soft_limit``,
    ``is_enabled``, ``usage_reset_period``.
    """

    usage_limit: Decimal | None
    is_soft_limit: bool = False
    is_enabled: bool = True
    usage_reset_period: AllowanceReset = AllowanceReset.BILLING_PERIOD

    def __post_init__(self) -> None:
        if self.usage_limit is not None:
            limit = parse_decimal(self.usage_limit, field="usage_limit", allow_negative=False)
            object.__setattr__(self, "usage_limit", limit)
        for name in ("is_soft_limit", "is_enabled"):
            if not isinstance(getattr(self, name), bool):
                raise ValidationError(f"{name} must be a boolean", field=name)
        reset = parse_enum(AllowanceReset, self.usage_reset_period, field="usage_reset_period")
        object.__setattr__(self, "usage_reset_period", reset)


@dataclass(frozen=True, slots=True)
class AllowanceResult:
    """How usage splits: ``usage = included + overage``; ``billable`` is the overage for a soft
    limit or a disabled entitlement, and 0 for a hard limit or unlimited allowance.
    """

    usage: Decimal
    included: Decimal
    overage: Decimal
    billable: Decimal

    def __add__(self, other: AllowanceResult) -> AllowanceResult:
        return AllowanceResult(
            self.usage + other.usage,
            self.included + other.included,
            self.overage + other.overage,
            self.billable + other.billable,
        )


def _usage(value: Any, field: str) -> Decimal:
    return parse_decimal(value, field=field, allow_negative=False)


def _split(allowance: Allowance, usage: Decimal, remaining_limit: Decimal | None) -> AllowanceResult:
    if not allowance.is_enabled:
        return AllowanceResult(usage, ZERO, usage, usage)
    if remaining_limit is None:
        return AllowanceResult(usage, usage, ZERO, ZERO)
    included = min(usage, remaining_limit)
    overage = usage - included
    billable = overage if allowance.is_soft_limit else ZERO
    return AllowanceResult(usage, included, overage, billable)


def apply_allowance(allowance: Allowance, usage: Decimal) -> AllowanceResult:
    """Split one window's ``usage`` (non-negative quantity) by the allowance.

    Example: soft limit 1000, usage 1250 → included 1000, overage 250, billable 250.
    Raises ``ValidationError`` (fields ``allowance``, ``usage``).
    """
    if not isinstance(allowance, Allowance):
        raise ValidationError("allowance must be an Allowance", field="allowance")
    return _split(allowance, _usage(usage, "usage"), allowance.usage_limit)


def apply_allowance_per_window(allowance: Allowance, usages: Iterable[Decimal]) -> AllowanceResult:
    """Apply the limit to each reset window's usage separately and sum the results.

    Example: soft limit 100/day, usages [150, 80] → billable 50 + 0 = 50. An empty list gives zeros.
    Raises ``ValidationError`` (fields ``allowance``, ``usages[i]``).
    """
    if not isinstance(allowance, Allowance):
        raise ValidationError("allowance must be an Allowance", field="allowance")
    if isinstance(usages, str | bytes) or not isinstance(usages, Iterable):
        raise ValidationError("usages must be a list of decimals", field="usages")
    total = AllowanceResult(ZERO, ZERO, ZERO, ZERO)
    for index, usage in enumerate(usages):
        total = total + _split(allowance, _usage(usage, f"usages[{index}]"), allowance.usage_limit)
    return total


def apply_lifetime_allowance(
    allowance: Allowance, usage: Decimal, *, prior_usage: Decimal
) -> AllowanceResult:
    """A never-resetting allowance: ``prior_usage`` (counted in earlier periods) uses it up first.

    Example: soft limit 1000, prior usage 900, usage now 300 → included 100, billable 200.
    Raises ``ValidationError`` (fields ``allowance``, ``usage``, ``prior_usage``).
    """
    if not isinstance(allowance, Allowance):
        raise ValidationError("allowance must be an Allowance", field="allowance")
    current = _usage(usage, "usage")
    prior = _usage(prior_usage, "prior_usage")
    limit = allowance.usage_limit
    remaining = None if limit is None else max(ZERO, limit - prior)
    return _split(allowance, current, remaining)


def combined_allowance(allowances: Iterable[Allowance]) -> Allowance | None:
    """One allowance from several sources on the same meter and reset window (``None`` when there
    is none): the enabled sources' limits summed, unlimited when one of them is, soft when one of
    them is; all disabled → a disabled allowance (all usage billable).

    Examples: 1,000 + 500 → 1,500; 1,000 + unlimited → unlimited; one disabled + 200 → 200; one
    source alone → itself. Raises ``ValidationError`` (field ``allowance``) for a non-Allowance.
    """
    given = list(allowances)
    for allowance in given:
        if not isinstance(allowance, Allowance):
            raise ValidationError("allowance must be an Allowance", field="allowance")
    if len(given) <= 1:
        return given[0] if given else None
    enabled = [a for a in given if a.is_enabled]
    if not enabled:
        return Allowance(usage_limit=None, is_enabled=False, usage_reset_period=given[0].usage_reset_period)
    soft = any(a.is_soft_limit for a in enabled)
    reset = enabled[0].usage_reset_period
    if any(a.usage_limit is None for a in enabled):
        return Allowance(usage_limit=None, is_soft_limit=soft, usage_reset_period=reset)
    total = sum((a.usage_limit for a in enabled if a.usage_limit is not None), ZERO)
    return Allowance(usage_limit=total, is_soft_limit=soft, usage_reset_period=reset)
