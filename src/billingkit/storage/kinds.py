"""What the stores need to know about each resource kind, for the adapters.

The kinds themselves are declared once, in :mod:`billingkit.domain.kinds` (services read them
too); the repositories a unit of work hands out are declared once, in
:class:`billingkit.ports.Repositories` (the adapters' units of work make them on first access,
in ``__getattr__``). This module re-exports the kinds under the names the adapters have always
used, and holds the argument checks both stores share (counters, due-work claims).
"""

from __future__ import annotations

from billingkit.domain.kinds import KINDS, Kind, Level, Unique
from billingkit.errors import ValidationError

__all__ = ["KINDS", "Kind", "Level", "Unique", "check_count", "due_field"]


def check_count(count: int) -> None:
    """Counters advance by at least one (``CounterStore.next``)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationError(f"a counter advances by a positive whole number, not {count!r}", field="count")


def due_field(name: str, limit: int) -> str:
    """The due field of the kind ``UnitOfWork.claim_due`` was asked for, after checking that the
    kind carries due work and that the limit is a positive whole number."""
    kind = KINDS.get(name)
    if kind is None or kind.due_at is None:
        carrying = sorted(k.name for k in KINDS.values() if k.due_at is not None)
        raise ValidationError(
            f"{name!r} carries no due work; kinds that do: {', '.join(carrying)}", field="kind"
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"a claim takes a positive whole number of items, not {limit!r}", field="limit")
    return kind.due_at
