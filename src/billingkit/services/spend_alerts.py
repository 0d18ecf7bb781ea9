"""Spend alerts: a subscription's, one of its line items' or a feature group's spend in the
current billing period, against the setting's thresholds (reference ``subscription_spend``,
``subscription_line_item_spend``, ``subscription_group_spend``).

Spend is what the billing run would charge for the current period's usage so far: the invoice
preview of ``[current_period_start, current_period_end)`` computed with the billing run's own code
(:func:`billingkit.services.invoicing.compute_invoices`, without prepaid credits), summing the
``amount`` of its usage lines (after entitlement allowances, before discounts, taxes and credits;
exact ``Decimal``). A line item's spend is its own lines'; a group's is the lines whose price, or
whose meter's feature, belongs to the group. Only subscriptions that are ``active`` or
``trialing`` are measured: the alerts of others keep their state.

Changes of state record ``subscription.<spend|line_item_spend|group_spend>.threshold_reached``
(any new state but ``ok``) or ``..._recovered`` (back to ``ok``), with the subscription and the
spend alert fields (:func:`billingkit.domain.alert_payloads.spend_alert_fields`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from decimal import Decimal

from billingkit.domain.alert_payloads import spend_alert_fields
from billingkit.domain.alerts import AlertEntityType, AlertSetting, AlertType, level_threshold
from billingkit.domain.money import ZERO
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.wallets import AlertState
from billingkit.ports import UnitOfWork
from billingkit.services.alert_states import Observation, Transition
from billingkit.services.context import Context
from billingkit.services.invoicing import CurrentPeriods
from billingkit.services.notifications import notify
from billingkit.services.records import list_where_in

__all__ = ["SPEND_TYPES", "measure_spend", "notify_spend_change", "spend_observations"]

#: The setting entity types this module measures.
SPEND_TYPES = frozenset(
    {AlertEntityType.SUBSCRIPTION, AlertEntityType.SUBSCRIPTION_LINE_ITEM, AlertEntityType.GROUP}
)
_MEASURED = frozenset({SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING})
#: (alert type, recovered?) -> the event type of the change.
_EVENT_TYPES = {
    (AlertType.SUBSCRIPTION_SPEND, False): "subscription.spend.threshold_reached",
    (AlertType.SUBSCRIPTION_SPEND, True): "subscription.spend.threshold_recovered",
    (AlertType.SUBSCRIPTION_LINE_ITEM_SPEND, False): "subscription.line_item_spend.threshold_reached",
    (AlertType.SUBSCRIPTION_LINE_ITEM_SPEND, True): "subscription.line_item_spend.threshold_recovered",
    (AlertType.SUBSCRIPTION_GROUP_SPEND, False): "subscription.group_spend.threshold_reached",
    (AlertType.SUBSCRIPTION_GROUP_SPEND, True): "subscription.group_spend.threshold_recovered",
}


class Spend:
    """One subscription's current-period usage spend: in total, per line item, per group."""

    def __init__(self) -> None:
        self.total = ZERO
        self.lines: dict[str, Decimal] = defaultdict(lambda: ZERO)
        self.groups: dict[str, Decimal] = defaultdict(lambda: ZERO)


def subscription_of(setting: AlertSetting) -> str:
    """The subscription whose spend ``setting`` watches."""
    if setting.entity_type is AlertEntityType.SUBSCRIPTION:
        return setting.entity_id
    return setting.parent_entity_id or ""


def _groups_by_meter(uow: UnitOfWork, meter_ids: set[str]) -> dict[str, str]:
    """meter id -> the group of the feature it meters (features without a group left out)."""
    features = list_where_in(uow.features, "meter_id", meter_ids)
    return {f.meter_id: f.group_id for f in features if f.meter_id and f.group_id}


def measure_spend(
    uow: UnitOfWork, subs: Sequence[Subscription], previews: CurrentPeriods
) -> dict[str, Spend]:
    """The current-period spend of each of ``subs`` (see the module doc), by subscription id."""
    if not subs:
        return {}
    meter_groups = _groups_by_meter(uow, {m for sub in subs for li in sub.line_items if (m := li.meter_id)})
    spends: dict[str, Spend] = {}
    for sub_id, (snapshot, invoice) in previews.of(subs).items():
        spend = spends[sub_id] = Spend()
        for line in invoice.draft.lines:
            if line.price_type != "USAGE" or line.meter_id is None:
                continue
            spend.total += line.amount
            spend.lines[line.line_item_id] += line.amount
            price = snapshot.prices.get(line.price_id)
            group = (price.group_id if price is not None else None) or meter_groups.get(line.meter_id)
            if group:
                spend.groups[group] += line.amount
    return spends


def spend_observations(
    uow: UnitOfWork, settings: Sequence[AlertSetting], previews: CurrentPeriods
) -> tuple[list[Observation], dict[str, Subscription]]:
    """One observation per active spend setting of a measured subscription, and the measured
    subscriptions by id (their notifications carry them); ``previews`` computes (or has) their
    current periods' invoice previews."""
    wanted = [s for s in settings if s.active and s.entity_type in SPEND_TYPES]
    subs = [
        sub
        for sub in uow.subscriptions.find_many({subscription_of(s) for s in wanted})
        if sub.subscription_status in _MEASURED
    ]
    spends = measure_spend(uow, subs, previews)
    observations: list[Observation] = []
    for setting in wanted:
        spend = spends.get(subscription_of(setting))
        if spend is None:
            continue
        if setting.entity_type is AlertEntityType.SUBSCRIPTION:
            value = spend.total
        elif setting.entity_type is AlertEntityType.SUBSCRIPTION_LINE_ITEM:
            value = spend.lines.get(setting.entity_id, ZERO)
        else:
            value = spend.groups.get(setting.entity_id, ZERO)
        observations.append(
            Observation(
                alert_type=setting.alert_type,
                entity_type=setting.entity_type,
                entity_id=setting.entity_id,
                config=setting.config,
                value=value,
                customer_id=setting.customer_id,
                parent_entity_type=setting.parent_entity_type,
                parent_entity_id=setting.parent_entity_id,
            )
        )
    return observations, {sub.id: sub for sub in subs}


def notify_spend_change(
    uow: UnitOfWork, ctx: Context, transition: Transition, subscriptions: dict[str, Subscription]
) -> None:
    """Record ``threshold_reached`` or ``threshold_recovered`` for a spend alert's change."""
    seen = transition.observation
    recovered = transition.new is AlertState.OK
    sub_id = seen.entity_id if seen.entity_type is AlertEntityType.SUBSCRIPTION else seen.parent_entity_id
    sub = subscriptions[sub_id or ""]
    threshold = level_threshold(seen.config, transition.old if recovered else transition.new)
    fields = spend_alert_fields(
        seen.alert_type,
        transition.new,
        current_spend=seen.value,
        threshold=threshold,
        triggered_at=ctx.now,
        subscription_line_item_id=(
            seen.entity_id if seen.entity_type is AlertEntityType.SUBSCRIPTION_LINE_ITEM else None
        ),
        group_id=seen.entity_id if seen.entity_type is AlertEntityType.GROUP else None,
    )
    kind = _EVENT_TYPES[(seen.alert_type, recovered)]
    notify(uow, ctx, kind, sub, uow.customers.find(sub.customer_id), fields=fields)
