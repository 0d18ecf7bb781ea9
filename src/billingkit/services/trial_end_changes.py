"""``type: trial_end`` of ``POST /subscriptions/{id}/modify/execute``: end a trialing
subscription's trial now, or move it (reference notes §1.5).

* ``action: immediate``: the trial ends now, exactly as the billing run ends a trial that ran
  out: the trial's end (and the current period's) becomes now and the billing run's own code
  carries it out (:func:`billingkit.services.billing_runs.bill_subscription_now`): the anchor moves
  to now (anniversary) or the next calendar boundary, the subscription is ``active`` with the first
  paid period ``[now, next boundary)``, invoiced in advance (``SUBSCRIPTION_TRIAL_END``). Example:
  30.00 a month, trial 1-15 June, ended on 5 June 12:00 -> active [5 Jun 12:00, 5 Jul 12:00), an
  invoice of 30.00.
* ``action: scheduled_date`` with ``new_trial_end``: the trial (and the current period, which is
  the trial window) ends at ``new_trial_end`` instead, earlier or later, after now, after the
  trial's start and not after the subscription's ``end_date``; the billing run ends it then.

Only a ``trialing`` subscription, and not an ``inherited`` or ``grouped_invoicing`` child (its
parent's billing moves it): ``InvalidOperation``. ``subscription.updated`` is recorded.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Self

from pydantic import model_validator

from billingkit.domain.invoices import Invoice
from billingkit.domain.subscription_inheritance import is_child
from billingkit.domain.subscription_lifecycle import next_run_at
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.validation import InputModel, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.billing_runs import bill_subscription_now
from billingkit.services.context import Context
from billingkit.services.modify_resources import ChangedResources

__all__ = ["SubModifyTrialEndRequest", "TrialEndAction", "change_trial_end"]

FIELD = "trial_end_params.new_trial_end"


class TrialEndAction(StrEnum):
    IMMEDIATE = "immediate"
    SCHEDULED_DATE = "scheduled_date"


class SubModifyTrialEndRequest(InputModel):
    """The reference's ``SubModifyTrialEndRequest``: ``new_trial_end`` is required with
    ``scheduled_date`` and goes with it only."""

    action: TrialEndAction
    new_trial_end: UtcDatetime | None = None

    @model_validator(mode="after")
    def _date_by_action(self) -> Self:
        if self.action is TrialEndAction.SCHEDULED_DATE and self.new_trial_end is None:
            raise ValidationError("new_trial_end is required for action scheduled_date", field=FIELD)
        if self.action is TrialEndAction.IMMEDIATE and self.new_trial_end is not None:
            raise ValidationError("new_trial_end goes with action scheduled_date only", field=FIELD)
        return self


def _check_trialing(sub: Subscription) -> None:
    if sub.subscription_status is not SubscriptionStatus.TRIALING:
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_status.value}: only a trialing subscription's "
            "trial can end or move"
        )
    if is_child(sub):
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_type.value}: its parent's billing moves its trial"
        )


def change_trial_end(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    data: SubModifyTrialEndRequest,
    *,
    renewal_notice: timedelta | None = None,
) -> tuple[Subscription, ChangedResources]:
    """Carry out ``data`` on stored ``sub`` (see the module doc): the subscription saved and the
    invoice the trial's end issued. Raises ``InvalidOperation`` (not trialing, a child),
    ``ValidationError`` on ``trial_end_params.new_trial_end``; nothing is written then."""
    _check_trialing(sub)
    start = sub.trial_start or sub.current_period_start
    if data.action is TrialEndAction.IMMEDIATE:
        if ctx.now < start:
            raise InvalidOperation(f"the trial of subscription {sub.id} has not started yet")
        return _end_now(uow, ctx, sub, renewal_notice)
    new_end = data.new_trial_end
    assert new_end is not None  # the request model requires it
    if new_end <= ctx.now:
        raise ValidationError(
            "new_trial_end must be after now (to end the trial now, use action immediate)", field=FIELD
        )
    if new_end <= start:
        raise ValidationError(
            f"new_trial_end must be after the trial's start ({start.isoformat()})", field=FIELD
        )
    if sub.end_date is not None and new_end > sub.end_date:
        raise ValidationError(
            f"new_trial_end must not be after the subscription's end ({sub.end_date.isoformat()})",
            field=FIELD,
        )
    if new_end == sub.current_period_end:
        raise ValidationError(f"the trial already ends at {new_end.isoformat()}", field=FIELD)
    moved = sub.model_copy(
        update={
            **ctx.touch(),
            "trial_end": new_end,
            "current_period_end": new_end,
            "next_run_at": next_run_at(
                SubscriptionStatus.TRIALING,
                sub.current_period_start,
                new_end,
                sub.renewal_notice_for,
                renewal_notice,
            ),
        }
    )
    saved = uow.subscriptions.update(moved, expected_version=sub.version)
    notifications.notify(uow, ctx, "subscription.updated", saved, uow.customers.find(saved.customer_id))
    return saved, ChangedResources()


def _end_now(
    uow: UnitOfWork, ctx: Context, sub: Subscription, renewal_notice: timedelta | None
) -> tuple[Subscription, ChangedResources]:
    """End the trial at ``ctx.now`` through the billing run (which records
    ``subscription.updated`` as the status moves and the invoice's notification)."""
    moved = sub.model_copy(
        update={**ctx.touch(), "trial_end": ctx.now, "current_period_end": ctx.now, "next_run_at": ctx.now}
    )
    saved = uow.subscriptions.update(moved, expected_version=sub.version)
    report = bill_subscription_now(uow, ctx, saved, renewal_notice=renewal_notice)
    after = uow.subscriptions.get(sub.id)
    invoices: tuple[Invoice, ...] = tuple(
        invoice for invoice in report.invoices if invoice.subscription_id == sub.id
    )
    return after, ChangedResources(invoices=invoices)
