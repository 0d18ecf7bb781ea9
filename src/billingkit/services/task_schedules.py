"""The reference's two named schedules, run on request for the caller's environment
(``POST /tasks/scheduled/schedule-draft-finalization`` and ``.../schedule-update-billing-period``):
the same handlers the worker runs on its schedule, limited to one environment.

- Draft finalization: renewal drafts whose finalization delay has passed are finalized
  (:func:`billingkit.services.invoice_lifecycle.finalize_due_invoices`).
- Billing period update: pauses that start or end, end-of-period changes, then billing periods
  (:func:`billingkit.services.billing_runs.bill_due_subscriptions`), in the worker's order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from billingkit.domain.access import Action
from billingkit.domain.notifications import NotificationEvent
from billingkit.ports import Storage
from billingkit.services.billing_runs import RunReport
from billingkit.services.context import Context, DueRun
from billingkit.services.due_work import HANDLERS, DueWorkHandler, run_due_work

__all__ = [
    "BILLING_PERIOD_KINDS",
    "DRAFT_FINALIZATION_KINDS",
    "NamedSchedule",
    "run_billing_period_update",
    "run_draft_finalization",
]

#: Where committed batches' notifications go (``Billing``'s in-process subscribers).
Dispatch = Callable[[list[NotificationEvent]], None]


class NamedSchedule(Protocol):
    """One of the named schedules below."""

    def __call__(self, storage: Storage, ctx: Context, *, dispatch: Dispatch | None = None) -> RunReport: ...


DRAFT_FINALIZATION_KINDS = ("invoices",)
BILLING_PERIOD_KINDS = ("subscription_pauses", "subscription_schedules", "subscriptions")


def _run(storage: Storage, ctx: Context, kinds: tuple[str, ...], dispatch: Dispatch | None) -> RunReport:
    handlers: Mapping[str, DueWorkHandler] = {kind: HANDLERS[kind] for kind in kinds}
    run = DueRun(now=ctx.now, ids=ctx.ids, settings=ctx.settings, providers=ctx.providers)
    return run_due_work(
        storage,
        run,
        batch_size=ctx.settings.run_batch_size,
        handlers=handlers,
        scope=(ctx.tenant_id, ctx.env),
        dispatch=dispatch,
    )


def run_draft_finalization(storage: Storage, ctx: Context, *, dispatch: Dispatch | None = None) -> RunReport:
    """Finalize this environment's renewal drafts whose finalization delay has passed, as the
    worker's run would; the report counts one notification per finalized invoice."""
    ctx.require("invoice", Action.WRITE)
    return _run(storage, ctx, DRAFT_FINALIZATION_KINDS, dispatch)


def run_billing_period_update(
    storage: Storage, ctx: Context, *, dispatch: Dispatch | None = None
) -> RunReport:
    """Carry out this environment's due period work (pauses, end-of-period changes, renewals and
    their invoices) as the worker's run would."""
    ctx.require("subscription", Action.WRITE)
    return _run(storage, ctx, BILLING_PERIOD_KINDS, dispatch)
