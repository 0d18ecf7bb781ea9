"""The stored pauses of subscriptions, read and closed for the other parts of the lifecycle: the
pause windows that credit grant applications are judged by, and the pauses that end with a
cancelled subscription. Apart from :mod:`billingkit.services.subscription_pauses` (which bills
through the billing run) so that the billing run's own termination step can use it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from billingkit.domain.periods import Period
from billingkit.domain.queries import Filter, Op
from billingkit.domain.subscription_pauses import SubscriptionPause
from billingkit.domain.subscriptions import PauseStatus
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.records import list_where_in

__all__ = ["OPEN_PAUSE_STATUSES", "close_pause", "close_pauses", "pause_windows"]

#: A pause that is scheduled or running: the worker or a resume still has something to do.
OPEN_PAUSE_STATUSES = (PauseStatus.SCHEDULED, PauseStatus.ACTIVE)


def close_pause(ctx: Context, pause: SubscriptionPause, status: PauseStatus) -> SubscriptionPause:
    """``pause`` ended without a resume (``cancelled`` before it started, ``completed`` when the
    subscription left it some other way): nothing left to do."""
    return pause.model_copy(update={**ctx.touch(), "pause_status": status, "run_at": None})


def close_pauses(uow: UnitOfWork, ctx: Context, subscription_ids: Sequence[str]) -> None:
    """End the pauses of subscriptions that have just ended (cancelled): a scheduled one is
    ``cancelled``, a running one ``completed`` (no ``resumed_at``: it was not resumed); nothing
    is left for the worker. One read and one write for all of them."""
    if not subscription_ids:
        return
    open_ = list_where_in(
        uow.subscription_pauses,
        "subscription_id",
        subscription_ids,
        Filter("pause_status", Op.IN, [status.value for status in OPEN_PAUSE_STATUSES]),
    )
    uow.subscription_pauses.update_many(
        [
            (
                pause,
                close_pause(
                    ctx,
                    pause,
                    PauseStatus.COMPLETED
                    if pause.pause_status is PauseStatus.ACTIVE
                    else PauseStatus.CANCELLED,
                ),
            )
            for pause in open_
        ]
    )


def pause_windows(uow: UnitOfWork, subscription_ids: Iterable[str]) -> dict[str, list[Period]]:
    """Per subscription, the windows it was or is paused over (``[pause_start, resumed_at)``; a
    running pause is open: its end is ``datetime.max``), for the credit grant applications due
    while it was paused (:func:`~billingkit.domain.pause_rules.status_at`). One read for all."""
    found: dict[str, list[Period]] = defaultdict(list)
    statuses = [PauseStatus.ACTIVE.value, PauseStatus.COMPLETED.value]
    rows = list_where_in(
        uow.subscription_pauses,
        "subscription_id",
        subscription_ids,
        Filter("pause_status", Op.IN, statuses),
    )
    for pause in rows:
        end = pause.resumed_at or datetime.max.replace(tzinfo=pause.pause_start.tzinfo)
        if end > pause.pause_start:
            found[pause.subscription_id].append(Period(pause.pause_start, end))
    return found
