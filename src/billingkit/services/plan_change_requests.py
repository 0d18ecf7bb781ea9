"""A plan change in place as asked (the reference's ``SubscriptionChangeV2Request``) and what
it must satisfy before anything is written (reference notes §3.4 preconditions), for
:mod:`billingkit.services.plan_change_in_place`.

Refused with 400, naming the reason: a target plan that is unknown, archived or the current one,
or that has no prices for the subscription's currency and billing period (``ValidationError`` on
``target_plan_id``); a subscription that is not ``active`` or ``trialing``, has a scheduled pause,
is not ``standalone`` (a parent, a child, delegated invoicing), has a pending cancellation
(``cancel_at``, ``cancel_at_period_end``, a pending cancellation schedule) or another pending plan
change, or phases that have not ended (``InvalidOperation``; :func:`check_plan_changeable`, shared
with the v1 change); ``create_prorations`` over line items of another
billing period (``ValidationError`` on ``proration_behavior``); an ``entity_policies`` override
naming an add-on association the subscription does not have in force.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import ClassVar

from billingkit.domain.addon_associations import AddonAssociation, AddonAssociationEntityType, AddonStatus
from billingkit.domain.cancellation import check_single_period
from billingkit.domain.catalog import Plan, Price
from billingkit.domain.catalog.prices import PriceEntityType
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Status, iso
from billingkit.domain.subscription_addons import removal_end
from billingkit.domain.subscription_changes import ChangeAt, ChangeKind
from billingkit.domain.subscription_schedules import ScheduleStatus, ScheduleType, SubscriptionSchedule
from billingkit.domain.subscriptions import (
    PauseStatus,
    ProrationBehavior,
    Subscription,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.domain.validation import Identifier, InputModel, Key, Metadata
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.owned_prices import prices_of
from billingkit.services.plan_change_in_place_results import AddonChange, EntityChangeBehaviour
from billingkit.services.records import list_where_in
from billingkit.services.subscription_phases import phases_of

__all__ = [
    "AddonPolicy",
    "ChangeAt",
    "EntityPolicies",
    "PlanChangeRequest",
    "addon_changes",
    "check_effective",
    "check_subscription",
    "target_plan",
    "target_prices",
]

_CHANGEABLE = frozenset({SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING})


class AddonPolicy(InputModel):
    """What happens to the subscription's add-ons: ``default_behaviour`` (``carry`` unless given)
    for each, or ``overrides[association_id]`` for that association."""

    default_behaviour: EntityChangeBehaviour = EntityChangeBehaviour.CARRY
    overrides: dict[Identifier, EntityChangeBehaviour] = {}


class EntityPolicies(InputModel):
    addons: AddonPolicy | None = None


class PlanChangeRequest(InputModel):
    """The reference's ``SubscriptionChangeV2Request``: move to ``target_plan_id`` now
    (``change_at: immediate``, default) or at the current period's end (``end_of_period``).
    ``proration_behavior`` ``create_prorations`` settles the unused and remaining time of the
    changed fees now; ``none`` leaves it to the period's invoices. The SDK's newer fields
    (billing period changes, conflict policies) are not supported."""

    not_supported: ClassVar[frozenset[str]] = frozenset(
        {"billing_period_behaviour", "billing_period_config", "on_conflict_policies"}
    )

    target_plan_id: Identifier
    proration_behavior: ProrationBehavior
    change_at: ChangeAt = ChangeAt.IMMEDIATE
    idempotency_key: Key | None = None
    entity_policies: EntityPolicies | None = None
    metadata: Metadata | None = None

    @property
    def prorate(self) -> bool:
        return self.proration_behavior is ProrationBehavior.CREATE_PRORATIONS

    def addon_behaviour(self, association_id: str) -> EntityChangeBehaviour:
        policy = self.entity_policies.addons if self.entity_policies is not None else None
        if policy is None:
            return EntityChangeBehaviour.CARRY
        return policy.overrides.get(association_id, policy.default_behaviour)

    def fingerprint(self, subscription_id: str) -> str:
        """The digest an idempotency key is held to: the subscription and the whole request
        except the key."""
        body = {
            "kind": ChangeKind.PLAN_CHANGE_V2.value,
            "subscription_id": subscription_id,
            "request": self.model_dump(mode="json", exclude={"idempotency_key"}),
        }
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


# -- checks ----------------------------------------------------------------------------------------


def target_plan(uow: UnitOfWork, sub: Subscription, plan_id: str) -> Plan:
    plan = uow.plans.find(plan_id)
    if plan is None or plan.status is not Status.PUBLISHED:
        raise ValidationError(f"plan {plan_id} not found", field="target_plan_id")
    if plan.id == sub.plan_id:
        raise ValidationError(f"subscription {sub.id} is already on plan {plan.id}", field="target_plan_id")
    return plan


def _pending_schedules(uow: UnitOfWork, sub: Subscription) -> list[SubscriptionSchedule]:
    return list_where_in(
        uow.subscription_schedules,
        "subscription_id",
        [sub.id],
        Filter("schedule_status", Op.IN, [ScheduleStatus.PENDING.value]),
    )


def check_plan_changeable(
    uow: UnitOfWork, ctx: Context, sub: Subscription, *, schedule_id: str | None
) -> None:
    """What both plan change generations (v1 replace, v2 in place) require of ``sub``
    (``InvalidOperation`` naming the first that fails): ``active`` or ``trialing``; no pause
    running or scheduled; ``standalone`` (no parent, no children by inheritance); no pending
    cancellation; no other pending schedule (``schedule_id``: the end-of-period change being
    carried out, pending itself); no phase that has not ended."""
    if sub.subscription_status not in _CHANGEABLE:
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_status.value}: only an active or trialing "
            "subscription can change plan"
        )
    if sub.pause_status is not PauseStatus.NONE:
        raise InvalidOperation(
            f"subscription {sub.id} has a {sub.pause_status.value} pause: resume it before changing plan"
        )
    if sub.subscription_type is not SubscriptionType.STANDALONE or sub.parent_subscription_id is not None:
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_type.value}: only a standalone subscription "
            "can change plan"
        )
    if sub.cancel_at is not None or sub.cancel_at_period_end:
        raise InvalidOperation(
            f"subscription {sub.id} has a pending cancellation: withdraw it before changing plan"
        )
    for schedule in _pending_schedules(uow, sub):
        if schedule.id == schedule_id:
            continue
        what = "cancellation" if schedule.schedule_type is ScheduleType.CANCELLATION else "plan change"
        raise InvalidOperation(
            f"subscription {sub.id} has a pending {what} ({schedule.id}): cancel that schedule first"
        )
    if any(phase.end_date is None or phase.end_date > ctx.now for phase in phases_of(uow, sub.id)):
        raise InvalidOperation(
            f"subscription {sub.id} has phases: a plan change would drop them; end them first"
        )


def check_subscription(
    uow: UnitOfWork, ctx: Context, sub: Subscription, data: PlanChangeRequest, *, schedule_id: str | None
) -> None:
    """The preconditions of notes §3.4 (``InvalidOperation`` naming the one that fails):
    :func:`check_plan_changeable`, and no proration over line items of another billing period."""
    check_plan_changeable(uow, ctx, sub, schedule_id=schedule_id)
    if data.prorate:
        check_single_period(sub)


def check_effective(sub: Subscription, effective: datetime, *, scheduled: bool) -> None:
    start, end = sub.current_period_start, sub.current_period_end
    inside = start < effective <= end if scheduled else start <= effective < end
    if not inside:
        raise InvalidOperation(
            f"subscription {sub.id}'s current period [{iso(start)}, {iso(end)}) does not hold the change "
            f"at {iso(effective)}: its period must be billed (run the due work) first"
        )


def target_prices(uow: UnitOfWork, sub: Subscription, plan: Plan, effective: datetime) -> list[Price]:
    """The target plan's prices for ``sub``'s currency and period, in force at ``effective``."""
    want = (sub.currency, sub.billing_period, sub.billing_period_count)
    prices = [
        price
        for price in prices_of(uow, PriceEntityType.PLAN, plan.id)
        if (price.currency, price.billing_period, price.billing_period_count) == want
        and (price.end_date is None or price.end_date > effective)
    ]
    if not prices:
        raise ValidationError(
            f"plan {plan.id} has no prices in {sub.currency} for {sub.billing_period_count} x "
            f"{sub.billing_period.value}, the subscription's currency and billing period",
            field="target_plan_id",
        )
    return prices


def addon_changes(
    uow: UnitOfWork, ctx: Context, sub: Subscription, data: PlanChangeRequest, effective: datetime
) -> tuple[list[tuple[AddonAssociation, AddonAssociation]], list[AddonChange]]:
    """The add-on associations in force at ``effective`` or later, each carried or dropped (a
    dropped one as it will be saved); an override naming another association is refused."""
    associations = [
        association
        for association in list_where_in(
            uow.addon_associations,
            "entity_id",
            [sub.id],
            Filter("entity_type", Op.EQ, AddonAssociationEntityType.SUBSCRIPTION.value),
        )
        if association.addon_status is AddonStatus.ACTIVE
        and (association.end_date is None or association.end_date > effective)
    ]
    policy = data.entity_policies.addons if data.entity_policies is not None else None
    known = {association.id for association in associations}
    for association_id in policy.overrides if policy is not None else {}:
        if association_id not in known:
            raise ValidationError(
                f"add-on association {association_id} is not in force on subscription {sub.id}",
                field=f"entity_policies.addons.overrides.{association_id}",
            )
    dropped: list[tuple[AddonAssociation, AddonAssociation]] = []
    changes: list[AddonChange] = []
    for association in sorted(associations, key=lambda a: (a.created_at, a.id)):
        behaviour = data.addon_behaviour(association.id)
        if behaviour is EntityChangeBehaviour.DROP:
            ended = association.model_copy(
                update={
                    **ctx.touch(),
                    "addon_status": AddonStatus.CANCELLED,
                    "end_date": removal_end(effective, association.start_date),
                    "cancelled_at": ctx.now,
                    "cancellation_reason": "plan change",
                }
            )
            dropped.append((association, ended))
            association = ended
        changes.append(AddonChange(behaviour, association))
    return dropped, changes
