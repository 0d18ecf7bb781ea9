"""An ``incomplete`` subscription becomes ``active`` when the invoice it waits for is paid in
full (reference notes §1.4): any invoice of it with billing reason ``SUBSCRIPTION_CREATE``,
``SUBSCRIPTION_UPDATE`` or ``SUBSCRIPTION_TRIAL_END``, whoever recorded the money (a payment, a
hand-recorded payment status, a credit note). Called from
:func:`billingkit.services.invoice_settlement.invoice_paid`, the one hook every route calls.

The subscription's billing resumes from its current period: ``next_run_at`` is recomputed, so a
period that ended while it was incomplete is billed by the next run. ``subscription.activated``
is recorded.
"""

from __future__ import annotations

from billingkit.domain.auto_invoice_thresholds import with_next_check
from billingkit.domain.invoices import Invoice
from billingkit.domain.payment_behavior import ACTIVATING_REASONS, fully_paid
from billingkit.domain.resources import Status
from billingkit.domain.subscription_lifecycle import next_run_at
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.context import Context

__all__ = ["activate_when_paid"]


def activate_when_paid(uow: UnitOfWork, ctx: Context, invoice: Invoice) -> None:
    """``invoice`` (as saved) may now be paid in full: make its ``incomplete`` subscription
    ``active`` if it is one of the invoices that subscription waits for. Idempotent: an active
    subscription is left alone."""
    if (
        invoice.subscription_id is None
        or invoice.billing_reason not in ACTIVATING_REASONS
        or not fully_paid(invoice)
    ):
        return
    sub = uow.subscriptions.find(invoice.subscription_id)
    if (
        sub is None
        or sub.status is not Status.PUBLISHED
        or sub.subscription_status is not SubscriptionStatus.INCOMPLETE
    ):
        return
    due = next_run_at(
        SubscriptionStatus.ACTIVE,
        sub.current_period_start,
        sub.current_period_end,
        sub.renewal_notice_for,
        ctx.settings.renewal_notice,
    )
    active = sub.model_copy(
        update={"subscription_status": SubscriptionStatus.ACTIVE, "next_run_at": due, **ctx.touch()}
    )
    active = with_next_check(active, ctx.now, ctx.settings.auto_invoice_check_interval)
    saved = uow.subscriptions.update(active, expected_version=sub.version)
    notifications.notify(uow, ctx, "subscription.activated", saved, uow.customers.find(saved.customer_id))
