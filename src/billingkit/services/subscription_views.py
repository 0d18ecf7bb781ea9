"""How a subscription is shown: the v2 read (:class:`SubscriptionV2`). The ``subscription``
object of subscription webhook payloads (:func:`subscription_payload`) is built beside the
event-type catalogue, in :mod:`billingkit.domain.event_types`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from billingkit.domain.catalog import CreditGrant
from billingkit.domain.event_types import subscription_payload
from billingkit.domain.subscription_pauses import SubscriptionPause
from billingkit.domain.subscription_phases import SubscriptionPhase
from billingkit.domain.subscriptions import Subscription
from billingkit.services.coupon_association_reads import CouponAssociationView

__all__ = ["V2_EXPANSIONS", "SubscriptionV2", "subscription_payload"]

V2_EXPANSIONS = frozenset({"coupon_associations", "credit_grants", "subscription_line_items", "phases"})


@dataclass(frozen=True, slots=True)
class SubscriptionV2:
    """The v2 read: the subscription, which optional parts were asked for (``expand``), and
    whether the plan has price changes its line items do not have yet; ``coupon_associations``:
    its live associations, ``credit_grants``: its own live grants, ``phases``: its live phases in
    order of start (each read only when expanded); ``pauses``: all its pauses while it has a pause
    running or scheduled."""

    subscription: Subscription
    expand: frozenset[str]
    plan_prices_out_of_sync: bool
    coupon_associations: tuple[CouponAssociationView, ...] = ()
    credit_grants: tuple[CreditGrant, ...] = ()
    phases: tuple[SubscriptionPhase, ...] = ()
    pauses: tuple[SubscriptionPause, ...] | None = None  # None: no pause status, left out

    def to_dict(self) -> dict[str, Any]:
        data = self.subscription.to_dict(line_items="subscription_line_items" in self.expand)
        data["plan_prices_out_of_sync"] = self.plan_prices_out_of_sync
        if "coupon_associations" in self.expand:
            data["coupon_associations"] = [view.to_dict() for view in self.coupon_associations]
        if "credit_grants" in self.expand:
            data["credit_grants"] = [grant.to_dict() for grant in self.credit_grants]
        if "phases" in self.expand:
            data["phases"] = [phase.to_dict() for phase in self.phases]
        if self.pauses is not None:
            data["pauses"] = [pause.to_dict() for pause in self.pauses]
        return data
