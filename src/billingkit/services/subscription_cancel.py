"""Cancelling a subscription (``POST /subscriptions/{id}/cancel``, reference notes §1.7).

The rules (effective date, what each type writes, refusals) are pure functions in
:mod:`billingkit.domain.cancellation`; this module reads what they need, carries them out and
writes the result in one unit of work:

* ``immediate``: the subscription is ``cancelled`` at once (at ``cancel_at`` when backdated, else
  now). Its line items end then, and so does what hangs from it
  (:func:`billingkit.services.subscription_termination.terminate`). A period that ended at or
  before that instant and was not billed yet is billed first, as the billing run would have. With
  ``cancel_immediately_invoice_policy: generate_invoice`` one invoice bills the used part of the
  current period (its ARREAR charges: usage, FIXED ARREAR prorated); with ``proration_behavior:
  create_prorations`` the unused time of FIXED ADVANCE lines is credited to the customer's PRE_PAID
  wallet, once (movement key ``proration_credit_cancel|<sub>|immediate|<period start>|<period
  end>``). A trialing subscription gets neither.
* ``end_of_period`` and ``scheduled_date``: a pending ``cancellation`` schedule remembers what the
  subscription looked like; the billing run ends it at ``cancel_at`` after billing the last
  (maybe shortened) period. Withdrawing the schedule
  (:func:`billingkit.services.subscription_schedules.cancel_schedule`) restores it.

Notifications: ``subscription.updated`` always, ``subscription.cancelled`` when it takes effect.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import Field, model_validator

from billingkit.domain.access import Action
from billingkit.domain.auto_invoice_thresholds import with_next_check
from billingkit.domain.cancellation import (
    CancelInvoicePolicy,
    Cancellation,
    CancellationType,
    LineCredit,
    check_single_period,
    plan_cancellation,
    unused_time_credit,
)
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.money import ZERO, round_money
from billingkit.domain.periods import Period
from billingkit.domain.queries import Filter, Op
from billingkit.domain.resources import iso
from billingkit.domain.subscription_schedules import ScheduleStatus, ScheduleType, SubscriptionSchedule
from billingkit.domain.subscriptions import ProrationBehavior, Subscription, SubscriptionStatus
from billingkit.domain.validation import InputModel, UtcDatetime
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    WalletTransaction,
    movement_key,
)
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications, wallet_ledger
from billingkit.services.billing_runs import bill_due_subscriptions
from billingkit.services.context import Context, DueRun
from billingkit.services.coupon_associations import count_applications, record_applications
from billingkit.services.grouped_billing import check_cancellable, end_children, group_charges
from billingkit.services.invoicing import (
    Charge,
    build_invoice,
    compute_invoices,
    issue_invoice,
    load_snapshot,
)
from billingkit.services.line_billing import billed_and_credited
from billingkit.services.records import get_live, list_where_in
from billingkit.services.subscription_pauses import end_pause_for_cancellation
from billingkit.services.subscription_termination import terminate

__all__ = [
    "PRORATION_CAUSE",
    "PRORATION_WALLET_NAME",
    "CancelSubscriptionRequest",
    "CancellationResult",
    "cancel_subscription",
]

ENTITY = "subscription"
LABEL = "subscription"
#: The cause of a cancellation's wallet credit: ``proration_credit_cancel|<sub>|immediate|...``.
PRORATION_CAUSE = "proration_credit_cancel"
#: The name of the PRE_PAID wallet a cancellation credit makes when the customer has none.
PRORATION_WALLET_NAME = "Proration Credit Wallet"
#: Longest ``reason`` (it is kept in the subscription's metadata, whose values are at most 500).
MAX_REASON = 500


class CancelSubscriptionRequest(InputModel):
    """The reference's ``CancelSubscriptionRequest``. The invoice policy may be spelled
    ``cancel_immediately_invoice_policy`` or, as the reference does, ``cancel_immediately_inovice_policy``
    (both: they must agree). ``proration_behavior`` and the policy only matter to ``immediate``."""

    cancellation_type: CancellationType
    cancel_at: UtcDatetime | None = None
    proration_behavior: ProrationBehavior = ProrationBehavior.NONE
    cancel_immediately_invoice_policy: CancelInvoicePolicy | None = None
    cancel_immediately_inovice_policy: CancelInvoicePolicy | None = None
    reason: Annotated[str, Field(max_length=MAX_REASON)] | None = None

    @model_validator(mode="after")
    def _one_policy(self) -> CancelSubscriptionRequest:
        right, reference = self.cancel_immediately_invoice_policy, self.cancel_immediately_inovice_policy
        if right is not None and reference is not None and right is not reference:
            raise ValidationError(
                "cancel_immediately_invoice_policy and cancel_immediately_inovice_policy disagree",
                field="cancel_immediately_inovice_policy",
            )
        return self

    @property
    def invoice_policy(self) -> CancelInvoicePolicy:
        """The invoice policy under either spelling; ``skip`` when neither is given."""
        given = self.cancel_immediately_invoice_policy or self.cancel_immediately_inovice_policy
        return given or CancelInvoicePolicy.SKIP


@dataclass(frozen=True, slots=True)
class CancellationResult:
    """What a cancellation did (the reference's ``CancelSubscriptionResponse``): the subscription
    as saved, when it takes effect, the credit for each line's unused time (``immediate`` with
    ``create_prorations``), the invoice of the used part (``generate_invoice``), and the wallet
    credit that paid them: its id and ``credited`` amount (``None`` when nothing was credited; a
    retry names the first credit)."""

    subscription: Subscription
    cancellation_type: CancellationType
    effective_date: datetime
    reason: str | None
    processed_at: datetime
    proration_details: tuple[LineCredit, ...] = ()
    invoice: Invoice | None = None
    wallet_transaction_id: str | None = None
    schedule: SubscriptionSchedule | None = None
    message: str = ""
    credited: Decimal | None = None

    @property
    def total_credit_amount(self) -> Decimal:
        """The credits the wallet holds for this period's unused time: what the credit paid (a
        retry answers the first credit's amount), else the sum of the details (zero without)."""
        total = (
            sum((d.credit_amount for d in self.proration_details), ZERO)
            if self.credited is None
            else self.credited
        )
        return round_money(total, self.subscription.currency)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "subscription_id": self.subscription.id,
            "cancellation_type": self.cancellation_type.value,
            "effective_date": iso(self.effective_date),
            "status": self.subscription.subscription_status.value,
            "reason": self.reason,
            "proration_details": [detail.to_dict() for detail in self.proration_details],
            "total_credit_amount": str(self.total_credit_amount),
            "message": self.message,
            "processed_at": iso(self.processed_at),
        }
        if self.invoice is not None:
            data["proration_invoice"] = self.invoice.to_dict()
        return data


def _catch_up(uow: UnitOfWork, ctx: Context, sub: Subscription, at: datetime) -> Subscription:
    """``sub`` with what fell due up to ``at`` billed first (a period that ended before the
    cancellation and that no billing run has billed yet), as the billing run bills it."""
    if sub.next_run_at is None or sub.next_run_at > at:
        return sub
    run = DueRun(now=at, ids=ctx.ids, settings=ctx.settings, providers=ctx.providers)
    result = bill_due_subscriptions(uow, [sub], run)
    ctx.recorded.extend(result.recorded)
    if result.report.failures:
        message = result.report.failures[0][2]
        raise InvalidOperation(
            f"the period of {sub.id} that ended before the cancellation cannot be billed: {message}"
        )
    return get_live(uow.subscriptions, LABEL, sub.id)


def _unused_time(uow: UnitOfWork, sub: Subscription, at: datetime) -> tuple[LineCredit, ...]:
    """The credit for each FIXED ADVANCE line's time after ``at`` in the current period."""
    check_single_period(sub)
    period = Period(sub.current_period_start, sub.current_period_end)
    billed, credited = billed_and_credited(uow, sub, period)
    prices = {price.id: price for price in uow.prices.find_many({li.price_id for li in sub.line_items})}
    credits = []
    for line in sub.line_items:
        price = prices.get(line.price_id)
        if price is None:
            continue
        credit = unused_time_credit(
            line,
            price.to_spec(),
            period,
            at,
            billed=billed.get(line.id, ZERO),
            credited=credited.get(line.id, ZERO),
        )
        if credit is not None:
            credits.append(credit)
    return tuple(credits)


def _pay_credits(
    uow: UnitOfWork, ctx: Context, sub: Subscription, credits: tuple[LineCredit, ...]
) -> WalletTransaction | None:
    """Top up the customer's PRE_PAID wallet (rate 1, made as "Proration Credit Wallet" if
    missing) with the credits, once per subscription and period: the movement key of a retry
    finds the first credit and moves nothing. Returns the wallet transaction (the first one on a
    retry)."""
    total = sum((credit.credit_amount for credit in credits), ZERO)
    if total <= ZERO:
        return None
    wallet = wallet_ledger.prepaid_wallet(
        uow, ctx, customer_id=sub.customer_id, currency=sub.currency, name=PRORATION_WALLET_NAME
    )
    start, end = iso(sub.current_period_start) or "", iso(sub.current_period_end) or ""
    movement = wallet_ledger.credit(
        uow,
        ctx,
        wallet,
        credits=total,
        amount=total,
        reason=TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
        key=movement_key(PRORATION_CAUSE, sub.id, CancellationType.IMMEDIATE.value, start, end),
        reference_type=TransactionReferenceType.EXTERNAL,
        reference_id=sub.id,
        description=f"credit for the unused time of subscription {sub.id}",
        metadata={"subscription_id": sub.id, "period_start": start, "period_end": end},
    )
    return movement.transactions[0]


def _used_part_invoice(
    uow: UnitOfWork, ctx: Context, sub: Subscription, at: datetime
) -> tuple[Invoice | None, int]:
    """The invoice of ``[current_period_start, at)`` (its ARREAR charges, reference point
    ``cancel``), issued now; ``None`` when nothing was charged. Returns it and the billing
    sequence after it."""
    period = Period(sub.current_period_start, sub.current_period_end)
    if at <= period.start:
        return None, sub.billing_sequence
    charge = Charge(sub, BillingReason.SUBSCRIPTION_CYCLE, "cancel", period, cancel_at=min(at, period.end))
    snapshot = load_snapshot(uow, [sub], at=ctx.now)
    (charge,) = group_charges(snapshot, sub, [charge])  # a parent's: its grouped children's too
    (computed,) = compute_invoices(uow, [charge], snapshot, as_of=ctx.now)
    if not computed.draft.lines:
        return None, sub.billing_sequence
    sequence = sub.billing_sequence + 1
    invoice = build_invoice(ctx, computed, snapshot, billing_sequence=sequence)
    issued = issue_invoice(uow, ctx, invoice, computed=computed, snapshot=snapshot)
    record_applications(uow, ctx, count_applications(computed.draft.coupon_applications))
    return issued, sequence


def _message(plan: Cancellation) -> str:
    if plan.immediate:
        return "subscription cancelled"
    if plan.cancellation_type is CancellationType.END_OF_PERIOD:
        return f"subscription will be cancelled at the end of the current period ({iso(plan.effective)})"
    return f"subscription will be cancelled on {iso(plan.effective)}"


def cancel_subscription(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: CancelSubscriptionRequest
) -> CancellationResult:
    """Cancel subscription ``subscription_id`` as ``data`` asks (see the module doc).

    Raises ``NotFound`` for an unknown subscription; ``InvalidOperation`` (400) for a draft, a
    cancelled or an inherited subscription, or a scheduled type while a cancellation is already
    scheduled; ``ValidationError`` naming the field for a bad ``cancel_at`` or ``create_prorations``
    with line items on another billing period; ``VersionConflict`` when the subscription changed
    meanwhile. Nothing is written then.
    """
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    sub = end_pause_for_cancellation(
        uow, ctx, sub, immediate=data.cancellation_type is CancellationType.IMMEDIATE
    )
    renewal_notice = ctx.settings.renewal_notice

    def planned(current: Subscription) -> Cancellation:
        return plan_cancellation(
            current,
            cancellation_type=data.cancellation_type,
            cancel_at=data.cancel_at,
            reason=data.reason,
            now=ctx.now,
            renewal_notice=renewal_notice,
        )

    plan = planned(sub)
    prorate = data.proration_behavior is ProrationBehavior.CREATE_PRORATIONS
    invoiced = data.invoice_policy is CancelInvoicePolicy.GENERATE_INVOICE
    check_cancellable(sub, immediate=plan.immediate, invoiced=invoiced, prorated=prorate)
    if plan.immediate and prorate:
        check_single_period(sub)
    if not plan.immediate:
        return _schedule(uow, ctx, sub, plan, data)
    caught_up = _catch_up(uow, ctx, sub, plan.effective)
    if caught_up is not sub:
        sub, plan = caught_up, planned(caught_up)
    trialing = sub.subscription_status is SubscriptionStatus.TRIALING
    invoice, sequence = None, sub.billing_sequence
    if data.invoice_policy is CancelInvoicePolicy.GENERATE_INVOICE and not trialing:
        invoice, sequence = _used_part_invoice(uow, ctx, sub, plan.effective)
    credits: tuple[LineCredit, ...] = ()
    paid = None
    if prorate and not trialing:
        credits = _unused_time(uow, sub, plan.effective)
        paid = _pay_credits(uow, ctx, sub, credits)
    cancelled = sub.model_copy(update={**plan.changes, **ctx.touch(), "billing_sequence": sequence})
    saved = uow.subscriptions.update(cancelled, expected_version=sub.version)
    terminate(uow, ctx, [saved], reason=data.reason)
    end_children(uow, ctx, saved)  # a parent's children end with it
    customer = uow.customers.find(saved.customer_id)
    notifications.notify(uow, ctx, "subscription.updated", saved, customer)
    notifications.notify(uow, ctx, "subscription.cancelled", saved, customer)
    return CancellationResult(
        subscription=saved,
        cancellation_type=plan.cancellation_type,
        effective_date=plan.effective,
        reason=data.reason,
        processed_at=ctx.now,
        proration_details=credits,
        invoice=invoice,
        wallet_transaction_id=paid.id if paid is not None else None,
        credited=paid.credit_amount if paid is not None else None,
        message=_message(plan),
    )


def _schedule(
    uow: UnitOfWork, ctx: Context, sub: Subscription, plan: Cancellation, data: CancelSubscriptionRequest
) -> CancellationResult:
    """A scheduled cancellation: other pending schedules of ``sub`` are cancelled, a pending
    ``cancellation`` schedule remembers the subscription's fields, the subscription takes the
    plan's changes; ``subscription.updated``."""
    pending = list_where_in(
        uow.subscription_schedules,
        "subscription_id",
        [sub.id],
        Filter("schedule_status", Op.IN, [ScheduleStatus.PENDING.value]),
    )
    withdrawn = {
        **ctx.touch(),
        "schedule_status": ScheduleStatus.CANCELLED,
        "cancelled_at": ctx.now,
        "run_at": None,
    }
    uow.subscription_schedules.update_many([(other, other.model_copy(update=withdrawn)) for other in pending])
    schedule = SubscriptionSchedule(
        id=ctx.ids.new("sched"),
        **ctx.stamp(),
        subscription_id=sub.id,
        schedule_type=ScheduleType.CANCELLATION,
        scheduled_at=plan.effective,
        configuration=plan.schedule_configuration or {},
    )
    uow.subscription_schedules.add(schedule)
    # A threshold subscription keeps its usage checks until then (auto_invoice_thresholds).
    scheduled = with_next_check(
        sub.model_copy(update={**plan.changes, **ctx.touch()}),
        ctx.now,
        ctx.settings.auto_invoice_check_interval,
    )
    saved = uow.subscriptions.update(scheduled, expected_version=sub.version)
    customer = uow.customers.find(saved.customer_id)
    notifications.notify(uow, ctx, "subscription.updated", saved, customer)
    return CancellationResult(
        subscription=saved,
        cancellation_type=plan.cancellation_type,
        effective_date=plan.effective,
        reason=data.reason,
        processed_at=ctx.now,
        schedule=schedule,
        message=_message(plan),
    )
