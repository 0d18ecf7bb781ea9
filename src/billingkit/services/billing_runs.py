"""Billing periods, the first handler of the due-work runner (:mod:`billingkit.services.due_work`):
carry out everything due on a batch of claimed subscriptions.

For each subscription (:func:`billingkit.domain.renewals.plan_due` says what is due): renewal
notices, trial ends and period ends in order; each invoicing step is computed with one usage batch
for the whole claim, numbered and stored under its unique key; the subscription is then saved with
its new period, status and billing sequence, checked against the version it was claimed at.
A subscription whose only due work is an auto-invoice threshold check goes to
:func:`billingkit.services.auto_invoice_thresholds.bill_thresholds`; every subscription saved here
gets its next threshold check when it has a threshold.

Exactly once: the claim (a row lock on PostgreSQL, the writer lock on SQLite and in memory), the
version check and the unique invoice key each stop a second run from billing a period again, and
everything of a batch commits together or not at all.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

from billingkit.display.layout import Display
from billingkit.display.reports import run_report_display
from billingkit.domain.auto_invoice_thresholds import with_next_check
from billingkit.domain.display import Displayed
from billingkit.domain.event_types import subscription_payload
from billingkit.domain.invoices import Invoice
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.renewals import DuePlan, StepKind, plan_due
from billingkit.domain.resources import Record
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.errors import BillingError, InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.auto_invoice_thresholds import bill_thresholds
from billingkit.services.context import Context, DueRun
from billingkit.services.coupon_associations import (
    applied_association_ids,
    record_applications,
    with_applications,
)
from billingkit.services.grouped_billing import followers, group_charges
from billingkit.services.invoice_credits import TakenCredits, record_debits
from billingkit.services.invoicing import (
    Charge,
    Snapshot,
    Usage,
    build_invoice,
    compute_invoice,
    finalize_or_hold,
    invoice_event,
    load_snapshot,
    measure_usage,
)
from billingkit.services.subscription_termination import terminate_ended

__all__ = ["BatchResult", "RunReport", "bill_due_subscriptions", "bill_subscription_now"]

log = logging.getLogger("billingkit.billing")


@dataclass(slots=True, repr=False)
class RunReport(Displayed):
    """What a billing run did: ``subscription_count`` subscriptions billed, invoices issued
    (``invoices``, in order, unless the run was asked not to keep them; ``invoice_count`` either
    way), ``notification_count`` notifications recorded, and ``failures``: the subscriptions it
    could not bill (id, error code, message), which stay due."""

    subscription_count: int = 0
    invoices: list[Invoice] = field(default_factory=list)
    notification_count: int = 0
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    invoice_count: int = 0

    def add(self, part: RunReport, *, keep_invoices: bool = True) -> None:
        """Count ``part`` (one committed batch) into this report; its invoices are kept only
        with ``keep_invoices``."""
        self.subscription_count += part.subscription_count
        self.invoice_count += part.invoice_count
        if keep_invoices:
            self.invoices += part.invoices
        self.notification_count += part.notification_count
        self.failures += part.failures

    def __repr__(self) -> str:
        return (
            f"<RunReport {self.subscription_count} subscriptions, {self.invoice_count} invoices, "
            f"{self.notification_count} notifications, {len(self.failures)} failures>"
        )

    def _display_(self) -> Display:
        """What ``str()``, ``show()`` and ``_repr_html_()`` show: the counts, the kept invoices
        and the failures."""
        return run_report_display(
            subscription_count=self.subscription_count,
            invoice_count=self.invoice_count,
            notification_count=self.notification_count,
            invoices=self.invoices,
            failures=self.failures,
        )

    def to_pandas(self, *, customers: Any = None, lines: bool = False, money: str = "decimal") -> Any:
        """The invoices the run kept as a DataFrame, as ``Page.to_pandas`` makes it (the
        ``notebook`` extra)."""
        from billingkit.display.frames import invoice_lines_frame, invoices_frame

        build = invoice_lines_frame if lines else invoices_frame
        return build(self.invoices, customers=customers, money=money)


@dataclass(slots=True)
class BatchResult:
    """What a due-work handler did with one batch: its part of the run's report and the
    notifications it recorded (delivered to in-process subscribers after the commit)."""

    report: RunReport = field(default_factory=RunReport)
    recorded: list[NotificationEvent] = field(default_factory=list)


def _charges(sub: Subscription, plan: DuePlan) -> list[Charge]:
    return [
        Charge(sub, step.billing_reason, step.reference_point, step.period, step.next_period)
        for step in plan.invoicing_steps
        if step.billing_reason is not None and step.period is not None
    ]


def _measure(
    uow: UnitOfWork,
    subs: Sequence[Subscription],
    charges: dict[str, list[Charge]],
    snapshot: Snapshot,
    report: RunReport,
) -> dict[str, list[Usage]]:
    """Every subscription's usage per charge, with one usage batch; a subscription whose usage
    cannot be read (a missing customer or meter) is reported and left out (it stays due), the
    others are measured again without it."""
    flat = [charge for sub in subs for charge in charges[sub.id]]
    try:
        measured = iter(measure_usage(uow, flat, snapshot))
        return {sub.id: [next(measured) for _ in charges[sub.id]] for sub in subs}
    except BillingError:
        usage: dict[str, list[Usage]] = {}
        for sub in subs:
            try:
                usage[sub.id] = measure_usage(uow, charges[sub.id], snapshot)
            except BillingError as exc:
                _failed(report, sub, exc)
        return usage


def _failed(report: RunReport, sub: Subscription, exc: BillingError) -> None:
    log.warning("cannot bill subscription %s: %s", sub.id, exc.message)
    report.failures.append((sub.id, exc.code, exc.message))


def _subscription_event(ctx: Context, event: str, sub: Subscription, snapshot: Snapshot) -> NotificationEvent:
    return notifications.event(
        ctx,
        event_type=event,
        entity_type="subscription",
        entity_id=sub.id,
        resource=subscription_payload(sub, snapshot.customers.get(sub.customer_id)),
    )


@dataclass(slots=True)
class _Billed:
    """One subscription's outcome before anything is written: which of its invoicing steps
    issue an invoice, and itself as claimed and as it will be saved."""

    claimed: Subscription
    updated: Subscription
    plan: DuePlan
    invoiced: list[bool]  # per invoicing step, in step order: whether it has an invoice


def _bill_scope(
    uow: UnitOfWork,
    ctx: Context,
    subs: Sequence[Subscription],
    renewal_notice: timedelta | None,
    result: BatchResult,
    finalization_delay: timedelta = timedelta(0),
) -> None:
    """Bill a scope's claimed subscriptions with a few statements for all of them: one usage batch,
    one block of invoice numbers, one insert of invoices, one update of subscriptions (per set of
    changed columns), one insert of prepaid credit debits and one update of the wallets they
    draw from, and one insert of notifications. Renewal invoices stay DRAFT for
    ``finalization_delay`` (the invoices handler finalizes them)."""
    report = result.report
    plans = {sub.id: plan_due(sub, ctx.now, renewal_notice=renewal_notice) for sub in subs}
    snapshot = load_snapshot(uow, subs, at=ctx.now)
    # A parent's invoices also bill its grouped children's lines (loaded with the snapshot).
    charges = {sub.id: group_charges(snapshot, sub, _charges(sub, plans[sub.id])) for sub in subs}
    usage = _measure(uow, subs, charges, snapshot, report)
    subs = bill_thresholds(uow, ctx, subs, plans, snapshot, report)  # those with only a check due
    billed: list[_Billed] = []
    drafts: list[Invoice] = []  # unnumbered, in billing order
    applications: Counter[str] = Counter()  # coupon association id -> invoices it discounted
    taken: list[TakenCredits] = []  # the prepaid credits each invoice drew, debited below
    for sub in subs:
        if sub.id not in usage:
            continue
        # Each invoice is priced and built at once, so the drafts are short-lived.
        plan = plans[sub.id]
        sequence = sub.billing_sequence
        built: list[Invoice] = []
        invoiced: list[bool] = []
        applied: list[str] = []
        took: list[TakenCredits] = []
        try:
            for charge, used in zip(charges[sub.id], usage.pop(sub.id), strict=True):
                item = compute_invoice(charge, snapshot, used, as_of=ctx.now)
                invoiced.append(bool(item.draft.lines))  # no lines: nothing to bill for this step
                if item.draft.lines:
                    sequence += 1
                    invoice = build_invoice(ctx, item, snapshot, billing_sequence=sequence)
                    built.append(invoice)
                    if item.draft.credit_debits:
                        # A later invoice of this customer in the batch sees only what is left.
                        took.append(snapshot.credits.take(item.draft.credit_debits, invoice.id))
                if item.draft.coupon_applications:
                    # A catch-up invoice after this one sees the coupon used once more.
                    ids = applied_association_ids(item.draft.coupon_applications)
                    applied += ids
                    current = snapshot.coupon_associations[sub.id]
                    snapshot.coupon_associations[sub.id] = with_applications(current, ids)
        except BillingError as exc:
            snapshot.credits.give_back(took)
            _failed(report, sub, exc)
            continue
        drafts += built
        taken += took
        applications.update(applied)
        updated = sub.model_copy(update={**plan.changes, **ctx.touch(), "billing_sequence": sequence})
        updated = with_next_check(updated, ctx.now, ctx.settings.auto_invoice_check_interval)
        billed.append(_Billed(sub, updated, plan, invoiced))

    issued = iter(finalize_or_hold(uow, ctx, drafts, finalization_delay))
    del drafts  # the numbered copies replace them
    stored: list[Invoice] = []
    events: list[NotificationEvent] = []
    changes: list[tuple[Subscription, Subscription]] = []
    for one in billed:
        report.subscription_count += 1
        sub, updated = one.claimed, one.updated
        per_step = iter(one.invoiced)
        for step in one.plan.steps:
            if step.kind is StepKind.RENEWAL_NOTICE:
                events.append(_subscription_event(ctx, "subscription.renewal.due", sub, snapshot))
            elif step.kind in (StepKind.PERIOD_END, StepKind.TRIAL_END) and next(per_step):
                invoice = next(issued)
                stored.append(invoice)
                events.append(invoice_event(ctx, invoice))
        if one.plan.steps or updated.next_run_at != sub.next_run_at:
            changes.append((sub, updated))
        # A parent's children move with it (same unit of work): its period, anchor and status.
        moved = [(sub, updated), *followers(ctx, snapshot, sub, updated)]
        changes += moved[1:]
        for before, after in moved:
            if after.subscription_status is not before.subscription_status:
                saved = after.model_copy(update={"version": before.version + 1})
                events.append(_subscription_event(ctx, "subscription.updated", saved, snapshot))
                if after.subscription_status is SubscriptionStatus.CANCELLED:
                    events.append(_subscription_event(ctx, "subscription.cancelled", saved, snapshot))
    uow.invoices.add_many(stored)
    debited = record_debits(uow, ctx, snapshot.credits, taken)
    uow.subscriptions.update_many(changes)
    terminate_ended(uow, ctx, changes)
    record_applications(uow, ctx, applications)
    notifications.record_many(uow, ctx, events)
    report.invoices += stored
    report.invoice_count += len(stored)
    report.notification_count += len(events) + debited


def bill_due_subscriptions(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of subscriptions: carry out what is due at ``run.now`` on the claimed
    ``items`` (any scopes), writing in ``uow`` (the runner commits). A subscription that is no longer
    due (another runner billed it before a retry re-read it) is left alone. Raises on a write
    failure: the runner rolls the batch back and retries it one subscription at a time."""
    result = BatchResult()
    by_scope: dict[tuple[str, str], list[Subscription]] = defaultdict(list)
    for sub in cast("Sequence[Subscription]", items):
        if sub.next_run_at is not None and sub.next_run_at <= run.now:
            by_scope[(sub.tenant_id, sub.environment_id)].append(sub)
    for (tenant_id, environment_id), group in by_scope.items():
        ctx = run.context(tenant_id, environment_id)
        settings = run.settings
        _bill_scope(
            uow.for_scope(tenant_id, environment_id),
            ctx,
            group,
            settings.renewal_notice,
            result,
            settings.invoice_finalization_delay,
        )
        result.recorded += ctx.recorded
    return result


def bill_subscription_now(
    uow: UnitOfWork, ctx: Context, sub: Subscription, *, renewal_notice: timedelta | None
) -> RunReport:
    """Carry out what is due on stored ``sub`` at ``ctx.now`` exactly as the billing run does, in
    ``uow`` (the caller's unit of work commits): e.g. a trial a modification ended now (its trial
    end step, invoice and status). Raises ``InvalidOperation`` with the run's reason when the
    subscription cannot be billed (the caller's unit of work is then rolled back)."""
    result = BatchResult()
    _bill_scope(uow, ctx, [sub], renewal_notice, result, ctx.settings.invoice_finalization_delay)
    if result.report.failures:
        _, _, message = result.report.failures[0]
        raise InvalidOperation(message)
    return result.report
