"""How the subscription that replaces another in a plan change v1 is made and opened
(:mod:`billingkit.services.plan_change_replace`).

* Carried from the replaced subscription: commitment amount and duration, overage factor,
  true-up, payment terms, collection method, payment behaviour, payment method, lookup key, time
  zone, proration behaviour, metadata (less the cancellation keys); its tax associations and its
  whole-subscription coupon associations still in force are copied (a coupon keeps its window and
  the invoices it has discounted, and is no new redemption).
* Opened either the usual way (the ``SUBSCRIPTION_CREATE`` invoice) or, when the replaced
  subscription's unused ADVANCE time is netted, by ONE settlement
  (:func:`billingkit.services.change_settlements.settle_change`) whose charges are the new
  subscription's first-period ADVANCE fees and whose credits are that unused time: a net charge is
  its opening invoice (``SUBSCRIPTION_UPDATE``), a net credit goes to the customer's wallet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from billingkit.domain.cancellation import METADATA_KEYS
from billingkit.domain.change_settlement import ChangeLine, settle
from billingkit.domain.coupon_associations import CouponAssociation
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.line_item_rules import is_one_time
from billingkit.domain.money import ZERO
from billingkit.domain.periods import BillingCycle, BillingPeriod
from billingkit.domain.subscriptions import PaymentBehavior, Subscription, SubscriptionStatus
from billingkit.ports import UnitOfWork
from billingkit.services.change_settlements import ChangeQuote, SettledChange, quote_change, settle_change
from billingkit.services.context import Context
from billingkit.services.invoicing import Snapshot
from billingkit.services.records import list_where_in
from billingkit.services.subscription_setup import open_subscription
from billingkit.services.subscriptions import SubscriptionCreate

__all__ = ["ReplacementOpening", "carry_associations", "opening_invoice", "replacement_request"]


def replacement_request(
    sub: Subscription,
    *,
    plan_id: str,
    billing_period: BillingPeriod,
    billing_period_count: int,
    billing_cycle: BillingCycle,
    metadata: Mapping[str, str],
    start: datetime,
    preview: bool,
) -> SubscriptionCreate:
    """The subscription replacing ``sub``: its terms carried (see the module doc), plan
    ``plan_id`` on the given schedule from ``start``, no trial, ``metadata`` merged over ``sub``'s.
    A preview never charges a card: its payment behaviour is ``default_active``."""
    carried = {key: value for key, value in sub.metadata.items() if key not in METADATA_KEYS}
    fields: dict[str, Any] = {
        "customer_id": sub.customer_id,
        "plan_id": plan_id,
        "currency": sub.currency,
        "billing_period": billing_period,
        "billing_period_count": billing_period_count,
        "billing_cycle": billing_cycle,
        "start_date": start,
        "trial_period_days": 0,
        "collection_method": sub.collection_method,
        "payment_behavior": PaymentBehavior.DEFAULT_ACTIVE if preview else sub.payment_behavior,
        "payment_terms": sub.payment_terms,
        "proration_behavior": sub.proration_behavior,
        "commitment_amount": sub.commitment_amount,
        "commitment_duration": sub.commitment_duration,
        "overage_factor": sub.overage_factor,
        "enable_true_up": sub.enable_true_up,
        "gateway_payment_method_id": sub.gateway_payment_method_id,
        "lookup_key": sub.lookup_key,
        "timezone": sub.timezone,
        "metadata": {**carried, **metadata},
    }
    return SubscriptionCreate.model_validate({k: v for k, v in fields.items() if v is not None})


def carry_associations(uow: UnitOfWork, ctx: Context, old: Subscription, new: Subscription) -> None:
    """``old``'s whole-subscription coupons and its tax associations, still in force at ``new``'s
    start, copied onto ``new``. A coupon keeps its window and the invoices it has discounted
    (a ``once`` coupon already used stays used) and is no new redemption."""
    start = new.start_date
    coupons = [
        item
        for item in list_where_in(uow.coupon_associations, "subscription_id", [old.id])
        if item.subscription_line_item_id is None and (item.end_date is None or item.end_date > start)
    ]
    uow.coupon_associations.add_many(
        [
            CouponAssociation(
                id=ctx.ids.new("coupon_assoc"),
                **ctx.stamp(),
                coupon_id=item.coupon_id,
                subscription_id=new.id,
                start_date=max(item.start_date, start),
                end_date=item.end_date,
                applications=item.applications,
                metadata={**item.metadata, "carried_from": item.id},
            )
            for item in coupons
        ]
    )
    taxes = [
        item
        for item in list_where_in(uow.tax_associations, "entity_id", [old.id])
        if item.end_date is None or item.end_date > start
    ]
    uow.tax_associations.add_many(
        [
            item.model_copy(
                update={
                    "id": ctx.ids.new("taxassoc"),
                    **ctx.stamp(),
                    "entity_id": new.id,
                    "start_date": max(item.start_date, start),
                }
            )
            for item in taxes
        ]
    )


class ReplacementOpening:
    """Opens the new subscription (``create_subscription``'s ``open_with``): carries ``old``'s
    associations, then either nets ``credits`` (the old unused time) against the new first-period
    ADVANCE fees in one settlement under ``key``, or issues the usual opening invoice.
    ``quote`` and ``settled`` tell what it did."""

    def __init__(self, old: Subscription, credits: Sequence[ChangeLine], *, prorate: bool, key: str) -> None:
        self.old, self.credits, self.prorate, self.key = old, tuple(credits), prorate, key
        self.quote: ChangeQuote | None = None
        self.settled: SettledChange | None = None

    @property
    def charge_total(self) -> Decimal:
        """The new subscription's first-period ADVANCE fees (0 before it was opened)."""
        return ZERO if self.quote is None else self.quote.settlement.charge_total

    def __call__(self, uow: UnitOfWork, ctx: Context, sub: Subscription, snapshot: Snapshot) -> Subscription:
        carry_associations(uow, ctx, self.old, sub)
        if sub.subscription_status is not SubscriptionStatus.ACTIVE:
            return sub
        # One-time fees of the target plan are charged in full on this opening, as the usual one
        # would: no later invoice bills a one-time fee dated in the first period.
        opening = quote_change(
            uow,
            ctx,
            sub,
            ended=(),
            started=sub.line_items,
            effective=sub.current_period_start,
            in_full={line.id for line in sub.line_items if is_one_time(line)},
        )
        if not self.prorate:
            self.quote = opening
            # Reloaded: the carried coupons and taxes are the new subscription's now.
            return open_subscription(uow, ctx, sub, BillingReason.SUBSCRIPTION_CREATE)
        settlement = settle(
            opening.charges,
            self.credits,
            currency=sub.currency,
            tax_rates=[applied.rate.to_core() for applied in opening.tax_rates],
            credit_sources=opening.credits_source.sources(sub.billed_customer_id, sub.currency),
            as_of=ctx.now,
        )
        self.quote = ChangeQuote(
            sub, opening.effective, opening.period, settlement, opening.credits_source, opening.tax_rates
        )
        self.settled = settle_change(uow, ctx, self.quote, key=self.key)
        return self.settled.subscription


def opening_invoice(uow: UnitOfWork, opening: ReplacementOpening, new: Subscription) -> Invoice | None:
    """The new subscription's opening invoice as it stands after ``settle_opening``."""
    if opening.settled is not None:
        issued = opening.settled.invoice
        return None if issued is None else uow.invoices.find(issued.id)
    return uow.invoices.find_one(
        subscription_id=new.id,
        billing_reason=BillingReason.SUBSCRIPTION_CREATE,
        period_start=new.current_period_start,
        period_end=new.current_period_end,
    )
