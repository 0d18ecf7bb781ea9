"""How a subscription is shown: the v2 read (:class:`SubscriptionV2`) and the ``subscription``
object of subscription webhook payloads (:func:`subscription_payload`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from billingkit.domain.customers import Customer
from billingkit.domain.subscriptions import Subscription

__all__ = ["V2_EXPANSIONS", "SubscriptionV2", "subscription_payload"]

_ADDRESS = tuple(f"address_{part}" for part in ("line1", "line2", "city", "state", "postal_code", "country"))
V2_EXPANSIONS = frozenset({"coupon_associations", "credit_grants", "subscription_line_items", "phases"})


@dataclass(frozen=True, slots=True)
class SubscriptionV2:
    """The v2 read: the subscription, which optional parts were asked for (``expand``), and
    whether the plan has price changes its line items do not have yet."""

    subscription: Subscription
    expand: frozenset[str]
    plan_prices_out_of_sync: bool

    def to_dict(self) -> dict[str, Any]:
        data = self.subscription.to_dict(line_items="subscription_line_items" in self.expand)
        data["plan_prices_out_of_sync"] = self.plan_prices_out_of_sync
        # Billing-only relations this version does not have yet are empty lists when asked for.
        for name in ("coupon_associations", "credit_grants", "phases"):
            if name in self.expand:
                data[name] = []
        return data


def subscription_payload(sub: Subscription, customer: Customer | None) -> dict[str, Any]:
    """The ``subscription`` object of subscription webhook payloads (the spec's field list)."""
    data = sub.to_dict(line_items=False)
    keep = [
        "id",
        "lookup_key",
        "plan_id",
        "customer_id",
        "parent_subscription_id",
        "subscription_status",
        "subscription_type",
        "pause_status",
        "billing_cadence",
        "billing_period",
        "billing_period_count",
        "currency",
        "start_date",
        "end_date",
        "current_period_start",
        "current_period_end",
        "cancel_at",
        "cancel_at_period_end",
        "cancelled_at",
        "trial_start",
        "trial_end",
        "metadata",
    ]
    payload = {name: data[name] for name in keep}
    if customer is not None:
        whole = customer.model_dump(mode="json")
        payload["customer"] = {
            name: whole.get(name)
            for name in ("id", "external_id", "name", "email", "timezone", "metadata", *_ADDRESS)
        }
    else:
        payload["customer"] = None
    return payload
