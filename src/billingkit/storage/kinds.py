"""What the stores need to know about each resource kind, for the adapters.

The kinds themselves are declared once, in :mod:`billingkit.domain.kinds` (services read them
too); the repositories a unit of work hands out are declared once, in
:class:`billingkit.ports.Repositories` (the adapters' units of work make them on first access,
in ``__getattr__``). This module re-exports the kinds under the names the adapters have always
used, and holds the counters' argument check both stores share.
"""

from __future__ import annotations

from billingkit.domain.kinds import KINDS, Kind, Level, Unique
from billingkit.errors import ValidationError

__all__ = ["KINDS", "Kind", "Level", "Unique", "check_count"]


def check_count(count: int) -> None:
    """Counters advance by at least one (``CounterStore.next``)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationError(f"a counter advances by a positive whole number, not {count!r}", field="count")
