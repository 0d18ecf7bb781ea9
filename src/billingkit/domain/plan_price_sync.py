"""Plan price sync: bringing a subscription's line items up to its plan's current prices.

Every change to a plan's prices (a price added, versioned, ended or archived) gives the changed
price ``1 + the plan's highest sequence``; a subscription remembers the sequence its line items
were built from (``synced_price_sequence``). :func:`sync_line_items` reconciles one subscription
with the plan prices whose sequence is above it:

* an **ended** price (``end_date`` set, archived or not) ends the subscription's lines of that price
  at the price's ``end_date`` (never before the current period starts: invoiced periods are
  closed);
* a **new** price in the subscription's currency, billing period and period count opens a line
  from when it took effect (its ``start_date``; without one, when it was added: ``created_at``),
  or from the current period's start when that is later, until the price's ``end_date``: a
  versioned price's successor continues where its predecessor's line ends, and nothing already
  invoiced is reopened; a price whose window lies before the current period opens nothing;
* a line whose price was **overridden** for the subscription (a subscription-owned price made from
  a plan price, directly or through the subscription's own override) is kept as it is, and no
  version of the overridden price (same lineage: ``parent_price_id`` or, for the first version,
  its own id) is opened beside it;
* with **phases**, a new price's line makes room for them as a plan line does
  (:class:`~billingkit.domain.phase_windows.PhaseLines`): it is cut around each phase window and
  each phase gets its own copy, except a phase that overrides the price's lineage (it keeps its
  override); an ended price ends the phases' copies too;
* lines of add-ons and other owners are never touched; ``inherited`` subscriptions (skeletons
  billed on their parent) get no lines.

Example: plan prices A (seq 1) and B (seq 2), a subscription synced at 2 with lines for A and an
override of B. B is versioned on 10 May (B ends, seq 3; B' starts, seq 4) and C is added (seq 5):
the sync keeps the override of B, opens nothing for B' (B's lineage is overridden), opens C from
the current period start or C's start, whichever is later, and the subscription is synced at 5.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from billingkit.domain.catalog import Price
from billingkit.domain.phase_windows import PhaseLines
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem, SubscriptionType

__all__ = ["LineChanges", "PhaseWindow", "lineage", "matches_subscription", "sync_line_items"]


def lineage(price: Price) -> str:
    """The id every version of a price shares: the first version's (``parent_price_id`` of a
    successor, or the price's own id)."""
    return price.parent_price_id or price.id


def matches_subscription(price: Price, sub: Subscription) -> bool:
    """Whether ``sub`` bills ``price`` (its currency, billing period and period count), as at
    creation."""
    return (price.currency, price.billing_period, price.billing_period_count) == (
        sub.currency,
        sub.billing_period,
        sub.billing_period_count,
    )


@dataclass(frozen=True, slots=True)
class LineChanges:
    """A subscription's line items after a sync (``lines``: every line, in order, new ones last),
    the new lines (``added``) and how many lines were ended (``ended``)."""

    lines: tuple[SubscriptionLineItem, ...]
    added: tuple[SubscriptionLineItem, ...]
    ended: int

    @property
    def changed(self) -> bool:
        return bool(self.added or self.ended)


#: A phase of the subscription: its id, start and end (``None``: open-ended).
PhaseWindow = tuple[str, datetime, datetime | None]


def _around_phases(
    line: SubscriptionLineItem,
    family: str,
    phases: Sequence[PhaseWindow],
    overridden: Mapping[str | None, Collection[str]],
    new_id: Callable[[], str],
    sub_start: datetime,
) -> list[SubscriptionLineItem]:
    """A new plan line cut around the phases, with each phase's copy (none for a phase that
    overrides ``family``)."""
    if not phases:
        return [line]
    tiles = PhaseLines([line], {}, new_id, sub_start=sub_start)
    dropped: set[str] = set()
    for phase_id, start, end in sorted(phases, key=lambda phase: (phase[1], phase[0])):
        made = tiles.claim(phase_id, (start, end))
        if family in overridden.get(phase_id, ()):
            dropped.update(copy.id for copy in made)
    return [piece for piece in tiles.lines if piece.id not in dropped]


def sync_line_items(
    sub: Subscription,
    changed: Sequence[Price],
    *,
    overridden: Mapping[str | None, Collection[str]],
    open_line: Callable[[Price, datetime], SubscriptionLineItem],
    new_id: Callable[[], str],
    phases: Sequence[PhaseWindow] = (),
) -> LineChanges:
    """``sub``'s line items reconciled with the ``changed`` plan prices (those whose sequence is
    above ``sub.synced_price_sequence``; see the module doc). ``overridden``: the lineages of the
    plan prices ``sub`` overrides, by phase id (``None``: its plan lines outside phases).
    ``open_line(price, start)`` makes the new line of ``price`` for ``sub`` starting at ``start``
    (ending at the price's ``end_date``); ``new_id`` makes the ids of its pieces and phase copies.
    ``phases``: the subscription's live phases. Pure."""
    if sub.subscription_type is SubscriptionType.INHERITED:
        return LineChanges(sub.line_items, (), 0)
    floor = sub.current_period_start
    lines = list(sub.line_items)
    added: list[SubscriptionLineItem] = []
    ended = 0
    for price in sorted(changed, key=lambda p: (p.sequence, p.id)):
        own = [i for i, line in enumerate(lines) if line.price_id == price.id]
        if own:
            if price.end_date is None:
                continue
            for i in own:
                line = lines[i]
                end = max(price.end_date, floor, line.start_date or floor)
                if line.end_date is None or line.end_date > end:
                    lines[i] = line.model_copy(update={"end_date": end})
                    ended += 1
            continue
        family = lineage(price)
        if family in overridden.get(None, ()) or not matches_subscription(price, sub):
            continue
        start = max(price.start_date or price.created_at, floor)
        if price.end_date is not None and price.end_date <= start:
            continue  # its whole window lies before the current period
        pieces = _around_phases(open_line(price, start), family, phases, overridden, new_id, sub.start_date)
        lines += pieces
        added += pieces
    return LineChanges(tuple(lines), tuple(added), ended)
