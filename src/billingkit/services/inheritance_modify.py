"""Changing a hierarchy after creation: the modify types ``inheritance`` and ``grouped_invoicing``
of ``POST /subscriptions/{id}/modify/execute`` (:mod:`billingkit.services.subscription_modify`).

* ``inheritance`` on a parent-able subscription (``standalone``, ``delegated_invoicing`` or
  ``parent``; it becomes a ``parent``): ``add`` makes an ``inherited`` child for each of
  ``external_customer_ids_to_inherit_subscription`` (from now on, in the parent's current period);
  ``remove`` cancels the inherited children of ``external_customer_ids_to_remove`` now (their
  customers' usage still counts for the parent's current period: usage is attributed by whole
  periods).
* ``grouped_invoicing``: ``add`` makes ``child_subscription_ids`` (or, without them, the path
  subscription) grouped children of ``parent_subscription_id`` (required), as
  ``subscriptions_ids_for_grouped_invoicing`` does on create; ``remove`` makes
  ``child_subscription_ids`` of the path subscription (its parent), or the path subscription
  itself, standalone again: they keep their current period and bill themselves from its end on
  (a child never billed on its parent's invoices gets its first ADVANCE charges invoiced now).

Each returns the subscription changed, and what else changed (``changed_resources``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Self

from pydantic import model_validator

from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.periods import Period
from billingkit.domain.resources import Status
from billingkit.domain.subscription_inheritance import PARENTABLE_TYPES
from billingkit.domain.subscription_lifecycle import next_run_at
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus, SubscriptionType
from billingkit.domain.validation import InputModel, NonEmptyStr
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.invoicing import (
    Charge,
    build_invoice,
    compute_invoices,
    issue_invoice,
    load_snapshot,
)
from billingkit.services.records import get_live
from billingkit.services.subscription_inheritance import (
    IdList,
    check_inheriting,
    children_of,
    convert_to_grouped,
    find_customers,
    inherit,
    promote,
)

__all__ = [
    "Changes",
    "GroupedInvoicingAction",
    "InheritanceAction",
    "SubModifyGroupedInvoicingParams",
    "SubModifyInheritanceRequest",
    "modify_grouped_invoicing",
    "modify_inheritance",
]


class InheritanceAction(StrEnum):
    ADD = "add"
    REMOVE = "remove"


class GroupedInvoicingAction(StrEnum):
    ADD = "add"
    REMOVE = "remove"


class SubModifyInheritanceRequest(InputModel):
    """``add`` with ``external_customer_ids_to_inherit_subscription``, or ``remove`` with
    ``external_customer_ids_to_remove`` (each required by its action)."""

    action: InheritanceAction
    external_customer_ids_to_inherit_subscription: IdList | None = None
    external_customer_ids_to_remove: IdList | None = None

    @model_validator(mode="after")
    def _required_by_action(self) -> Self:
        wanted, other = "external_customer_ids_to_inherit_subscription", "external_customer_ids_to_remove"
        if self.action is InheritanceAction.REMOVE:
            wanted, other = other, wanted
        if not getattr(self, wanted):
            raise ValidationError(
                f"{wanted} is required to {self.action.value}", field=f"inheritance_params.{wanted}"
            )
        if getattr(self, other):
            raise ValidationError(
                f"{other} does not go with action {self.action.value}", field=f"inheritance_params.{other}"
            )
        return self


class SubModifyGroupedInvoicingParams(InputModel):
    """``add``: ``parent_subscription_id`` (required) and ``child_subscription_ids`` (default: the
    path subscription). ``remove``: ``child_subscription_ids`` of the path subscription, or the
    path subscription itself."""

    action: GroupedInvoicingAction
    child_subscription_ids: IdList | None = None
    parent_subscription_id: NonEmptyStr | None = None

    @model_validator(mode="after")
    def _required_by_action(self) -> Self:
        if self.action is GroupedInvoicingAction.ADD and self.parent_subscription_id is None:
            raise ValidationError(
                "parent_subscription_id is required to add children",
                field="grouped_invoicing_params.parent_subscription_id",
            )
        if self.action is GroupedInvoicingAction.REMOVE and self.parent_subscription_id is not None:
            raise ValidationError(
                "parent_subscription_id does not go with action remove",
                field="grouped_invoicing_params.parent_subscription_id",
            )
        return self


@dataclass(slots=True)
class Changes:
    """What a hierarchy change changed besides the subscription it returns, collected as it goes:
    (subscription, action) with action ``created`` or ``updated``, and the invoices it issued. The
    answer shows them as :class:`billingkit.services.modify_resources.ChangedResources`."""

    subscriptions: list[tuple[Subscription, str]] = field(default_factory=list)
    invoices: list[Invoice] = field(default_factory=list)


def modify_inheritance(
    uow: UnitOfWork, ctx: Context, sub: Subscription, params: SubModifyInheritanceRequest
) -> tuple[Subscription, Changes]:
    """Add or remove inherited children of ``sub`` (see the module doc)."""
    changes = Changes()
    if params.action is InheritanceAction.ADD:
        if sub.subscription_type not in PARENTABLE_TYPES:
            raise InvalidOperation(
                f"subscription {sub.id} is {sub.subscription_type.value}; a child cannot have children"
            )
        if sub.subscription_status not in (SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING):
            raise InvalidOperation(
                f"subscription {sub.id} is {sub.subscription_status.value}; only an active or trialing "
                "subscription can have children"
            )
        path = "inheritance_params.external_customer_ids_to_inherit_subscription"
        wanted = params.external_customer_ids_to_inherit_subscription or []
        customers = find_customers(uow, wanted, path)
        check_inheriting(uow, sub, customers, path)
        parent = promote(uow, ctx, sub)
        made = inherit(uow, ctx, parent, customers, start=ctx.now)
        changes.subscriptions += [(child, "created") for child in made]
        return parent, changes
    path = "inheritance_params.external_customer_ids_to_remove"
    leaving = params.external_customer_ids_to_remove or []
    customers = find_customers(uow, leaving, path)
    live = {
        child.customer_id: child
        for child in children_of(uow, sub.id)
        if child.subscription_type is SubscriptionType.INHERITED
        and child.subscription_status is not SubscriptionStatus.CANCELLED
    }
    for index, customer in enumerate(customers):
        child = live.get(customer.id)
        if child is None:
            raise ValidationError(
                f"customer {customer.external_id!r} does not inherit subscription {sub.id}",
                field=f"{path}[{index}]",
            )
        ended = child.model_copy(
            update={
                "subscription_status": SubscriptionStatus.CANCELLED,
                "cancelled_at": ctx.now,
                "end_date": ctx.now,
                "next_run_at": None,
                **ctx.touch(),
            }
        )
        saved = uow.subscriptions.update(ended, expected_version=child.version)
        notifications.notify(uow, ctx, "subscription.updated", saved, customer)
        notifications.notify(uow, ctx, "subscription.cancelled", saved, customer)
        changes.subscriptions.append((saved, "updated"))
    return sub, changes


def _leave(
    uow: UnitOfWork, ctx: Context, child: Subscription, parent: Subscription, renewal_notice: timedelta | None
) -> tuple[Subscription, Invoice | None]:
    """``child`` standalone again. Its charges are billed through its current period (usage to its
    start, ADVANCE to its end), so it bills itself from the period end on; an active child that no
    parent invoice carried yet owes its first ADVANCE charges: invoiced now
    (``SUBSCRIPTION_UPDATE``), prorated over the parent's period as the parent's invoice would
    have billed them."""
    invoice, sequence = None, child.billing_sequence
    if child.billing_sequence == 0 and child.subscription_status is SubscriptionStatus.ACTIVE:
        start = min(parent.current_period_start, child.current_period_start)
        period = Period(start, child.current_period_end)
        charge = Charge(child, BillingReason.SUBSCRIPTION_UPDATE, "period_start", period)
        snapshot = load_snapshot(uow, [child], at=ctx.now)
        (computed,) = compute_invoices(uow, [charge], snapshot, as_of=ctx.now)
        if computed.draft.lines:
            sequence += 1
            built = build_invoice(ctx, computed, snapshot, billing_sequence=sequence)
            invoice = issue_invoice(uow, ctx, built, computed=computed, snapshot=snapshot)
    fields = {
        "subscription_type": SubscriptionType.STANDALONE,
        "parent_subscription_id": None,
        "billing_sequence": sequence,
        "next_run_at": next_run_at(
            child.subscription_status,
            child.current_period_start,
            child.current_period_end,
            None,
            renewal_notice,
        ),
        **ctx.touch(),
    }
    saved = uow.subscriptions.update(child.model_copy(update=fields), expected_version=child.version)
    notifications.notify(uow, ctx, "subscription.updated", saved, uow.customers.find(saved.customer_id))
    return saved, invoice


def _live_subscription(uow: UnitOfWork, sub_id: str, field: str) -> Subscription:
    found = uow.subscriptions.find(sub_id)
    if found is None or found.status is not Status.PUBLISHED:
        raise ValidationError(f"subscription {sub_id} not found", field=field)
    return found


def modify_grouped_invoicing(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    params: SubModifyGroupedInvoicingParams,
    *,
    renewal_notice: timedelta | None = None,
) -> tuple[Subscription, Changes]:
    """Add subscriptions to a parent's group, or take them out of it (see the module doc). The
    subscription returned is the path subscription as it now stands."""
    changes = Changes()
    path = "grouped_invoicing_params"
    if params.action is GroupedInvoicingAction.ADD:
        parent_id = params.parent_subscription_id or ""
        field = f"{path}.parent_subscription_id"
        parent = sub if parent_id == sub.id else _live_subscription(uow, parent_id, field)
        ids = params.child_subscription_ids or [sub.id]
        if sub.id not in (parent.id, *ids):
            raise ValidationError(
                f"subscription {sub.id} is neither the parent nor one of the children",
                field=f"{path}.child_subscription_ids",
            )
        if parent.subscription_type not in PARENTABLE_TYPES:
            raise ValidationError(
                f"subscription {parent.id} is {parent.subscription_type.value}: a child cannot have children",
                field=field,
            )
        parent = promote(uow, ctx, parent)
        children, invoices = convert_to_grouped(uow, ctx, parent, ids, f"{path}.child_subscription_ids")
        changes.subscriptions += [(child, "updated") for child in children]
        changes.invoices += invoices
        if parent.id != sub.id:
            changes.subscriptions.append((parent, "updated"))
        current = parent if parent.id == sub.id else next(c for c in children if c.id == sub.id)
        return current, changes
    if params.child_subscription_ids:
        parent, field = sub, f"{path}.child_subscription_ids"
        ids = params.child_subscription_ids
    else:
        if (
            sub.subscription_type is not SubscriptionType.GROUPED_INVOICING
            or sub.parent_subscription_id is None
        ):
            raise InvalidOperation(f"subscription {sub.id} is not a grouped_invoicing child")
        parent = get_live(uow.subscriptions, "subscription", sub.parent_subscription_id)
        field, ids = f"{path}.child_subscription_ids", [sub.id]
    current = sub
    for index, child_id in enumerate(ids):
        child = sub if child_id == sub.id else _live_subscription(uow, child_id, f"{field}[{index}]")
        if child.subscription_type is not SubscriptionType.GROUPED_INVOICING or (
            child.parent_subscription_id != parent.id
        ):
            raise ValidationError(
                f"subscription {child_id} is not a grouped_invoicing child of {parent.id}",
                field=f"{field}[{index}]",
            )
        left, invoice = _leave(uow, ctx, child, parent, renewal_notice)
        changes.subscriptions.append((left, "updated"))
        if invoice is not None:
            changes.invoices.append(invoice)
        if left.id == sub.id:
            current = left
    return current, changes
