"""Announcing invoices unpaid past their due date: ``invoice.payment.overdue``, from the scheduler.

Every run of the due work (``Billing.run_due``, the worker) has this step, after the kinds and
before the auto-cancellation: in every tenant and environment, a FINALIZED invoice (of any type)
with something still to pay (``amount_remaining`` > 0) whose ``due_date`` is before the run's
instant and that was never announced is announced: ``invoice.payment.overdue`` with the invoice,
and its ``overdue_notified_at`` set to the run's instant, so later runs leave it alone. A paid
invoice has nothing remaining and a voided or draft one is not FINALIZED: neither is announced.
An invoice paid after it was announced is not announced again if it later owes money again.

Example: due 16 May 09:30, unpaid -> the first run after 16 May 09:30 records one
``invoice.payment.overdue``; the runs after it record none.

Invoices are marked in units of work of :data:`CHUNK` invoices, re-read there and written with their
version checked, so two runners cannot both announce one invoice: the one that meets the other's
marks (or a concurrent payment) reads again and announces what is still to announce. A chunk that
fails otherwise is reported in the run's failures and stays due. Cost per run: one read of the
tenants, one per tenant of its environments and one per environment of its unannounced overdue
invoices.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime

from billingkit.domain.invoices import Invoice, InvoiceStatus
from billingkit.domain.money import ZERO
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import Status
from billingkit.errors import BillingError, VersionConflict
from billingkit.ports import Storage
from billingkit.services import notifications
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import DueRun
from billingkit.services.scope_pages import all_scopes, pages

__all__ = ["ATTEMPTS", "CHUNK", "is_overdue", "notify_overdue_invoices"]

log = logging.getLogger("billingkit.invoice_overdue")

#: Invoices announced per unit of work.
CHUNK = 500
#: Tries of a chunk that meets a version conflict.
ATTEMPTS = 3


def is_overdue(invoice: Invoice, now: datetime) -> bool:
    """True when ``invoice`` is to be announced overdue at ``now`` (see the module doc)."""
    return (
        invoice.invoice_status is InvoiceStatus.FINALIZED
        and invoice.amount_remaining > ZERO
        and invoice.due_date is not None
        and invoice.due_date < now
        and invoice.overdue_notified_at is None
        and invoice.status is Status.PUBLISHED
    )


def _candidates(storage: Storage, tenant_id: str, environment_id: str, now: datetime) -> list[str]:
    filters = (
        Filter("invoice_status", Op.EQ, InvoiceStatus.FINALIZED.value),
        Filter("amount_remaining", Op.GT, ZERO),
        Filter("due_date", Op.LT, now),
        Filter("overdue_notified_at", Op.EQ, None),
    )
    with storage.unit_of_work(tenant_id, environment_id) as uow:
        return [invoice.id for invoice in pages(uow.invoices, *filters)]


def notify_overdue_invoices(storage: Storage, run: DueRun) -> Iterator[BatchResult]:
    """Record ``invoice.payment.overdue`` once for each invoice that became overdue (see the
    module doc); yields what each committed chunk (or failed one) did."""
    for tenant_id, environment_id in all_scopes(storage):
        ids = _candidates(storage, tenant_id, environment_id, run.now)
        for start in range(0, len(ids), CHUNK):
            yield _announce(storage, run, tenant_id, environment_id, ids[start : start + CHUNK])


def _announce(
    storage: Storage, run: DueRun, tenant_id: str, environment_id: str, ids: list[str]
) -> BatchResult:
    """Announce the invoices of ``ids`` still overdue, in one unit of work. A version conflict (a
    concurrent runner announced some, or someone paid one) is retried from a fresh read, which
    leaves out what is no longer to announce, up to :data:`ATTEMPTS` times."""
    result = BatchResult()
    for attempt in range(1, ATTEMPTS + 1):
        ctx = run.context(tenant_id, environment_id)
        try:
            with storage.unit_of_work(tenant_id, environment_id) as uow:
                stored = sorted(
                    (invoice for invoice in uow.invoices.find_many(ids) if is_overdue(invoice, run.now)),
                    key=lambda invoice: invoice.id,
                )
                if not stored:
                    return result
                saved = uow.invoices.update_many(
                    [
                        (invoice, invoice.model_copy(update={"overdue_notified_at": run.now}))
                        for invoice in stored
                    ]
                )
                events = [
                    notifications.notification(ctx, "invoice.payment.overdue", invoice) for invoice in saved
                ]
                notifications.record_many(uow, ctx, events)
                uow.commit()
        except VersionConflict as exc:
            if attempt < ATTEMPTS:
                continue
            return _failed(result, ids, exc)
        except BillingError as exc:
            return _failed(result, ids, exc)
        result.report.notification_count += len(ctx.recorded)
        result.recorded += ctx.recorded
        return result
    return result  # pragma: no cover - the loop always returns


def _failed(result: BatchResult, ids: list[str], exc: BillingError) -> BatchResult:
    log.warning("cannot announce %d overdue invoices: %s", len(ids), exc.message)
    result.report.failures += [(invoice_id, exc.code, exc.message) for invoice_id in ids]
    return result
