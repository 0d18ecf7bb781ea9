"""A new subscription's ``payment_behavior`` applied to its opening invoice (the table in
:mod:`billingkit.domain.payment_behavior`): charged at once when the behaviour waits for the
money, then ``active``, ``incomplete``, or (``error_if_incomplete`` on create) not created.

Runs in the creating unit of work right after the opening invoice is issued, so a refusal writes
nothing: no subscription, no invoice, no payment.
"""

from __future__ import annotations

from billingkit.domain.invoices import BillingReason
from billingkit.domain.payment_behavior import (
    INCOMPLETE_BEHAVIORS,
    OpeningOutcome,
    charges_at_opening,
    fully_paid,
    opening_outcome,
)
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.errors import InvalidOperation
from billingkit.ports import UnitOfWork
from billingkit.services.context import Context
from billingkit.services.payment_attempts import collect_remaining

__all__ = ["settle_opening"]


def settle_opening(
    uow: UnitOfWork, ctx: Context, sub: Subscription, *, activation: bool = False
) -> Subscription:
    """``sub`` (just opened: ``active`` with its opening invoice issued, or trialing, or a draft)
    as its ``payment_behavior`` leaves it: unchanged, or ``incomplete`` (nothing due for the
    billing run) while its opening invoice is unpaid. ``activation``: a draft is being activated.

    Raises ``InvalidOperation`` (details ``field`` ``payment_behavior``, the invoice's
    ``payment_status`` and ``amount_remaining``) when ``error_if_incomplete`` creates a
    subscription whose opening invoice the charge did not pay.
    """
    if (
        sub.subscription_status is not SubscriptionStatus.ACTIVE
        or sub.payment_behavior not in INCOMPLETE_BEHAVIORS
    ):
        return sub
    # A subscription opened by a plan change has a SUBSCRIPTION_UPDATE opening invoice instead.
    invoice = None
    for reason in (BillingReason.SUBSCRIPTION_CREATE, BillingReason.SUBSCRIPTION_UPDATE):
        invoice = invoice or uow.invoices.find_one(
            subscription_id=sub.id,
            billing_reason=reason,
            period_start=sub.current_period_start,
            period_end=sub.current_period_end,
        )
    if (
        invoice is not None
        and not fully_paid(invoice)
        and charges_at_opening(sub.payment_behavior, sub.collection_method)
    ):
        invoice, _ = collect_remaining(uow, ctx, invoice, card=sub.gateway_payment_method_id)
    paid = invoice is None or fully_paid(invoice)
    outcome = opening_outcome(sub.payment_behavior, paid=paid, activation=activation)
    if outcome is OpeningOutcome.ACTIVE:
        return sub
    if outcome is OpeningOutcome.REFUSED and invoice is not None:
        raise InvalidOperation(
            f"the opening invoice ({invoice.amount_due} {invoice.currency}) was not paid: its payment is "
            f"{invoice.payment_status.value} with {invoice.amount_remaining} remaining; payment_behavior "
            "error_if_incomplete creates no subscription then",
            details={
                "field": "payment_behavior",
                "payment_status": invoice.payment_status.value,
                "amount_remaining": str(invoice.amount_remaining),
            },
        )
    return sub.model_copy(update={"subscription_status": SubscriptionStatus.INCOMPLETE, "next_run_at": None})
