"""The due-work runner: one mechanism for everything timed.

A stored kind that carries due work declares the field saying when (``due_at`` in
``storage.kinds``: a subscription's ``next_run_at``) and has one handler in :data:`HANDLERS`. A run
takes the kinds in that order and, for each, claims due items in batches (``uow.claim_due``:
earliest first, any scope, each item by one claimer: PostgreSQL locks the claimed rows and skips
rows locked by another runner, SQLite and the memory store serialise writers), hands each batch to
the kind's handler in the claiming unit of work and commits it; then the notifications the batch
recorded go to in-process subscribers. A batch that raises a :class:`BillingError` is rolled back
and retried one item at a time in the item's own scope, so one bad item only fails itself: it is
reported in ``RunReport.failures``, skipped for the rest of the run and stays due for the next one.

Pauses that start or end (:func:`billingkit.services.subscription_pauses.run_due_pauses`) are
the first handler; end-of-period changes (:func:`billingkit.services.schedule_runs.run_due_schedules`)
the second, so a change due at a period boundary is in place before that boundary is billed;
billing periods (:func:`billingkit.services.billing_runs.bill_due_subscriptions`) the third;
credit grant applications
(:func:`billingkit.services.credit_grant_applications.apply_due_applications`) the fourth, so a
period's closing invoice is computed before the next period's credits land; renewal drafts whose
finalization delay has passed (:func:`billingkit.services.invoice_lifecycle.finalize_due_invoices`)
the fifth: the first run at or after a draft's ``finalize_at`` finalizes it; wallets with credits
past their expiry (:func:`billingkit.services.credit_expiry.expire_due_credits`) the sixth; open
checkout sessions past their ``expires_at``
(:func:`billingkit.services.checkout_completion.expire_due_sessions`) the seventh. Then
invoices unpaid past their due date are announced once each (``invoice.payment.overdue``:
:func:`billingkit.services.invoice_overdue.notify_overdue_invoices`), and a run
ends with the cancellation of subscriptions whose invoices stay unpaid past their grace days
(:func:`billingkit.services.auto_cancellation.cancel_unpaid_subscriptions`; off unless
``Settings.auto_cancellation_grace_days`` is set): a step over every scope, not a kind. Alert
settings due for evaluation (:func:`billingkit.services.alert_runs.evaluate_due_alerts`) are the
last kind, and the wallet and feature balance alerts of every scope
(:func:`billingkit.services.alert_runs.evaluate_balance_alerts`) the last step. Scheduled exports
(:func:`billingkit.services.scheduled_tasks.make_due_scheduled_exports`) come after the alerts,
then export tasks (:func:`billingkit.services.tasks.write_due_exports`): one page of a file per
claim, an unfinished export claimed again until written, so an export made by its schedule is
written in the same run. New
timed work (webhook deliveries, ...) declares its ``due_at`` and adds its handler here:
no new port method, adapter code or loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from billingkit.domain.kinds import KINDS
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Record
from billingkit.errors import BillingError, ValidationError
from billingkit.logfields import log_fields
from billingkit.ports import Repository, Storage, UnitOfWork
from billingkit.services.alert_runs import evaluate_balance_alerts, evaluate_due_alerts
from billingkit.services.auto_cancellation import cancel_unpaid_subscriptions
from billingkit.services.billing_runs import BatchResult, RunReport, bill_due_subscriptions
from billingkit.services.checkout_completion import expire_due_sessions
from billingkit.services.context import DueRun
from billingkit.services.credit_expiry import expire_due_credits
from billingkit.services.credit_grant_applications import apply_due_applications
from billingkit.services.invoice_lifecycle import finalize_due_invoices
from billingkit.services.invoice_overdue import notify_overdue_invoices
from billingkit.services.schedule_runs import run_due_schedules
from billingkit.services.scheduled_tasks import make_due_scheduled_exports
from billingkit.services.subscription_pauses import run_due_pauses
from billingkit.services.tasks import write_due_exports

__all__ = ["HANDLERS", "DueWorkHandler", "run_due_work"]

log = logging.getLogger("billingkit.due_work")
run_log = logging.getLogger("billingkit.billing_run")

#: Carries out one claimed batch of a kind in the claiming unit of work (the runner commits).
#: Items that are no longer due when it reads them (a retry re-reads each item) are left alone.
DueWorkHandler = Callable[[UnitOfWork, Sequence[Record], DueRun], BatchResult]

#: Each kind that carries due work and its handler, in the order a run takes them. A test checks
#: that these are exactly the kinds whose ``storage.kinds`` entry declares ``due_at``.
HANDLERS: Mapping[str, DueWorkHandler] = MappingProxyType(
    {
        # First: a pause takes effect (after billing its subscription up to the pause start
        # itself) before the billing run could bill past its start; a subscription resumed here is
        # billed below in the same run when its stretched period has ended.
        "subscription_pauses": run_due_pauses,
        # Before billing: a plan change due at a period boundary is in place when the renewal
        # invoice of that boundary is computed.
        "subscription_schedules": run_due_schedules,
        "subscriptions": bill_due_subscriptions,
        # After billing: a period's closing invoice is computed before the next period's credits land.
        "credit_grant_applications": apply_due_applications,
        "invoices": finalize_due_invoices,
        # A period billed in this run no longer holds its customer's expiries.
        "wallets": expire_due_credits,
        # Open checkout sessions past their expires_at end unpaid (their drafts archived).
        "checkout_sessions": expire_due_sessions,
        # Last: spend is measured on the periods as this run left them (a new period after
        # billing, so a spend alert can recover).
        "alert_settings": evaluate_due_alerts,
        # Scheduled exports make their export tasks, which the next handler writes in this run.
        "scheduled_tasks": make_due_scheduled_exports,
        # Exports: one page per claim; an unfinished export stays due and is claimed again.
        "tasks": write_due_exports,
    }
)


def run_due_work(
    storage: Storage,
    run: DueRun,
    *,
    batch_size: int,
    keep_invoices: bool = True,
    dispatch: Callable[[list[NotificationEvent]], None] | None = None,
    finished: Callable[[RunReport | None, float], None] | None = None,
    handlers: Mapping[str, DueWorkHandler] | None = None,
    scope: tuple[str, str] | None = None,
) -> RunReport:
    """Carry out everything due at ``run.now``, kind by kind, ``batch_size`` items per unit of
    work. ``dispatch`` receives each committed batch's notifications; ``finished`` the report (or
    ``None`` when the run raised) and the seconds it took. Logs one ``billing_run`` line per run
    (logger ``billingkit.billing_run``). ``handlers`` replaces :data:`HANDLERS` (tests, and the
    named schedules run on request). ``scope`` (tenant, environment) limits the run to the items
    of one environment, read through its repositories instead of the all-scope claim, and leaves
    out the steps over every scope."""
    if batch_size < 1:
        raise ValidationError("batch_size must be at least 1", field="batch_size")
    started = time.perf_counter()
    try:
        runner = _Run(storage, run, batch_size, keep_invoices, dispatch, scope)
        report = runner.all(HANDLERS if handlers is None else handlers)
    except Exception as exc:
        seconds = time.perf_counter() - started
        log_fields(
            run_log,
            logging.ERROR,
            "billing_run",
            status="failed",
            duration_ms=seconds * 1000,
            error=type(exc).__name__,
            exc_info=exc,
        )
        if finished is not None:
            finished(None, seconds)
        raise
    seconds = time.perf_counter() - started
    log_fields(
        run_log,
        logging.WARNING if report.failures else logging.INFO,
        "billing_run",
        status="completed",
        subscriptions=report.subscription_count,
        invoices=report.invoice_count,
        notifications=report.notification_count,
        failures=len(report.failures),
        duration_ms=seconds * 1000,
    )
    if finished is not None:
        finished(report, seconds)
    return report


class _Run:
    """One run's state: the report so far and where committed batches go."""

    def __init__(
        self,
        storage: Storage,
        run: DueRun,
        batch_size: int,
        keep_invoices: bool,
        dispatch: Callable[[list[NotificationEvent]], None] | None,
        scope: tuple[str, str] | None = None,
    ) -> None:
        self.report = RunReport()
        self._scope = scope
        self._storage = storage
        self._run = run
        self._batch_size = batch_size
        self._keep_invoices = keep_invoices
        self._dispatch = dispatch

    def all(self, handlers: Mapping[str, DueWorkHandler]) -> RunReport:
        for kind, handler in handlers.items():
            self._kind(kind, handler)
        if self._scope is not None:
            return self.report
        # Once the periods are billed: invoices unpaid past their due date are announced, then
        # (when on) cancel their subscriptions.
        for result in notify_overdue_invoices(self._storage, self._run):
            self._committed(result, set())
        for result in cancel_unpaid_subscriptions(self._storage, self._run):
            self._committed(result, set())
        # Then the wallet and feature balance alerts, on the balances this run left.
        for result in evaluate_balance_alerts(self._storage, self._run):
            self._committed(result, set())
        return self.report

    def _kind(self, kind: str, handler: DueWorkHandler) -> None:
        """Claim and carry out batches of ``kind`` until none is due."""
        skipped: set[str] = set()  # failed in this run: still due, not claimed again
        while True:
            with self._storage.unit_of_work(*(self._scope or ())) as uow:
                # Failed items stay due and come back first; claim past them.
                due = self._claim(uow, kind, self._batch_size + len(skipped))
                claimed = [item for item in due if item.id not in skipped][: self._batch_size]
                if not claimed:
                    return
                result: BatchResult | None
                try:
                    result = handler(uow, claimed, self._run)
                    uow.commit()
                except BillingError:
                    log.warning(
                        "due %s batch of %d failed; retrying one by one", kind, len(claimed), exc_info=True
                    )
                    result = None
            if result is None:
                for item in claimed:
                    self._one(kind, handler, item, skipped)
            else:
                self._committed(result, skipped)

    def _claim(self, uow: UnitOfWork, kind: str, limit: int) -> list[Record]:
        """The due items of ``kind``: claimed in every scope, or read in the run's own scope
        (earliest first, then by id, as the claim orders them)."""
        if self._scope is None:
            return uow.claim_due(kind, self._run.now, limit)
        due = KINDS[kind].due_at
        if due is None:
            raise ValidationError(f"{kind} carries no due work", field="kind")
        query = ListQuery(
            filters=(Filter(due, Op.LTE, self._run.now),),
            sort=(Sort(due, descending=False), Sort("id", descending=False)),
            limit=min(limit, MAX_LIMIT),
        )
        repo: Repository[Record] = getattr(uow, kind)
        return list(repo.list(query).items)

    def _one(self, kind: str, handler: DueWorkHandler, item: Record, skipped: set[str]) -> None:
        """Retry one item of a failed batch alone, in its own scope, as it is stored now."""
        scope = (getattr(item, "tenant_id", None), getattr(item, "environment_id", None))
        with self._storage.unit_of_work(*scope) as uow:
            stored = getattr(uow, kind).find(item.id)
            if stored is None:
                return
            try:
                result = handler(uow, [stored], self._run)
                uow.commit()
            except BillingError as exc:
                log.warning("cannot carry out due %s %s: %s", kind, item.id, exc.message)
                self.report.failures.append((item.id, exc.code, exc.message))
                skipped.add(item.id)
                return
        self._committed(result, skipped)

    def _committed(self, result: BatchResult, skipped: set[str]) -> None:
        self.report.add(result.report, keep_invoices=self._keep_invoices)
        skipped.update(failure[0] for failure in result.report.failures)
        if self._dispatch is not None:
            self._dispatch(result.recorded)
