"""Pausing and resuming subscriptions (``POST /subscriptions/{id}/pause`` and ``/resume``,
reference notes §1.6, decision D6), the worker's part of it, and a subscription's pauses.

* :func:`pause_subscription`: an ``active`` subscription is paused now (``immediate``), at
  ``pause_start`` (``scheduled``) or at its current period's end (``period_end``), until
  ``pause_end``, for ``pause_days``, or until resumed. A pause row
  (:class:`~billingkit.domain.subscription_pauses.SubscriptionPause`) records it; the subscription
  carries ``pause_status`` and ``active_pause_id``.
* :func:`resume_subscription`: a ``paused`` subscription is resumed now (its period stretched by
  the paused time, :mod:`billingkit.domain.pause_rules`); a scheduled pause that has not started
  is withdrawn (``cancelled``).
* :func:`run_due_pauses`: the due-work handler of ``subscription_pauses`` (due field ``run_at``),
  taken before the billing run: it starts scheduled pauses at ``pause_start`` and resumes active
  ones at ``pause_end`` (``resume_mode`` ``auto``; or at the subscription's ``end_date``).

A pause takes effect only after everything due before it is billed: pausing at an instant first
bills what fell due on the subscription up to that instant (the billing run's own code,
:func:`~billingkit.services.billing_runs.bill_due_subscriptions`), so a ``period_end`` pause
starts once the period it follows has been invoiced. Pausing and resuming themselves invoice and
credit nothing. ``dry_run`` carries the request out in the unit of work, answers what it did, and
rolls everything back: nothing is written and no notification is sent.

Notifications: ``subscription.updated`` with every change of the subscription;
``subscription.paused`` when a pause takes effect, ``subscription.resumed`` when it ends.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, Any, Self, cast

from pydantic import Field, model_validator

from billingkit.domain.access import Action
from billingkit.domain.auto_invoice_thresholds import with_next_check
from billingkit.domain.pause_rules import (
    BillingImpact,
    check_pausable,
    check_pause_request,
    interrupted_period,
    pause_window,
    paused,
    resume_due_at,
    resumed,
    scheduled,
    withdrawn,
)
from billingkit.domain.periods import Period
from billingkit.domain.resources import Record, Status
from billingkit.domain.subscription_pauses import PauseMode, ResumeMode, SubscriptionPause
from billingkit.domain.subscriptions import PauseStatus, ProrationBehavior, Subscription, SubscriptionStatus
from billingkit.domain.validation import InputModel, Metadata, UtcDatetime
from billingkit.errors import InvalidOperation, ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services import notifications
from billingkit.services.billing_runs import BatchResult, bill_due_subscriptions
from billingkit.services.context import Context, DueRun
from billingkit.services.pause_records import OPEN_PAUSE_STATUSES, close_pause
from billingkit.services.records import get_live, list_where_in

__all__ = [
    "MAX_PAUSE_DAYS",
    "PauseRequest",
    "PauseResult",
    "ResumeRequest",
    "end_pause_for_cancellation",
    "list_pauses",
    "pause_subscription",
    "resume_subscription",
    "run_due_pauses",
    "v2_pauses",
]

ENTITY = "subscription"
LABEL = "subscription"
#: Longest pause ``pause_days`` may ask for (ten years).
MAX_PAUSE_DAYS = 3650


def _no_proration(value: ProrationBehavior | None) -> None:
    # The SDK's pause and resume bodies carry proration_behavior; pausing here prorates nothing.
    if value is ProrationBehavior.CREATE_PRORATIONS:
        raise ValidationError(
            "pausing and resuming prorate nothing: the paused time is given back by stretching the "
            "billing period; proration_behavior may only be none",
            field="proration_behavior",
        )


class PauseRequest(InputModel):
    """Pause a subscription: ``pause_mode`` (``immediate`` when omitted, as the SDK's body has no
    mode), ``pause_start`` (``scheduled`` only, in the future), ``pause_end`` or ``pause_days``
    (neither: paused until resumed), ``reason`` (at most 255 characters), ``metadata`` (kept on the
    pause), ``dry_run`` (answer what would happen, write nothing). ``proration_behavior`` may only
    be ``none``."""

    pause_mode: PauseMode = PauseMode.IMMEDIATE
    pause_start: UtcDatetime | None = None
    pause_end: UtcDatetime | None = None
    pause_days: Annotated[int, Field(ge=1, le=MAX_PAUSE_DAYS)] | None = None
    reason: Annotated[str, Field(max_length=255)] | None = None
    dry_run: bool = False
    metadata: Metadata = {}
    proration_behavior: ProrationBehavior | None = None

    @model_validator(mode="after")
    def _fields_agree(self) -> Self:
        check_pause_request(
            mode=self.pause_mode,
            pause_start=self.pause_start,
            pause_end=self.pause_end,
            pause_days=self.pause_days,
        )
        _no_proration(self.proration_behavior)
        return self


class ResumeRequest(InputModel):
    """Resume a paused subscription now (``resume_mode`` ``immediate``, the default: ``auto`` is
    the worker's, at ``pause_end``), or withdraw its scheduled pause. ``metadata`` is merged into
    the pause's; ``dry_run`` writes nothing. ``proration_behavior`` may only be ``none``."""

    resume_mode: ResumeMode = ResumeMode.IMMEDIATE
    dry_run: bool = False
    metadata: Metadata = {}
    proration_behavior: ProrationBehavior | None = None

    @model_validator(mode="after")
    def _fields_agree(self) -> Self:
        if self.resume_mode is not ResumeMode.IMMEDIATE:
            raise ValidationError(
                f"resume_mode {self.resume_mode.value} cannot be asked for: a resume takes effect now "
                "(immediate); to end a pause later give it a pause_end, which the worker resumes at "
                "(auto)",
                field="resume_mode",
            )
        _no_proration(self.proration_behavior)
        return self


@dataclass(frozen=True, slots=True)
class PauseResult:
    """The answer of a pause or resume: the subscription and the pause as they are afterwards
    (as they would be, with ``dry_run``), and what the pause does to billing."""

    subscription: Subscription
    pause: SubscriptionPause
    billing_impact: BillingImpact
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "subscription": self.subscription.to_dict(),
            "pause": self.pause.to_dict(),
            "billing_impact": self.billing_impact.to_dict(),
            "dry_run": self.dry_run,
        }


# -- shared steps ---------------------------------------------------------------------------------


def _run_of(ctx: Context) -> DueRun:
    return DueRun(now=ctx.now, ids=ctx.ids, settings=ctx.settings, providers=ctx.providers)


def _bill_until(
    uow: UnitOfWork, sub: Subscription, at: datetime, run: DueRun, into: BatchResult
) -> Subscription:
    """``sub`` after billing what fell due on it up to ``at`` (the billing run's own step, as if
    it had run at ``at``); its invoices and notifications are added to ``into``. A subscription
    that cannot be billed stops the pause: ``InvalidOperation`` naming why."""
    if sub.next_run_at is None or sub.next_run_at > at:
        return sub
    billed = bill_due_subscriptions(uow, [sub], replace(run, now=at))
    if billed.report.failures:
        _, code, message = billed.report.failures[0]
        raise InvalidOperation(
            f"subscription {sub.id} has billing due that failed ({code}: {message}); it is not paused",
            details={"reason": code},
        )
    into.report.add(billed.report)
    into.recorded += billed.recorded
    return uow.subscriptions.get(sub.id)


def _save(
    uow: UnitOfWork, ctx: Context, sub: Subscription, changed: Subscription, events: Sequence[str]
) -> Subscription:
    saved = uow.subscriptions.update(changed.model_copy(update=ctx.touch()), expected_version=sub.version)
    if events:
        customer = uow.customers.find(saved.customer_id)
        for event in events:
            notifications.notify(uow, ctx, event, saved, customer)
    return saved


def _started(
    sub: Subscription, pause: SubscriptionPause, ctx: Context
) -> tuple[Subscription, SubscriptionPause]:
    """``pause`` (scheduled, due or new) taking effect on ``sub`` (active, billed up to the pause
    start), neither saved: the pause records the period it interrupts and when the worker ends
    it; the subscription is paused."""
    period = interrupted_period(sub, pause.pause_start)
    started = pause.model_copy(
        update={
            **ctx.touch(),
            "pause_status": PauseStatus.ACTIVE,
            "original_period_start": period.start,
            "original_period_end": period.end,
            "run_at": resume_due_at(pause.pause_end, sub.end_date),
        }
    )
    return paused(sub, started), started


#: What a pause taking effect notifies.
_PAUSED: tuple[str, ...] = ("subscription.updated", "subscription.paused")


def _resume(
    uow: UnitOfWork,
    ctx: Context,
    sub: Subscription,
    pause: SubscriptionPause,
    *,
    at: datetime,
    mode: ResumeMode,
    metadata: dict[str, str],
) -> tuple[Subscription, SubscriptionPause]:
    """``sub`` resumed at ``at`` from its active ``pause``, and the completed pause."""
    after = resumed(sub, pause, at=at, renewal_notice=ctx.settings.renewal_notice)
    # An auto-invoice threshold's checks, stopped while paused, start again.
    after = with_next_check(after, ctx.now, ctx.settings.auto_invoice_check_interval)
    done = pause.model_copy(
        update={
            **ctx.touch(),
            "pause_status": PauseStatus.COMPLETED,
            "resume_mode": mode,
            "resumed_at": at,
            "run_at": None,
            "metadata": {**pause.metadata, **metadata},
        }
    )
    saved = _save(uow, ctx, sub, after, ("subscription.updated", "subscription.resumed"))
    return saved, done


def _open_pause(uow: UnitOfWork, sub: Subscription) -> SubscriptionPause | None:
    """The pause ``sub`` names as running or scheduled, if it is one."""
    if sub.active_pause_id is None:
        return None
    pause = uow.subscription_pauses.find(sub.active_pause_id)
    if pause is None or pause.status is not Status.PUBLISHED or pause.pause_status not in OPEN_PAUSE_STATUSES:
        return None
    return pause


def _discard(uow: UnitOfWork, ctx: Context) -> None:
    """A dry run: everything the request wrote is rolled back and nothing is notified (the
    caller's commit then commits nothing)."""
    uow.rollback()
    ctx.recorded.clear()


# -- the operations -------------------------------------------------------------------------------


def pause_subscription(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: PauseRequest
) -> PauseResult:
    """Pause an ``active`` subscription (see the module doc and
    :func:`~billingkit.domain.pause_rules.pause_window` for the window).

    Raises ``NotFound``; ``InvalidOperation`` when the subscription is not active, already has a
    pause running or scheduled, has a cancellation pending, or ends before the pause would start;
    ``ValidationError`` naming ``pause_start``, ``pause_end`` or ``pause_days``. Nothing is
    written then.
    """
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    check_pausable(sub)
    billing = BatchResult()
    sub = _bill_until(uow, sub, ctx.now, _run_of(ctx), billing)
    ctx.recorded.extend(billing.recorded)
    check_pausable(sub)  # the billing may have ended it
    window = pause_window(
        mode=data.pause_mode,
        now=ctx.now,
        current_period_end=sub.current_period_end,
        pause_start=data.pause_start,
        pause_end=data.pause_end,
        pause_days=data.pause_days,
        end_date=sub.end_date,
    )
    period = interrupted_period(sub, window.start)
    pause = SubscriptionPause(
        id=ctx.ids.new("pause"),
        **ctx.stamp(),
        subscription_id=sub.id,
        pause_status=PauseStatus.SCHEDULED,
        pause_mode=data.pause_mode,
        pause_start=window.start,
        pause_end=window.end,
        original_period_start=period.start,
        original_period_end=period.end,
        reason=data.reason,
        metadata=data.metadata,
        run_at=window.start,
    )
    if data.pause_mode is PauseMode.IMMEDIATE:
        after, pause = _started(sub, pause, ctx)
        events = _PAUSED
    else:
        after, events = scheduled(sub, pause), ("subscription.updated",)
    uow.subscription_pauses.add(pause)
    saved = _save(uow, ctx, sub, after, events)
    impact = BillingImpact.of(saved, period, pause_start=window.start, pause_end=window.end)
    if data.dry_run:
        _discard(uow, ctx)
    return PauseResult(saved, pause, impact, data.dry_run)


def resume_subscription(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str, data: ResumeRequest
) -> PauseResult:
    """Resume a ``paused`` subscription now: its pause ``completed`` (``resumed_at`` now), the
    subscription ``active`` with its current period stretched by the paused time; or withdraw a
    pause that is scheduled and has not started (``cancelled``; nothing else changes).

    Raises ``NotFound``; ``InvalidOperation`` when the subscription is neither paused nor has a
    scheduled pause (nothing is written then).
    """
    ctx.require(ENTITY, Action.WRITE)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    opened = _open_pause(uow, sub)
    if opened is None or (
        opened.pause_status is PauseStatus.ACTIVE and sub.subscription_status is not SubscriptionStatus.PAUSED
    ):
        raise InvalidOperation(
            f"subscription {sub.id} is {sub.subscription_status.value} with pause status "
            f"{sub.pause_status.value}: only a paused subscription or one with a scheduled pause "
            "can be resumed"
        )
    pause = opened
    if pause.pause_status is PauseStatus.ACTIVE:
        period = Period(sub.current_period_start, sub.current_period_end)
        saved, pause = _resume(
            uow, ctx, sub, pause, at=ctx.now, mode=data.resume_mode, metadata=data.metadata
        )
        impact = BillingImpact.of(sub, period, pause_start=pause.pause_start, pause_end=ctx.now)
    else:
        impact = BillingImpact.of(
            sub,
            interrupted_period(sub, pause.pause_start),
            pause_start=pause.pause_start,
            pause_end=pause.pause_start,
        )
        pause = close_pause(ctx, pause, PauseStatus.CANCELLED).model_copy(
            update={"resume_mode": data.resume_mode, "metadata": {**pause.metadata, **data.metadata}}
        )
        saved = _save(uow, ctx, sub, withdrawn(sub), ("subscription.updated",))
    pause = uow.subscription_pauses.update(pause, expected_version=opened.version)
    if data.dry_run:
        _discard(uow, ctx)
    return PauseResult(saved, pause, impact, data.dry_run)


def list_pauses(uow: UnitOfWork, ctx: Context, *, subscription_id: str) -> list[SubscriptionPause]:
    """Every pause of the subscription, newest first; ``NotFound`` for an unknown subscription."""
    ctx.require(ENTITY, Action.READ)
    sub = get_live(uow.subscriptions, LABEL, subscription_id)
    return _pauses_of(uow, sub)


def _pauses_of(uow: UnitOfWork, sub: Subscription) -> list[SubscriptionPause]:
    found = list_where_in(uow.subscription_pauses, "subscription_id", [sub.id])
    return sorted(found, key=lambda p: (p.created_at, p.id), reverse=True)


def v2_pauses(uow: UnitOfWork, sub: Subscription) -> tuple[SubscriptionPause, ...] | None:
    """The ``pauses`` of the v2 read: every pause of ``sub`` (newest first) while it has a pause
    running or scheduled (the spec: "pauses appears when the subscription has a pause status");
    ``None`` (left out) otherwise."""
    if sub.pause_status is PauseStatus.NONE:
        return None
    return tuple(_pauses_of(uow, sub))


# -- the due-work handler -------------------------------------------------------------------------


def _due(pause: SubscriptionPause, now: datetime) -> bool:
    return pause.pause_status in OPEN_PAUSE_STATUSES and pause.run_at is not None and pause.run_at <= now


def _carry_out(
    uow: UnitOfWork, ctx: Context, run: DueRun, pause: SubscriptionPause, result: BatchResult
) -> None:
    """Everything due on ``pause`` at ``run.now``, in order: its start (after billing its
    subscription up to the pause start), then its end when that is due too."""
    stored = pause
    found = uow.subscriptions.find(pause.subscription_id)
    sub = found if found is not None and found.status is Status.PUBLISHED else None
    while _due(pause, run.now):
        at = cast("datetime", pause.run_at)
        if sub is None or sub.active_pause_id != pause.id:
            # The subscription is gone or moved on: the pause has nothing left to act on.
            started = pause.pause_status is PauseStatus.ACTIVE
            pause = close_pause(ctx, pause, PauseStatus.COMPLETED if started else PauseStatus.CANCELLED)
        elif pause.pause_status is PauseStatus.SCHEDULED:
            sub = _bill_until(uow, sub, at, run, result)
            if sub.subscription_status is SubscriptionStatus.ACTIVE:
                after, pause = _started(sub, pause, ctx)
                sub = _save(uow, ctx, sub, after, _PAUSED)
            else:  # the billing up to the pause start ended the subscription
                pause = close_pause(ctx, pause, PauseStatus.CANCELLED)
                sub = _save(uow, ctx, sub, withdrawn(sub), ("subscription.updated",))
        elif sub.subscription_status is SubscriptionStatus.PAUSED:
            sub, pause = _resume(uow, ctx, sub, pause, at=at, mode=ResumeMode.AUTO, metadata={})
        else:
            pause = close_pause(ctx, pause, PauseStatus.COMPLETED)
    if pause is not stored:
        uow.subscription_pauses.update(pause, expected_version=stored.version)


def run_due_pauses(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of pauses: start the claimed scheduled pauses whose ``pause_start``
    has come and resume the active ones whose ``pause_end`` (or subscription ``end_date``) has
    come, writing in ``uow`` (the runner commits). Taken before the billing run, so a subscription
    resumed here is billed in the same run when its stretched period has ended. A pause that is no
    longer due (a retry re-reads it) is left alone; one whose subscription ended or moved on is
    closed (``cancelled`` if it never started, else ``completed``)."""
    result = BatchResult()
    by_scope: dict[tuple[str, str], list[SubscriptionPause]] = defaultdict(list)
    for pause in cast("Sequence[SubscriptionPause]", items):
        if _due(pause, run.now):
            by_scope[(pause.tenant_id, pause.environment_id)].append(pause)
    for (tenant_id, environment_id), group in by_scope.items():
        ctx = run.context(tenant_id, environment_id)
        scoped = uow.for_scope(tenant_id, environment_id)
        for pause in sorted(group, key=lambda p: (p.run_at, p.id)):
            _carry_out(scoped, ctx, run, pause, result)
        result.report.notification_count += len(ctx.recorded)
        result.recorded += ctx.recorded
    return result


def end_pause_for_cancellation(
    uow: UnitOfWork, ctx: Context, sub: Subscription, *, immediate: bool
) -> Subscription:
    """``sub`` ready to be cancelled: a ``paused`` subscription is first resumed now (its pause
    ``completed``, its period stretched by the paused time, ``subscription.resumed``), so an
    immediate cancellation bills and credits the period as it really stands. A scheduled
    cancellation of a paused subscription is refused (``InvalidOperation``): its period has no
    end while paused; resume it first, or cancel it now. Any other subscription is ``sub``."""
    if sub.subscription_status is not SubscriptionStatus.PAUSED:
        return sub
    if not immediate:
        raise InvalidOperation(
            f"subscription {sub.id} is paused: its period ends only once it is resumed; resume it "
            "first, or cancel it immediately"
        )
    pause = _open_pause(uow, sub)
    if pause is None or pause.pause_status is not PauseStatus.ACTIVE:
        return sub
    saved, done = _resume(uow, ctx, sub, pause, at=ctx.now, mode=ResumeMode.IMMEDIATE, metadata={})
    uow.subscription_pauses.update(done, expected_version=pause.version)
    return saved
