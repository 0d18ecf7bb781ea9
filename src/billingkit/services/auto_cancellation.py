"""Cancelling subscriptions whose invoices stay unpaid (reference notes §1.4, second bullet).

Off unless ``Settings.auto_cancellation_grace_days`` is set (the reference's tenant setting
``subscription_config.auto_cancellation_enabled`` with its ``grace_period_days``). When set, every
run of the due work (``Billing.run_due``, the worker) ends with this step, after the billing
periods: in every tenant and environment, a FINALIZED ``SUBSCRIPTION`` invoice with
``payment_status`` ``FAILED`` or ``PENDING``, something still to pay (``amount_remaining`` > 0) and
``due_date`` + grace days before now has its subscription, if ``active``, cancelled ``immediate``
(no invoice, no proration: :func:`billingkit.services.subscription_cancel.cancel_subscription`).

Example: grace 3 days, invoice due 16 May 09:30 unpaid -> the first run after 19 May 09:30 cancels
its subscription at the run's instant.

Each subscription is cancelled in a unit of work of its own, re-read there: a subscription
another runner cancelled (or that was paid, paused, cancelled meanwhile) is left alone, and one
that cannot be cancelled is reported in the run's failures without stopping the others. Cost per
run: one read of the tenants, one per tenant of its environments and one per environment of its
overdue invoices.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TypeVar

from billingkit.domain.cancellation import CancellationType
from billingkit.domain.invoices import Invoice, InvoiceStatus, InvoiceType, PaymentStatus
from billingkit.domain.money import ZERO
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Sort
from billingkit.domain.resources import Record, iso
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.errors import BillingError
from billingkit.ports import Repository, Storage, UnitOfWork
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import DueRun
from billingkit.services.subscription_cancel import CancelSubscriptionRequest, cancel_subscription

__all__ = ["cancel_unpaid_subscriptions", "every_scope", "live_pages"]

log = logging.getLogger("billingkit.auto_cancellation")

R = TypeVar("R", bound=Record)
_UNPAID = [PaymentStatus.FAILED.value, PaymentStatus.PENDING.value]


def live_pages(repo: Repository[R], *filters: Filter) -> Iterator[R]:
    """Every live item of ``repo`` matching ``filters``, in id order, a page at a time."""
    offset = 0
    while True:
        page = repo.list(
            ListQuery(filters=filters, sort=(Sort("id", descending=False),), limit=MAX_LIMIT, offset=offset)
        )
        yield from page.items
        if not page.has_more:
            return
        offset += len(page.items)


def every_scope(storage: Storage) -> list[tuple[str, str]]:
    """Every (tenant id, environment id) of the store."""
    scopes: list[tuple[str, str]] = []
    with storage.unit_of_work() as uow:
        for tenant in live_pages(uow.tenants):
            environments = uow.for_scope(tenant.id, None).environments
            scopes += [(tenant.id, env.id) for env in live_pages(environments)]
    return scopes


def _overdue(uow: UnitOfWork, cutoff: datetime) -> dict[str, Invoice]:
    """The scope's overdue unpaid subscription invoices, the oldest due per subscription id."""
    filters = (
        Filter("invoice_type", Op.EQ, InvoiceType.SUBSCRIPTION.value),
        Filter("invoice_status", Op.EQ, InvoiceStatus.FINALIZED.value),
        Filter("payment_status", Op.IN, _UNPAID),
        Filter("amount_remaining", Op.GT, ZERO),
        Filter("due_date", Op.LT, cutoff),
    )
    oldest: dict[str, Invoice] = {}
    for invoice in live_pages(uow.invoices, *filters):
        sub_id = invoice.subscription_id
        if sub_id is None or invoice.due_date is None:
            continue
        known = oldest.get(sub_id)
        if known is None or (invoice.due_date, invoice.id) < (known.due_date or invoice.due_date, known.id):
            oldest[sub_id] = invoice
    return oldest


def cancel_unpaid_subscriptions(storage: Storage, run: DueRun) -> Iterator[BatchResult]:
    """Cancel the active subscriptions with an invoice unpaid past its due date plus the grace
    days (see the module doc); yields what each committed cancellation (or failure) did. Nothing
    when ``run.settings.auto_cancellation_grace_days`` is ``None``."""
    grace = run.settings.auto_cancellation_grace_days
    if grace is None:
        return
    cutoff = run.now - timedelta(days=grace)
    for tenant_id, environment_id in every_scope(storage):
        with storage.unit_of_work(tenant_id, environment_id) as uow:
            overdue = _overdue(uow, cutoff)
            active = {
                sub.id
                for sub in uow.subscriptions.find_many(overdue)
                if sub.subscription_status is SubscriptionStatus.ACTIVE
            }
        for sub_id in sorted(active):
            yield _cancel(storage, run, tenant_id, environment_id, overdue[sub_id], grace)


def _cancel(
    storage: Storage, run: DueRun, tenant_id: str, environment_id: str, invoice: Invoice, grace: int
) -> BatchResult:
    result = BatchResult()
    ctx = run.context(tenant_id, environment_id)
    sub_id = invoice.subscription_id or ""
    reason = (
        f"auto-cancelled: invoice {invoice.id} unpaid since its due date {iso(invoice.due_date)} "
        f"and {grace} grace days"
    )
    with storage.unit_of_work(tenant_id, environment_id) as uow:
        sub = uow.subscriptions.find(sub_id)
        if sub is None or sub.subscription_status is not SubscriptionStatus.ACTIVE:
            return result
        try:
            cancel_subscription(
                uow,
                ctx,
                subscription_id=sub_id,
                data=CancelSubscriptionRequest(cancellation_type=CancellationType.IMMEDIATE, reason=reason),
            )
            uow.commit()
        except BillingError as exc:
            log.warning("cannot auto-cancel subscription %s: %s", sub_id, exc.message)
            result.report.failures.append((sub_id, exc.code, exc.message))
            return result
    log.info("subscription %s auto-cancelled: invoice %s unpaid", sub_id, invoice.id)
    result.report.notification_count += len(ctx.recorded)
    result.recorded += ctx.recorded
    return result
