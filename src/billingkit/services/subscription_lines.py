"""The line items of stored subscriptions: the one writer of their owner index, and the lookup
of a line item by id alone.

Line items live inside their subscription. Every operation that gives a subscription new line items
(create, add-ons, extra and overridden items, phases, plan price sync, plan changes) passes them to
:func:`record_line_items` in the same unit of work, so that
``PUT|DELETE /subscriptions/lineitems/{id}`` can find the subscription of any line item.
"""

from __future__ import annotations

from collections.abc import Iterable

from billingkit.domain.line_item_owners import LineItemOwner
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.errors import NotFound
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context

__all__ = ["find_line_item", "record_line_items"]


def record_line_items(uow: UnitOfWork, ctx: Context, lines: Iterable[SubscriptionLineItem]) -> None:
    """Index new ``lines`` under their subscription (one owner row each, added in ``uow``)."""
    stamp = ctx.stamp()
    owners = [
        LineItemOwner.model_validate({"id": line.id, "subscription_id": line.subscription_id, **stamp})
        for line in lines
    ]
    if owners:
        uow.line_item_owners.add_many(owners)


def find_line_item(uow: UnitOfWork, line_item_id: str) -> tuple[Subscription, SubscriptionLineItem]:
    """The live subscription holding line item ``line_item_id``, and the line item; ``NotFound``
    (404) when the scope has no such line item."""
    owner = uow.line_item_owners.find(line_item_id)
    sub = uow.subscriptions.find(owner.subscription_id) if owner is not None else None
    line = next((li for li in sub.line_items if li.id == line_item_id), None) if sub is not None else None
    if sub is None or line is None:
        raise NotFound(f"subscription line item {line_item_id} not found")
    return sub, line
