"""Reading subscription hierarchies for billing: the children of the parents among a set of
subscriptions, with one read for all of them (:func:`load_families`).

:func:`billingkit.services.invoicing.load_snapshot` calls it, so every computation of a parent's
invoice (the billing run, previews, the opening invoice) sees the same family:

* ``inherited`` children: their customers' events count as the parent's usage
  (:meth:`Families.usage_customers`);
* ``grouped_invoicing`` children: their lines are priced on the parent's invoices
  (:meth:`Families.members_of`; :mod:`billingkit.services.grouped_billing` adds them to a charge);
* both kinds follow their parent once it is billed (:meth:`Families.followers_of`).

A batch without parents reads nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from billingkit.domain.customers import Customer
from billingkit.domain.subscription_inheritance import BILLED_WITH_PARENT
from billingkit.domain.subscriptions import Subscription, SubscriptionType
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.records import list_where_in

__all__ = ["Families", "billed_customer_ids", "load_families", "usage_customers"]


@dataclass(frozen=True, slots=True)
class Families:
    """The live children of some parent subscriptions: parent id -> children, oldest first."""

    children: Mapping[str, tuple[Subscription, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.children)

    def members_of(self, parent_id: str) -> tuple[Subscription, ...]:
        """The parent's ``grouped_invoicing`` children whose lines its invoices bill (active or
        trialing: a paused or ended child is left out)."""
        return tuple(
            child
            for child in self.children.get(parent_id, ())
            if child.subscription_type is SubscriptionType.GROUPED_INVOICING
            and child.subscription_status in BILLED_WITH_PARENT
        )

    def members(self) -> list[Subscription]:
        """Every parent's grouped children of :meth:`members_of`."""
        return [child for parent_id in self.children for child in self.members_of(parent_id)]

    def followers_of(self, parent_id: str) -> tuple[Subscription, ...]:
        """The parent's children (both kinds) that move with it when it is billed."""
        return tuple(
            child
            for child in self.children.get(parent_id, ())
            if child.subscription_status in BILLED_WITH_PARENT
        )

    def _inherited(self, parent: Subscription) -> Iterator[Subscription]:
        # Whole periods: a child that is live at any time of the parent's current period counts
        # for all of it (one usage query per meter and window stays exact for every aggregation).
        for child in self.children.get(parent.id, ()):
            if child.subscription_type is SubscriptionType.INHERITED and (
                child.end_date is None or child.end_date > parent.current_period_start
            ):
                yield child

    def customer_ids(self) -> Iterator[str]:
        """The customers of the inherited children (read with the batch's customers)."""
        for children in self.children.values():
            for child in children:
                if child.subscription_type is SubscriptionType.INHERITED:
                    yield child.customer_id

    def usage_customers(
        self, parents: Iterable[Subscription], customers: Mapping[str, Customer]
    ) -> dict[str, frozenset[str]]:
        """Parent id -> the external ids of its inherited children's customers whose events count
        as its usage in its current period (parents without any are left out)."""
        found: dict[str, frozenset[str]] = {}
        for parent in parents:
            if parent.id not in self.children:
                continue
            ids = frozenset(
                customer.external_id
                for child in self._inherited(parent)
                if (customer := customers.get(child.customer_id)) is not None
            )
            if ids:
                found[parent.id] = ids
        return found


NO_FAMILIES = Families()


def load_families(uow: UnitOfWork, subscriptions: Sequence[Subscription]) -> Families:
    """The live children of the ``parent`` subscriptions among ``subscriptions``: one read for all
    of them (none without parents)."""
    parents = [sub.id for sub in subscriptions if sub.subscription_type is SubscriptionType.PARENT]
    if not parents:
        return NO_FAMILIES
    children: dict[str, list[Subscription]] = {}
    found = list_where_in(uow.subscriptions, "parent_subscription_id", parents)
    for child in sorted(found, key=lambda sub: (sub.created_at, sub.id)):
        if child.parent_subscription_id is not None:
            children.setdefault(child.parent_subscription_id, []).append(child)
    return Families({parent: tuple(kids) for parent, kids in children.items()})


def billed_customer_ids(subscriptions: Iterable[Subscription], families: Families) -> Iterator[str]:
    """Every customer a batch's invoices need: the subscribers, the invoicing customers of
    delegated invoicing, and the customers of the parents' inherited children."""
    for sub in subscriptions:
        yield sub.customer_id
        if sub.invoicing_customer_id is not None:
            yield sub.invoicing_customer_id
    if families:
        yield from families.customer_ids()


def usage_customers(
    sub: Subscription, customers: Mapping[str, Customer], inherited: Mapping[str, frozenset[str]]
) -> frozenset[str]:
    """The external ids whose events are ``sub``'s usage: its customer's, plus (a parent) its
    inherited children's customers' (``inherited``: :meth:`Families.usage_customers`). Raises
    ``ValidationError`` when its customer is missing."""
    customer = customers.get(sub.customer_id)
    if customer is None:
        raise ValidationError(f"customer {sub.customer_id} is missing", field="customer_id")
    extra = inherited.get(sub.id)
    return frozenset((customer.external_id,)) if extra is None else extra | {customer.external_id}
