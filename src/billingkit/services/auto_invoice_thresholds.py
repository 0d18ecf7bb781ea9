"""Auto-invoice thresholds: the create-time rules and the billing run's threshold checks.

The rules are in :mod:`billingkit.domain.auto_invoice_thresholds`. This module

* checks and stores a new subscription's threshold (:func:`set_threshold`, called by
  ``create_subscription``) and schedules its first check;
* carries out the threshold checks of a billing run batch (:func:`bill_thresholds`, called by
  :mod:`billingkit.services.billing_runs` for the claimed subscriptions whose only due work is a
  check): one usage batch for all of them, each window priced by the invoicing code the period-end
  invoice uses (:mod:`billingkit.services.invoicing`), one insert of the invoices that reached their
  threshold, one update of the subscriptions (their period start moved, or only their next check).

Exactly once: the subscriptions are claimed by the run (a row lock on PostgreSQL, the writer lock
on SQLite and in memory) and saved at the version they were claimed at; the invoice is stored under
the unique key (subscription, period, ``AUTO_INVOICE_THRESHOLD``); everything commits with the batch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from billingkit.domain.auto_invoice_thresholds import (
    FIELD,
    check_threshold_terms,
    cut_fields,
    reached,
    threshold_window,
    usage_lines,
    with_next_check,
)
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.notifications import NotificationEvent
from billingkit.domain.renewals import DuePlan
from billingkit.domain.subscriptions import Subscription
from billingkit.errors import BillingError, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context
from billingkit.services.coupon_associations import applied_association_ids, record_applications
from billingkit.services.invoice_credits import TakenCredits, record_debits
from billingkit.services.invoicing import (
    Charge,
    Snapshot,
    Usage,
    build_invoice,
    compute_invoice,
    invoice_event,
    measure_usage,
    number_invoices,
)

if TYPE_CHECKING:  # billing_runs imports this module
    from billingkit.services.billing_runs import RunReport
    from billingkit.services.subscriptions import SubscriptionCreate

__all__ = ["bill_thresholds", "set_threshold"]


def set_threshold(ctx: Context, sub: Subscription, data: SubscriptionCreate) -> Subscription:
    """``sub`` (being created) with the request's ``auto_invoice_threshold`` and, when it is
    active, its first threshold check scheduled. ``None`` (the default) means none: plans carry no
    threshold of their own in billingkit, so there is nothing to inherit. Raises
    ``ValidationError`` (see :func:`~billingkit.domain.auto_invoice_thresholds.check_threshold_terms`)."""
    threshold = data.auto_invoice_threshold
    if threshold is None:
        return sub
    if data.inheritance is not None and data.inheritance.model_dump(exclude_none=True):
        raise ValidationError(
            "auto_invoice_threshold is for standalone subscriptions; this one has an inheritance "
            "configuration",
            field=FIELD,
        )
    check_threshold_terms(
        threshold=threshold,
        subscription_type=sub.subscription_type,
        plan_lines=[line for line in sub.line_items if line.entity_type == "plan"],
        commitment=data.commitment_amount is not None or bool(data.line_item_commitments),
        proration_behavior=sub.proration_behavior,
    )
    sub = sub.model_copy(update={"auto_invoice_threshold": threshold})
    return with_next_check(sub, ctx.now, ctx.settings.auto_invoice_check_interval)


def _checks(subs: Sequence[Subscription], plans: dict[str, DuePlan]) -> list[Subscription]:
    """The subscriptions whose only due work is a threshold check: nothing else is due on them."""
    return [sub for sub in subs if sub.auto_invoice_threshold is not None and not plans[sub.id].steps]


def _measure(
    uow: UnitOfWork, charges: dict[str, Charge], snapshot: Snapshot, report: RunReport
) -> dict[str, Usage]:
    """Each charge's usage, in one batch; when that fails, one subscription at a time, reporting
    those that cannot be measured (they stay due)."""
    ids = list(charges)
    try:
        return dict(zip(ids, measure_usage(uow, [charges[i] for i in ids], snapshot), strict=True))
    except BillingError:
        usage: dict[str, Usage] = {}
        for sub_id in ids:
            try:
                (usage[sub_id],) = measure_usage(uow, [charges[sub_id]], snapshot)
            except BillingError as exc:
                report.failures.append((sub_id, exc.code, exc.message))
        return usage


def bill_thresholds(
    uow: UnitOfWork,
    ctx: Context,
    subs: Sequence[Subscription],
    plans: dict[str, DuePlan],
    snapshot: Snapshot,
    report: RunReport,
) -> list[Subscription]:
    """Carry out the threshold checks among the claimed ``subs`` (those with a threshold and
    nothing else due in ``plans``) and return the others, for the period billing.

    Each check prices ``[current_period_start, now)`` with the subscription's usage lines; when the
    subtotal reaches the threshold the window is invoiced (``AUTO_INVOICE_THRESHOLD``, finalized at
    once, prepaid credits and coupons applied as on any invoice) and the period starts at ``now``.
    Every checked subscription gets its next check. ``snapshot`` is the batch's: the credits an
    invoice draws here are gone for the batch's other invoices."""
    checks = _checks(subs, plans)
    if not checks:
        return list(subs)
    checked = {sub.id for sub in checks}
    rest = [sub for sub in subs if sub.id not in checked]
    charges: dict[str, Charge] = {}
    for sub in checks:
        window = threshold_window(sub, ctx.now)
        if window is not None:
            charges[sub.id] = Charge(
                usage_lines(sub), BillingReason.AUTO_INVOICE_THRESHOLD, "period_end", window
            )
    usage = _measure(uow, charges, snapshot, report)
    interval = ctx.settings.auto_invoice_check_interval
    drafts: list[Invoice] = []
    taken: list[TakenCredits] = []
    applied: Counter[str] = Counter()
    changes: list[tuple[Subscription, Subscription]] = []
    for sub in checks:
        if sub.id in charges and sub.id not in usage:
            continue  # its usage could not be read: reported, it stays due
        # Nothing else is due: the plan's changes only recompute when the period needs the run next.
        updated = sub.model_copy(update=plans[sub.id].changes)
        if sub.id in charges:
            try:
                item = compute_invoice(charges[sub.id], snapshot, usage[sub.id], as_of=ctx.now)
            except BillingError as exc:  # it cannot be priced: reported, it stays due
                report.failures.append((sub.id, exc.code, exc.message))
                continue
            if item.draft.lines and reached(item.draft.subtotal, sub.auto_invoice_threshold):
                sequence = sub.billing_sequence + 1
                invoice = build_invoice(ctx, item, snapshot, billing_sequence=sequence)
                drafts.append(invoice)
                if item.draft.credit_debits:
                    taken.append(snapshot.credits.take(item.draft.credit_debits, invoice.id))
                applied.update(applied_association_ids(item.draft.coupon_applications))
                updated = updated.model_copy(
                    update={**cut_fields(at=ctx.now, billing_sequence=sequence), **ctx.touch()}
                )
        # A check that invoiced nothing changes only when the run looks next (not updated_at).
        changes.append((sub, with_next_check(updated, ctx.now, interval)))
    issued = number_invoices(uow, ctx, drafts)
    uow.invoices.add_many(issued)
    debited = record_debits(uow, ctx, snapshot.credits, taken)
    uow.subscriptions.update_many(changes)
    record_applications(uow, ctx, applied)
    events: list[NotificationEvent] = [invoice_event(ctx, invoice) for invoice in issued]
    notifications.record_many(uow, ctx, events)
    report.subscription_count += len(changes)
    report.invoices += issued
    report.invoice_count += len(issued)
    report.notification_count += len(events) + debited
    return rest
