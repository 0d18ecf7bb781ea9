"""A customer's usage against its entitlements: ``GET /customers/usage`` (getCustomerUsageSummary).

Built on the entitlement check's rules (:mod:`billingkit.domain.entitlement_checks`): the features
the customer's granting subscriptions grant, aggregated with their sources
(:mod:`billingkit.services.subscription_entitlements`), and for each enabled metered feature the
usage of its meter in the window its limit counts in (:func:`usage_window`), all windows read from
the usage store in one batch. Rules:

* The customer is named by ``customer_id`` or ``customer_lookup_key`` (its external id); given
  both, they must name the same customer.
* ``subscription_ids`` keeps only those granting subscriptions; ``feature_ids`` and
  ``feature_lookup_keys`` keep only those features (together: either).
* ``current_usage`` is 0 for a feature that is not metered or not enabled; ``total_limit`` is the
  aggregated limit (``None`` and ``is_unlimited`` when a source is unlimited, 0 when nothing enables
  a metered feature); ``usage_percent`` is usage / limit x 100 rounded half away from zero to 2
  places (``None`` when unlimited or the limit is 0); ``next_usage_reset_at`` is the end of the
  window.
* ``period`` is the current billing period of the oldest granting subscription (``None`` when
  none grants). The list is not paged: ``pagination`` covers all the features.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from billingkit.domain.access import Action
from billingkit.domain.catalog import FeatureType, ResetUsage
from billingkit.domain.entitlement_aggregation import AggregatedFeature
from billingkit.domain.entitlement_checks import usage_window
from billingkit.domain.money import ZERO
from billingkit.domain.periods import Period
from billingkit.domain.resources import iso
from billingkit.domain.subscriptions import Subscription
from billingkit.domain.usage import UsageQuery
from billingkit.domain.validation import InputModel
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import list_where_in
from billingkit.services.subscription_entitlements import (
    find_customer_by_reference,
    granting_subscriptions,
    load_entitlement_sources,
)

__all__ = ["CustomerUsageRequest", "CustomerUsageSummary", "FeatureUsage", "get_customer_usage_summary"]

_PERCENT = Decimal("0.01")


class CustomerUsageRequest(InputModel):
    """The query of getCustomerUsageSummary: the customer (``customer_id`` or
    ``customer_lookup_key``) and optional filters."""

    customer_id: str | None = None
    customer_lookup_key: str | None = None
    feature_ids: list[str] | None = None
    feature_lookup_keys: list[str] | None = None
    subscription_ids: list[str] | None = None


@dataclass(frozen=True, slots=True)
class FeatureUsage:
    """One feature of the summary (the reference's FeatureUsageSummary)."""

    granted: AggregatedFeature
    current_usage: Decimal
    window: Period | None

    @property
    def total_limit(self) -> int | None:
        entitlement = self.granted.entitlement
        if self.granted.feature.type is not FeatureType.METERED:
            return None
        if not entitlement.is_enabled:
            return 0
        return entitlement.usage_limit

    @property
    def is_unlimited(self) -> bool:
        return (
            self.granted.feature.type is FeatureType.METERED
            and self.granted.entitlement.is_enabled
            and self.granted.entitlement.usage_limit is None
        )

    @property
    def usage_percent(self) -> Decimal | None:
        limit = self.total_limit
        if limit is None or limit == 0:
            return None
        return (self.current_usage * 100 / Decimal(limit)).quantize(_PERCENT, rounding=ROUND_HALF_UP)

    def to_dict(self) -> dict[str, Any]:
        entitlement = self.granted.entitlement
        percent = self.usage_percent
        return {
            "feature": self.granted.feature.to_dict(),
            "current_usage": str(self.current_usage),
            "total_limit": self.total_limit,
            "is_unlimited": self.is_unlimited,
            "is_enabled": entitlement.is_enabled,
            "is_soft_limit": entitlement.is_soft_limit,
            "usage_percent": None if percent is None else str(percent),
            "next_usage_reset_at": iso(self.window.end) if self.window is not None else None,
            "sources": [source.to_dict() for source in self.granted.sources],
        }


@dataclass(frozen=True, slots=True)
class CustomerUsageSummary:
    """The reference's CustomerUsageSummaryResponse."""

    customer_id: str
    features: tuple[FeatureUsage, ...]
    period: Subscription | None

    def to_dict(self) -> dict[str, Any]:
        sub = self.period
        return {
            "customer_id": self.customer_id,
            "features": [feature.to_dict() for feature in self.features],
            "period": (
                {
                    "start_time": iso(sub.current_period_start),
                    "end_time": iso(sub.current_period_end),
                    "period": sub.billing_period.value.lower(),
                }
                if sub is not None
                else None
            ),
            "pagination": {"limit": len(self.features), "offset": 0, "total": len(self.features)},
        }


def _customer(uow: UnitOfWork, request: CustomerUsageRequest) -> str:
    if not request.customer_id and not request.customer_lookup_key:
        raise ValidationError("give customer_id or customer_lookup_key", field="customer_id")
    if request.customer_id:
        customer = find_customer_by_reference(uow, request.customer_id)
        if request.customer_lookup_key and customer.external_id != request.customer_lookup_key:
            raise ValidationError(
                f"customer_lookup_key {request.customer_lookup_key!r} is not customer "
                f"{request.customer_id}'s external id",
                field="customer_lookup_key",
            )
        return customer.id
    assert request.customer_lookup_key is not None
    return find_customer_by_reference(uow, request.customer_lookup_key).id


def _feature_ids(uow: UnitOfWork, request: CustomerUsageRequest) -> list[str] | None:
    if not request.feature_ids and not request.feature_lookup_keys:
        return None
    wanted = list(request.feature_ids or ())
    if request.feature_lookup_keys:
        wanted += [f.id for f in list_where_in(uow.features, "lookup_key", request.feature_lookup_keys)]
    return wanted


def get_customer_usage_summary(
    uow: UnitOfWork, ctx: Context, *, request: CustomerUsageRequest
) -> CustomerUsageSummary:
    """Each feature the customer is granted now with its usage in its current window against its
    aggregated limit (see the module rules). Writes nothing.

    Raises ``ValidationError`` (no customer named, or two that disagree) and ``NotFound`` (an
    unknown customer).
    """
    ctx.require("customer", Action.READ)
    ctx.require("subscription", Action.READ)
    now = ctx.now
    customer_id = _customer(uow, request)
    customer = uow.customers.get(customer_id)
    granting, _ = granting_subscriptions(uow, customer_id, now)
    if request.subscription_ids:
        wanted = set(request.subscription_ids)
        granting = [sub for sub in granting if sub.id in wanted]
    loaded = load_entitlement_sources(uow, granting, now=now)
    aggregated = loaded.aggregated([sub.id for sub in granting], _feature_ids(uow, request))
    subscriptions = {sub.id: sub for sub in granting}
    meters = {
        m.id: m
        for m in uow.meters.find_many(
            a.feature.meter_id for a in aggregated if a.feature.meter_id and a.entitlement.is_enabled
        )
    }
    customers = frozenset((customer.external_id,))
    queries: list[UsageQuery] = []
    windows: list[Period | None] = []
    for granted in aggregated:
        meter = meters.get(granted.feature.meter_id or "")
        if (
            granted.feature.type is not FeatureType.METERED
            or not granted.entitlement.is_enabled
            or meter is None
        ):
            windows.append(None)
            continue
        window = usage_window(
            subscriptions[granted.subscription_ids[0]],
            granted.entitlement.usage_reset_period,
            cumulative_meter=meter.reset_usage is ResetUsage.NEVER,
            now=now,
        )
        windows.append(window)
        queries.append(UsageQuery(meter.to_spec(), window.start, window.end, customers))
    results = iter(uow.usage.aggregate(queries) if queries else [])
    features = tuple(
        FeatureUsage(granted, next(results).value if window is not None else ZERO, window)
        for granted, window in zip(aggregated, windows, strict=True)
    )
    return CustomerUsageSummary(customer_id, features, granting[0] if granting else None)
