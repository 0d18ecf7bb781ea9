"""Subscription hierarchies: what type a subscription takes from its ``inheritance`` request, where
a new child starts, how children follow their parent, and which lines of a ``grouped_invoicing``
child a parent's invoice carries.

Types (``subscription_type``):

* ``standalone``: billed on its own (the default);
* ``delegated_invoicing``: billed on its own, its invoices issued to ``invoicing_customer_id``;
* ``parent``: has (or had) children; billed on its own, with its grouped children's lines;
* ``inherited``: a skeleton child (no line items) of a parent; its customer's usage is billed on
  the parent's invoices, and it is never invoiced itself;
* ``grouped_invoicing``: a child with its own line items, billed only on its parent's invoices.

Children are one level deep: a parent is never a child, so there are no cycles. A child has no
due work of its own (``next_run_at`` stays ``None``): its parent's billing run moves it.

Which charges of a grouped child a parent's invoice carries (:class:`MemberState`): the child's
usage is billed through ``arrear_from`` and its ADVANCE charges through ``advance_from``; each
invoice of the parent bills what is owed beyond them, as if the lines were the parent's own.
Example (monthly, parent period [1 Jan, 1 Feb), child created 16 Jan with a 31.00 ADVANCE fee
and a usage line): the parent's invoice at 1 Feb carries the child's usage of [16 Jan, 1 Feb),
its fee for [16 Jan, 1 Feb) (16 of 31 days: 16.00, billed in arrears as the child had no opening
invoice) and its fee for [1 Feb, 1 Mar) (31.00).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from billingkit.domain.cancellation import ended_fields
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.periods import InvoiceCadence, Period
from billingkit.domain.subscriptions import (
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.errors import ValidationError

__all__ = [
    "BILLED_WITH_PARENT",
    "CHILD_TYPES",
    "PARENTABLE_TYPES",
    "MemberState",
    "child_standing",
    "follow_parent",
    "implied_type",
    "is_child",
]

#: Types that have a parent and no due work of their own.
CHILD_TYPES = frozenset({SubscriptionType.INHERITED, SubscriptionType.GROUPED_INVOICING})
#: Types a child may be attached to (attaching one makes the subscription a ``parent``).
PARENTABLE_TYPES = frozenset(
    {SubscriptionType.STANDALONE, SubscriptionType.DELEGATED_INVOICING, SubscriptionType.PARENT}
)
#: Statuses of a child whose lines a parent's invoice bills and that follows its parent.
BILLED_WITH_PARENT = frozenset({SubscriptionStatus.ACTIVE, SubscriptionStatus.TRIALING})


def is_child(sub: Subscription) -> bool:
    """Whether ``sub`` is an ``inherited`` or ``grouped_invoicing`` child."""
    return sub.subscription_type in CHILD_TYPES


def implied_type(*, has_parent: bool, has_children: bool, has_invoicing_customer: bool) -> SubscriptionType:
    """The type a new subscription takes from its ``inheritance`` request.

    | parent_subscription_id | children asked for | invoicing customer | type |
    |---|---|---|---|
    | no | no | no | standalone |
    | no | no | yes | delegated_invoicing |
    | no | yes | either | parent |
    | yes | no | no | grouped_invoicing |
    | yes | yes | - | refused (children are one level deep) |
    | yes | - | yes | refused (a child is billed on its parent's invoices) |

    A subscription created with a ``parent_subscription_id`` has a plan and its own lines, so it
    is a ``grouped_invoicing`` child; ``inherited`` skeletons are made only by their parent
    (``external_customer_ids_to_inherit_subscription``). Raises ``ValidationError`` naming the
    ``inheritance`` field at fault.
    """
    if has_parent:
        if has_children:
            raise ValidationError(
                "a child subscription cannot have children of its own (hierarchies are one level deep)",
                field="inheritance.parent_subscription_id",
            )
        if has_invoicing_customer:
            raise ValidationError(
                "a grouped_invoicing child is invoiced with its parent; invoicing_customer_external_id "
                "does not go with parent_subscription_id",
                field="inheritance.invoicing_customer_external_id",
            )
        return SubscriptionType.GROUPED_INVOICING
    if has_children:
        return SubscriptionType.PARENT
    if has_invoicing_customer:
        return SubscriptionType.DELEGATED_INVOICING
    return SubscriptionType.STANDALONE


def child_standing(parent: Subscription, *, start: datetime) -> dict[str, Any]:
    """The fields a new child starting at ``start`` takes from ``parent``: its schedule (anchor,
    cycle, time zone), status and trial window, and a first current period from ``start`` to the
    parent's current period end (the parent's whole current period when ``start`` lies outside
    it). No due work of its own, nothing billed yet (``billing_sequence`` 0).

    Example: parent [1 Jan, 1 Feb), child from 16 Jan -> current period [16 Jan, 1 Feb).
    """
    inside = parent.current_period_start < start < parent.current_period_end
    return {
        "subscription_status": parent.subscription_status,
        "billing_anchor": parent.billing_anchor,
        "billing_cycle": parent.billing_cycle,
        "timezone": parent.timezone,
        "trial_start": parent.trial_start,
        "trial_end": parent.trial_end,
        "current_period_start": start if inside else parent.current_period_start,
        "current_period_end": parent.current_period_end,
        "next_run_at": None,
        "renewal_notice_for": None,
        "billing_sequence": 0,
    }


def follow_parent(child: Subscription, parent: Subscription, *, billed: bool) -> dict[str, Any]:
    """The fields ``child`` takes once ``parent`` (as saved after its billing steps) moved on: the
    parent's current period, anchor and status (a parent that ended ends its children at the same
    instant, their open line items with them). ``billed``: the child's lines were on the parent's
    invoices (a grouped child), so its first ADVANCE charges are no longer owed
    (``billing_sequence`` grows)."""
    fields: dict[str, Any] = {
        "subscription_status": parent.subscription_status,
        "billing_anchor": parent.billing_anchor,
        "current_period_start": parent.current_period_start,
        "current_period_end": parent.current_period_end,
        "next_run_at": None,
    }
    if parent.subscription_status is SubscriptionStatus.CANCELLED:
        ended = parent.cancelled_at or parent.current_period_end
        # Its end date is the parent's end (unless earlier), and its open line items end there.
        fields.update(cancelled_at=ended, **ended_fields(child, min(child.end_date or ended, ended)))
    if billed:
        fields["billing_sequence"] = child.billing_sequence + 1
    return fields


def _from(line: SubscriptionLineItem, instant: datetime, **update: Any) -> SubscriptionLineItem:
    """``line`` charged from ``instant`` at the earliest (its own later start kept)."""
    if line.start_date is None or line.start_date < instant:
        update["start_date"] = instant
    return line.model_copy(update=update) if update else line


@dataclass(frozen=True, slots=True)
class MemberState:
    """How far a grouped child is billed: its usage (ARREAR charges) through ``arrear_from``, its
    ADVANCE charges through ``advance_from``."""

    arrear_from: datetime
    advance_from: datetime

    @classmethod
    def of(cls, child: Subscription) -> MemberState:
        """A grouped child's state as stored: usage billed up to its current period start; ADVANCE
        charges up to its current period end, or, before any parent invoice carried it
        (``billing_sequence`` 0: it had no opening invoice), up to its current period start."""
        start, end = child.current_period_start, child.current_period_end
        return cls(start, end if child.billing_sequence else start)

    def lines(
        self,
        child: Subscription,
        *,
        reference_point: str,
        period: Period,
        next_period: Period | None,
    ) -> tuple[SubscriptionLineItem, ...]:
        """The child's lines as the parent's invoice for ``period`` (``reference_point`` as in
        :mod:`billingkit.domain.invoicing`) bills them: each clipped to start where this state
        says it is still owed, plus, on a period-end invoice, each FIXED ADVANCE line again as an
        ARREAR charge for the ADVANCE time of ``period`` not billed yet (the child's first stub).

        Example: state (16 Jan, 16 Jan), period [1 Jan, 1 Feb), ``period_end``: the usage line
        from 16 Jan, the fee for [1 Feb, ...) as usual, and the fee again, ARREAR, from 16 Jan.
        """
        # A cancellation's invoice bills ARREAR charges only, up to the cancellation instant.
        arrear = reference_point in ("period_end", "preview", "cancel")
        # Where the ADVANCE window of this invoice begins: the next period, or the period itself.
        advance_start = period.end if arrear else period.start
        out: list[SubscriptionLineItem] = []
        catch_up: list[SubscriptionLineItem] = []
        for line in child.line_items:
            if line.invoice_cadence is InvoiceCadence.ARREAR:
                out.append(_from(line, self.arrear_from) if self.arrear_from > period.start else line)
                continue
            out.append(_from(line, self.advance_from) if self.advance_from > advance_start else line)
            if arrear and self.advance_from < period.end and line.price_type is PriceType.FIXED:
                catch_up.append(_from(line, self.advance_from, invoice_cadence=InvoiceCadence.ARREAR))
        return (*out, *catch_up)

    def after(self, *, reference_point: str, period: Period, next_period: Period | None) -> MemberState:
        """The state once the parent's invoice for ``period`` billed the child: a period-end
        invoice bills usage through the period end and ADVANCE charges through the next period;
        an opening-style one (``period_start``, the end of a trial) bills ADVANCE charges through
        the period end and leaves earlier usage (the trial's) unbilled."""
        if reference_point in ("period_end", "preview"):
            upto = next_period.end if next_period is not None else period.end
            return MemberState(period.end, max(self.advance_from, upto))
        return MemberState(max(self.arrear_from, period.start), max(self.advance_from, period.end))
