"""A phase's extra line items (``phases[i].line_items``, the reference's
``CreateSubscriptionLineItemRequest``): lines billed only inside their phase, besides the phase's
copies of the plan lines.

They are built like any extra line of the subscription
(:func:`billingkit.services.subscription_line_items.build_line`: ``price_id`` or an inline
``price``, quantity, commitments), and in addition:

* ``start_date``/``end_date`` default to the phase's window and must lie inside it (a date outside
  is a 400, not silently clipped: a phase line is asked for with its phase in mind);
* the line carries ``subscription_phase_id`` and is charged only inside ``[start_date, end_date)``.

Errors are ``ValidationError`` naming ``<field>[j].<name>`` (``phases[0].line_items[1].price_id``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.line_item_requests import LineItemCreate
from billingkit.services.subscription_line_items import PhaseWindow, build_line

__all__ = ["MAX_PHASE_LINE_ITEMS", "phase_line_items"]

#: Most extra line items one phase may give.
MAX_PHASE_LINE_ITEMS = 50


def _check_window(request: LineItemCreate, phase: PhaseWindow, prefix: str) -> None:
    start, end = phase.start, phase.end
    line_start = request.start_date or start
    line_end = request.end_date if request.end_date is not None else end
    if line_start < start or (end is not None and line_start >= end):
        raise ValidationError("start_date must lie inside the phase", field=prefix + "start_date")
    if line_end is not None and (line_end <= line_start or (end is not None and line_end > end)):
        raise ValidationError(
            "end_date must be after start_date and not after the phase's end", field=prefix + "end_date"
        )


def phase_line_items(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    requests: Sequence[LineItemCreate],
    *,
    start: datetime,
    end: datetime | None,
    phase_id: str,
    field: str,
) -> tuple[SubscriptionLineItem, ...]:
    """The line items of ``requests`` for phase ``phase_id`` of ``sub``, whose window is
    ``[start, end)`` (see the module doc). Inline prices are stored in ``uow``; nothing else is.
    Raises ``ValidationError`` naming ``field[j].<name>``."""
    phase = PhaseWindow(phase_id, start, end)
    lines = []
    for index, request in enumerate(requests):
        prefix = f"{field}[{index}]."
        _check_window(request, phase, prefix)
        lines.append(build_line(uow, ctx, sub, request, prefix=prefix, default_start=start, phase=phase))
    return tuple(lines)
