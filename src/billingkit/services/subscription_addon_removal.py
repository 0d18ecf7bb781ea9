"""Removing an add-on from a subscription (``DELETE /subscriptions/addon``).

The association becomes ``cancelled`` at once (``cancelled_at`` now, ``cancellation_reason``) with
``end_date`` the effect date (default: the current period's end; an association that has not
started by then ends at its start), and so do its line items (their ``end_date``): the billing
run bills them until then, and the add-on's allowances count for the periods before it. Its credit
grant copies end there and their pending applications for later periods are cancelled. With
``proration_behavior`` ``create_prorations`` (default: the subscription's) a recurring add-on
removed inside the current period of an active subscription gets its unused ADVANCE time back as a
PRE_PAID wallet credit, settled like every mid-period change
(:mod:`billingkit.services.line_settlements`), at most once per association and period. Worked
example in ``docs/billing-rules.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Annotated, ClassVar

from pydantic import Field

from billingkit.domain.access import Action
from billingkit.domain.addon_associations import AddonAssociation, AddonCadence, AddonStatus
from billingkit.domain.catalog import CreditGrant, CreditGrantScope
from billingkit.domain.credit_grant_applications import ApplicationStatus, CreditGrantApplication
from billingkit.domain.money import ZERO
from billingkit.domain.periods import Period
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Status
from billingkit.domain.subscription_addons import removal_end
from billingkit.domain.subscriptions import (
    ProrationBehavior,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
)
from billingkit.domain.validation import InputModel, NonEmptyStr, UtcDatetime
from billingkit.domain.wallets import WalletTransaction
from billingkit.errors import InvalidOperation, NotFound, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.credit_grants import credit_grants_of
from billingkit.services.line_settlements import addon_removal_key, settle_lines
from billingkit.services.records import build, get_live

__all__ = ["AddonCredit", "RemoveAddonRequest", "RemovedAddon", "end_addon_grants", "remove_addon"]

ENTITY = "subscription"
_MESSAGE = "addon removed from subscription successfully"


class RemoveAddonRequest(InputModel):
    """``DELETE /subscriptions/addon``: end association ``addon_association_id`` at
    ``effective_date`` (default: the current period's end); ``proration_behavior`` defaults to the
    subscription's."""

    not_supported: ClassVar[frozenset[str]] = frozenset({"change_at"})

    addon_association_id: NonEmptyStr
    effective_date: UtcDatetime | None = None
    proration_behavior: ProrationBehavior | None = None
    reason: Annotated[str, Field(max_length=255)] | None = None


@dataclass(frozen=True, slots=True)
class AddonCredit:
    """What a removal credited: ``amount`` in the subscription's currency (0: nothing), per line
    (subscription line item id -> amount), and the wallet credit row (``None`` when nothing)."""

    amount: Decimal
    lines: dict[str, Decimal]
    transaction: WalletTransaction | None


@dataclass(frozen=True, slots=True)
class RemovedAddon:
    """What :func:`remove_addon` did: the ``association`` (cancelled, with its ``end_date``), the
    ``subscription`` as saved and the ``credit`` given for unused time."""

    association: AddonAssociation
    subscription: Subscription
    credit: AddonCredit

    @property
    def message(self) -> str:
        return _MESSAGE


def end_addon_grants(
    uow: UnitOfWork, ctx: Context, sub: Subscription, association: AddonAssociation, end: datetime
) -> None:
    """End the association's grant copies at ``end`` and cancel their pending applications for
    periods starting then or later (also used when a plan change drops the add-on)."""
    copies = [
        g
        for g in credit_grants_of(uow, CreditGrantScope.SUBSCRIPTION, sub.id)
        if g.metadata.get("addon_association_id") == association.id
    ]
    for grant in copies:
        if grant.end_date is not None and grant.end_date <= end:
            continue
        if grant.start_date is not None and grant.start_date >= end:
            uow.credit_grants.update(grant.model_copy(update={**ctx.touch(), "status": Status.ARCHIVED}))
        else:
            uow.credit_grants.update(
                build(CreditGrant, {**grant.model_dump(), **ctx.touch(), "end_date": end})
            )
    if not copies:
        return
    ids = [g.id for g in copies]
    pending = _pending_applications(uow, sub.id, ids)
    changes = [
        (
            cga,
            cga.model_copy(
                update={
                    **ctx.touch(),
                    "application_status": ApplicationStatus.CANCELLED,
                    "failure_reason": "add-on removed",
                    "run_at": None,
                }
            ),
        )
        for cga in pending
        if cga.period_start >= end
    ]
    if changes:
        uow.credit_grant_applications.update_many(changes)


def _pending_applications(
    uow: UnitOfWork, subscription_id: str, grant_ids: list[str]
) -> list[CreditGrantApplication]:
    filters = (
        Filter("subscription_id", Op.EQ, subscription_id),
        Filter("credit_grant_id", Op.IN, grant_ids),
        Filter("application_status", Op.IN, [ApplicationStatus.PENDING.value]),
    )
    found: list[CreditGrantApplication] = []
    while True:
        page = uow.credit_grant_applications.list(
            ListQuery(
                filters=filters, sort=(Sort("id", descending=False),), limit=MAX_LIMIT, offset=len(found)
            )
        )
        found += page.items
        if not page.has_more:
            return found


def _credit_unused(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    association: AddonAssociation,
    lines: list[SubscriptionLineItem],
    end: datetime,
) -> AddonCredit:
    """The unused time of ``association``'s ADVANCE fees (``lines`` as they were) from ``end``
    to the current period's end, credited to the customer's PRE_PAID wallet once per association
    and period (nothing when ``end`` is outside the current period)."""
    period = Period(sub.current_period_start, sub.current_period_end)
    settled = settle_lines(
        uow,
        ctx,
        sub,
        key=addon_removal_key(association.id, period),
        effective=end,
        ended=lines,
        field="effective_date",
    )
    if settled.transaction is None:
        return AddonCredit(ZERO, {}, None)
    return AddonCredit(settled.transaction.credit_amount, settled.credits, settled.transaction)


def remove_addon(uow: UnitOfWork, ctx: Context, *, data: RemoveAddonRequest) -> RemovedAddon:
    """End an add-on association (see the module doc): its lines end at the effect date, its
    grants stop, and with ``create_prorations`` the unused ADVANCE time is credited.

    ``NotFound`` for an unknown association; ``InvalidOperation`` when it was already removed;
    ``ValidationError`` on ``effective_date`` before the current period (already billed).
    """
    ctx.require(ENTITY, Action.WRITE)
    association = uow.addon_associations.find(data.addon_association_id)
    if association is None or association.status is not Status.PUBLISHED:
        raise NotFound(f"add-on association {data.addon_association_id} not found")
    if association.addon_status is AddonStatus.CANCELLED:
        raise InvalidOperation(f"add-on association {association.id} was already removed")
    sub = get_live(uow.subscriptions, "subscription", association.entity_id)
    draft = sub.subscription_status is SubscriptionStatus.DRAFT
    effective = data.effective_date or sub.current_period_end
    if not draft and effective < sub.current_period_start:
        raise ValidationError(
            "effective_date is before the current billing period, which is already billed",
            field="effective_date",
        )
    end = removal_end(effective, association.start_date)
    own = [line for line in sub.line_items if line.addon_association_id == association.id]
    credit = AddonCredit(ZERO, {}, None)
    behaviour = data.proration_behavior or sub.proration_behavior
    if (
        behaviour is ProrationBehavior.CREATE_PRORATIONS
        and association.cadence is AddonCadence.RECURRING
        and sub.subscription_status is SubscriptionStatus.ACTIVE
    ):
        credit = _credit_unused(uow, ctx, sub, association, own, end)
    lines = tuple(
        line.model_copy(update={"end_date": max(end, line.start_date or end)})
        if line.addon_association_id == association.id and (line.end_date is None or line.end_date > end)
        else line
        for line in sub.line_items
    )
    removed = uow.addon_associations.update(
        association.model_copy(
            update={
                **ctx.touch(),
                "addon_status": AddonStatus.CANCELLED,
                "end_date": end,
                "cancelled_at": ctx.now,
                "cancellation_reason": data.reason,
            }
        ),
        expected_version=association.version,
    )
    saved = uow.subscriptions.update(
        sub.model_copy(update={**ctx.touch(), "line_items": lines}), expected_version=sub.version
    )
    end_addon_grants(uow, ctx, sub, association, end)
    notifications.notify(uow, ctx, "subscription.updated", saved, uow.customers.find(saved.customer_id))
    return RemovedAddon(removed, saved, credit)
