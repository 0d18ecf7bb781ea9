"""A parent's invoices carry its ``grouped_invoicing`` children's lines, and its children move with
it (rules in :mod:`billingkit.domain.subscription_inheritance`).

* :func:`group_charges`: a parent's charges with its grouped children's lines added (the children
  are in the snapshot: :func:`billingkit.services.invoicing.load_snapshot` loads them), step by
  step, so a run that bills several elapsed periods bills each child's charges once;
* :func:`followers`: the parent's children as saved once the parent's billing steps are done
  (its period, anchor and status), written with the parent in the billing run's unit of work;
* :func:`check_billed_alone`: children have no invoices of their own to preview, nor line
  changes invoiced or credited on their own (:mod:`billingkit.services.change_settlements`);
* :func:`end_children` and :func:`check_cancellable`: a parent cancelled at once ends its
  children with it; a grouped child is cancelled at once, with nothing invoiced or credited on
  its own (:mod:`billingkit.services.subscription_cancel`).
"""

from __future__ import annotations

from dataclasses import replace

from billingkit.domain.subscription_inheritance import (
    BILLED_WITH_PARENT,
    MemberState,
    follow_parent,
    is_child,
)
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionType
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.invoicing import Charge, Snapshot
from billingkit.services.records import list_where_in
from billingkit.services.subscription_termination import terminate

__all__ = [
    "check_billed_alone",
    "check_cancellable",
    "check_settled_alone",
    "end_children",
    "followers",
    "group_charges",
]


def group_charges(snapshot: Snapshot, sub: Subscription, charges: list[Charge]) -> list[Charge]:
    """``charges`` (``sub``'s invoices in billing order) with the lines of ``sub``'s grouped
    children that each one bills: as many as the parent's own (a parent with no grouped children,
    or any other subscription, gets ``charges`` itself back)."""
    if sub.subscription_type is not SubscriptionType.PARENT:
        return charges
    members = snapshot.families.members_of(sub.id)
    if not members:
        return charges
    states = {member.id: MemberState.of(member) for member in members}
    grouped: list[Charge] = []
    for charge in charges:
        lines: list[tuple[Charge, SubscriptionLineItem]] = []
        point, period, following = charge.reference_point, charge.period, charge.next_period
        for member in members:
            own = Charge(member, charge.reason, point, period, following)
            state = states[member.id]
            owed = state.lines(member, reference_point=point, period=period, next_period=following)
            lines += [(own, line) for line in owed]
            states[member.id] = state.after(reference_point=point, period=period, next_period=following)
        grouped.append(replace(charge, grouped=tuple(lines)))
    return grouped


def followers(
    ctx: Context, snapshot: Snapshot, parent: Subscription, saved: Subscription
) -> list[tuple[Subscription, Subscription]]:
    """(as stored, as it will be saved) for each child of ``parent`` that follows it to ``saved``
    (the parent after its billing steps); none unless the parent moved (a period or a trial
    ended, or it ended). Grouped children count the parent's invoices that carried them (their
    first ADVANCE charges are no longer owed)."""
    if parent.subscription_type is not SubscriptionType.PARENT or (
        parent.current_period_end == saved.current_period_end
        and parent.subscription_status is saved.subscription_status
    ):
        return []
    billed = {member.id for member in snapshot.families.members_of(parent.id)}
    return [
        (
            child,
            child.model_copy(
                update={**follow_parent(child, saved, billed=child.id in billed), **ctx.touch()}
            ),
        )
        for child in snapshot.families.followers_of(parent.id)
    ]


def check_billed_alone(sub: Subscription) -> None:
    """Refuse to preview an invoice of a child: it has none of its own (``InvalidOperation``)."""
    if is_child(sub):
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_type.value}: it is billed on the invoices of "
            f"its parent {sub.parent_subscription_id}; preview those"
        )


def check_settled_alone(sub: Subscription) -> None:
    """Refuse to invoice or credit a line change of a child on its own, now: its lines are
    billed on its parent's invoices (``InvalidOperation`` naming the ways that do work)."""
    if is_child(sub):
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_type.value}: its lines are billed on the invoices "
            f"of its parent {sub.parent_subscription_id}, so a line change is not invoiced or credited "
            "on its own; change it without create_prorations (a one-time charge: dated from the period "
            "end on)"
        )


def check_cancellable(sub: Subscription, *, immediate: bool, invoiced: bool, prorated: bool) -> None:
    """Refuse to cancel a grouped child other than at once with nothing invoiced or credited on
    its own: its charges are its parent's to bill, and it has no due work of its own to carry a
    scheduled end (``InvalidOperation`` naming the ways that work)."""
    if sub.subscription_type is SubscriptionType.GROUPED_INVOICING and (
        not immediate or invoiced or prorated
    ):
        raise InvalidOperation(
            f"subscription {sub.id} is grouped_invoicing: its charges are billed on the invoices of its "
            f"parent {sub.parent_subscription_id}, so it is cancelled at once with no invoice or credit "
            "of its own (cancel_immediately_invoice_policy skip, proration_behavior none), or taken out "
            "of the group first (modify type grouped_invoicing, action remove)"
        )


def end_children(uow: UnitOfWork, ctx: Context, parent: Subscription) -> list[Subscription]:
    """The children of ``parent`` (saved, just cancelled at once) cancelled with it, at its
    ``cancelled_at``, with what hangs from them ended; each with ``subscription.updated`` and
    ``subscription.cancelled``. None for other subscriptions."""
    if parent.subscription_type is not SubscriptionType.PARENT:
        return []
    found = list_where_in(uow.subscriptions, "parent_subscription_id", [parent.id])
    pairs = [
        (child, child.model_copy(update={**follow_parent(child, parent, billed=False), **ctx.touch()}))
        for child in found
        if child.subscription_status in BILLED_WITH_PARENT
    ]
    uow.subscriptions.update_many(pairs)
    ended = [child.model_copy(update={"version": before.version + 1}) for before, child in pairs]
    terminate(uow, ctx, ended)
    customers = {c.id: c for c in uow.customers.find_many({child.customer_id for child in ended})}
    for child in ended:
        for event in ("subscription.updated", "subscription.cancelled"):
            notifications.notify(uow, ctx, event, child, customers.get(child.customer_id))
    return ended
