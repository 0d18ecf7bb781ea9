"""Credit grants granted: credit grant applications (CGAs) made, applied, skipped, deferred and
cancelled, and read.

A CGA is one grant's credits for one subscription and one period, unique per (grant,
subscription, period start) in storage. The periods, expiries and what a subscription's status
does are pure rules in :mod:`billingkit.domain.credit_grant_schedule`; this module stores them:

* :func:`start_grants`: when a subscription starts (created active or trialing, or a draft
  activated), the first CGA of each of its grants; the ones due at once are processed in the same
  unit of work, before the opening invoice is computed.
* :func:`apply_due_applications`: the due-work handler of ``credit_grant_applications`` (due field
  ``run_at``). Applying tops up the customer's PRE_PAID wallet in the subscription's currency (made
  if missing, ``allowed_price_types`` USAGE) with reason ``SUBSCRIPTION_CREDIT_GRANT``, the grant's
  priority, the period's expiry, and movement key ``credit_grant_application|<CGA id>``. An applied
  or skipped CGA makes the grant's next one (due at its period start).

Exactly once: the worker's claim, the CGA's ``version`` (saved with ``expected_version``), the
unique key of the next CGA and the unique movement key of the wallet credit each stop a second
runner from granting a period twice; a CGA no longer pending or due is left alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Annotated, ClassVar, cast

from billingkit.domain.access import Action
from billingkit.domain.catalog import CreditGrant, CreditGrantExpiryType
from billingkit.domain.credit_grant_applications import ApplicationStatus, CreditGrantApplication
from billingkit.domain.credit_grant_schedule import (
    Disposition,
    GrantPeriod,
    billing_cycle_end,
    decide,
    first_grant_period,
    grant_expiry,
    next_grant_period,
)
from billingkit.domain.pause_rules import status_at
from billingkit.domain.periods import Period
from billingkit.domain.queries import MAX_LIMIT, Filter, ListQuery, Op, Page, Sort
from billingkit.domain.resources import Record, Status
from billingkit.domain.subscriptions import Subscription, SubscriptionStatus
from billingkit.domain.wallets import (
    TransactionReason,
    TransactionReferenceType,
    WalletPriceType,
    movement_key,
)
from billingkit.errors import NotFound
from billingkit.ports import UnitOfWork
from billingkit.services import wallet_ledger
from billingkit.services.billing_runs import BatchResult
from billingkit.services.context import Context, DueRun
from billingkit.services.pause_records import pause_windows
from billingkit.services.search import Searches, SearchRequest

__all__ = [
    "DEFER_RETRY",
    "MOVEMENT_CAUSE",
    "CreditGrantApplicationSearch",
    "apply_due_applications",
    "customer_upcoming_grants",
    "list_credit_grant_applications",
    "start_grants",
    "subscription_upcoming_grants",
]

ENTITY = "subscription"
#: How long a CGA of a ``draft`` or ``incomplete`` subscription waits before it is tried again
#: (the reference's schedule runs every 15 minutes).
DEFER_RETRY = timedelta(minutes=15)
#: The ``cause`` of a CGA's wallet credit key: ``credit_grant_application|<CGA id>``.
MOVEMENT_CAUSE = "credit_grant_application"
_STARTED = frozenset(
    {
        SubscriptionStatus.ACTIVE,
        SubscriptionStatus.TRIALING,
        SubscriptionStatus.INCOMPLETE,
        SubscriptionStatus.PAUSED,
    }
)


class CreditGrantApplicationSearch(SearchRequest):
    """Filters on a list of CGAs (newest first by default)."""

    kind: ClassVar[str] = "credit_grant_applications"

    subscription_ids: Annotated[list[str] | None, Searches("subscription_id", Op.IN)] = None
    credit_grant_ids: Annotated[list[str] | None, Searches("credit_grant_id", Op.IN)] = None
    customer_id: Annotated[str | None, Searches("customer_id", Op.EQ)] = None
    application_status: Annotated[list[ApplicationStatus] | None, Searches("application_status", Op.IN)] = (
        None
    )


# -- making CGAs ---------------------------------------------------------------------------------


def _new_application(
    ctx: Context, grant: CreditGrant, sub: Subscription, period: GrantPeriod
) -> CreditGrantApplication:
    cga_id = ctx.ids.new("cga")
    return CreditGrantApplication(
        id=cga_id,
        **ctx.stamp(),
        credit_grant_id=grant.id,
        subscription_id=sub.id,
        customer_id=sub.customer_id,
        scheduled_for=period.start,
        run_at=period.start,
        period_start=period.start,
        period_end=period.end,
        application_reason=period.reason,
        credits=grant.credits,
        idempotency_key=movement_key(MOVEMENT_CAUSE, cga_id),
    )


def _next_application(
    ctx: Context, grant: CreditGrant, sub: Subscription, done: CreditGrantApplication
) -> CreditGrantApplication | None:
    period = next_grant_period(
        grant,
        done.period_start,
        subscription_start=sub.start_date,
        subscription_end=sub.end_date,
        timezone=sub.timezone,
    )
    return None if period is None else _new_application(ctx, grant, sub, period)


def _expiry(grant: CreditGrant, cga: CreditGrantApplication, sub: Subscription) -> datetime | None:
    """When the credits of ``cga`` expire (a ``BILLING_CYCLE`` grant: with ``sub``'s period)."""
    cycle_end = None
    if grant.expiration_type is CreditGrantExpiryType.BILLING_CYCLE:
        cycle_end = billing_cycle_end(
            sub.schedule(),
            cga.period_start,
            current=Period(sub.current_period_start, sub.current_period_end),
            end_date=sub.end_date,
        )
    return grant_expiry(grant, cga.period_start, cycle_end=cycle_end)


def _process(
    uow: UnitOfWork, ctx: Context, cga: CreditGrantApplication, grant: CreditGrant, sub: Subscription
) -> tuple[CreditGrantApplication, CreditGrantApplication | None]:
    """``cga`` (due) carried out on ``sub`` as it stands: the CGA as it is to be saved, and the
    grant's next CGA when this one was applied or skipped."""
    expiry = _expiry(grant, cga, sub)
    decision = decide(sub.subscription_status, expiry, ctx.now)
    changes: dict[str, object] = {
        **ctx.touch(),
        "subscription_status_at_application": sub.subscription_status.value,
        "failure_reason": decision.reason,
        "run_at": None,
    }
    if decision.disposition is Disposition.DEFER:
        changes.update(run_at=ctx.now + DEFER_RETRY, retry_count=cga.retry_count + 1)
        return cga.model_copy(update=changes), None
    if decision.disposition is Disposition.CANCEL:
        changes["application_status"] = ApplicationStatus.CANCELLED
        return cga.model_copy(update=changes), None
    if decision.disposition is Disposition.SKIP:
        changes["application_status"] = ApplicationStatus.SKIPPED
    else:
        wallet = wallet_ledger.prepaid_wallet(
            uow,
            ctx,
            customer_id=sub.customer_id,
            currency=sub.currency,
            allowed_price_types=(WalletPriceType.USAGE,),
            conversion_rate=grant.conversion_rate or Decimal(1),
        )
        movement = wallet_ledger.credit(
            uow,
            ctx,
            wallet,
            credits=cga.credits,
            reason=TransactionReason.SUBSCRIPTION_CREDIT_GRANT,
            key=cga.idempotency_key,
            expiry_date=expiry,
            priority=grant.priority,
            reference_type=TransactionReferenceType.EXTERNAL,
            reference_id=cga.id,
            description=grant.name,
            metadata={
                "credit_grant_id": grant.id,
                "subscription_id": sub.id,
                "credit_grant_application_id": cga.id,
            },
        )
        changes.update(
            application_status=ApplicationStatus.APPLIED,
            applied_at=ctx.now,
            wallet_transaction_id=movement.transactions[0].id,
        )
    return cga.model_copy(update=changes), _next_application(ctx, grant, sub, cga)


def _due(cga: CreditGrantApplication, ctx: Context) -> bool:
    return (
        cga.application_status is ApplicationStatus.PENDING
        and cga.run_at is not None
        and cga.run_at <= ctx.now
    )


def start_grants(
    uow: UnitOfWork, ctx: Context, sub: Subscription, grants: Iterable[CreditGrant]
) -> list[CreditGrantApplication]:
    """Make the first CGA of each of ``grants`` for ``sub`` (which has started: a draft or a
    cancelled subscription gets none) and carry out at once those due at ``ctx.now``, with the
    periods after them that are due too (a start in the past catches up). Writes the CGAs (and
    any wallet credits) in ``uow``; returns every CGA written, in order. ``sub`` need not be stored
    yet: the subscription create calls this before its opening invoice."""
    if sub.subscription_status not in _STARTED:
        return []
    written: list[CreditGrantApplication] = []
    for grant in grants:
        period = first_grant_period(
            grant, subscription_start=sub.start_date, subscription_end=sub.end_date, timezone=sub.timezone
        )
        cga = None if period is None else _new_application(ctx, grant, sub, period)
        while cga is not None and _due(cga, ctx):
            done, following = _process(uow, ctx, cga, grant, sub)
            written.append(done)
            # A deferred CGA (still pending, due later) is stored as it is and has no successor yet.
            cga = None if done.application_status is ApplicationStatus.PENDING else following
        if cga is not None:
            written.append(cga)
    uow.credit_grant_applications.add_many(written)
    return written


# -- the due-work handler ------------------------------------------------------------------------


def _apply_scope(uow: UnitOfWork, ctx: Context, cgas: Sequence[CreditGrantApplication]) -> int:
    """Carry out a scope's due CGAs; returns how many were acted on."""
    grants = {g.id: g for g in uow.credit_grants.find_many({c.credit_grant_id for c in cgas})}
    subs = {s.id: s for s in uow.subscriptions.find_many({c.subscription_id for c in cgas})}
    paused_over = pause_windows(uow, subs)  # a CGA due while its subscription was paused is skipped
    changes: list[tuple[CreditGrantApplication, CreditGrantApplication]] = []
    created: list[CreditGrantApplication] = []
    for cga in sorted(cgas, key=lambda c: (c.period_start, c.id)):
        grant = grants.get(cga.credit_grant_id)
        sub = subs.get(cga.subscription_id)
        if (
            grant is None
            or grant.status is not Status.PUBLISHED
            or sub is None
            or sub.status is not Status.PUBLISHED
        ):
            gone = "credit grant" if grant is None or grant.status is not Status.PUBLISHED else "subscription"
            cancelled = cga.model_copy(
                update={
                    **ctx.touch(),
                    "application_status": ApplicationStatus.CANCELLED,
                    "failure_reason": f"{gone} deleted",
                    "run_at": None,
                }
            )
            changes.append((cga, cancelled))
            continue
        status = status_at(sub, paused_over.get(sub.id, ()), cga.scheduled_for)
        done, following = _process(
            uow, ctx, cga, grant, sub.model_copy(update={"subscription_status": status})
        )
        changes.append((cga, done))
        if following is not None:
            created.append(following)
    uow.credit_grant_applications.update_many(changes)
    uow.credit_grant_applications.add_many(created)
    return len(changes)


def apply_due_applications(uow: UnitOfWork, items: Sequence[Record], run: DueRun) -> BatchResult:
    """The due-work handler of CGAs: carry out the claimed ``items`` (any scopes) that are still
    pending and due at ``run.now``, writing in ``uow`` (the runner commits). Each is applied,
    skipped, deferred or cancelled by its subscription's status (see the module doc); an applied
    or skipped one makes the grant's next CGA. A CGA whose grant or subscription was deleted is
    cancelled."""
    result = BatchResult()
    by_scope: dict[tuple[str, str], list[CreditGrantApplication]] = defaultdict(list)
    for cga in cast("Sequence[CreditGrantApplication]", items):
        if (
            cga.application_status is ApplicationStatus.PENDING
            and cga.run_at is not None
            and cga.run_at <= run.now
        ):
            by_scope[(cga.tenant_id, cga.environment_id)].append(cga)
    for (tenant_id, environment_id), group in by_scope.items():
        ctx = run.context(tenant_id, environment_id)
        _apply_scope(uow.for_scope(tenant_id, environment_id), ctx, group)
        result.report.notification_count += len(ctx.recorded)
        result.recorded += ctx.recorded
    return result


# -- reads ---------------------------------------------------------------------------------------


def list_credit_grant_applications(
    uow: UnitOfWork, ctx: Context, *, search: CreditGrantApplicationSearch
) -> Page[CreditGrantApplication]:
    """A page of CGAs matching the filters (newest first unless ``sort``/``order`` say else)."""
    ctx.require(ENTITY, Action.READ)
    return uow.credit_grant_applications.list(search.to_query())


def _pending(uow: UnitOfWork, field: str, value: str) -> list[CreditGrantApplication]:
    """Every pending CGA whose ``field`` is ``value``, soonest first."""
    filters = (
        Filter(field, Op.EQ, value),
        Filter("application_status", Op.IN, [ApplicationStatus.PENDING.value]),
    )
    sort = (Sort("scheduled_for", descending=False), Sort("id", descending=False))
    found: list[CreditGrantApplication] = []
    while True:
        page = uow.credit_grant_applications.list(
            ListQuery(filters=filters, sort=sort, limit=MAX_LIMIT, offset=len(found))
        )
        found += page.items
        if not page.has_more:
            return found


def subscription_upcoming_grants(
    uow: UnitOfWork, ctx: Context, *, subscription_id: str
) -> list[CreditGrantApplication]:
    """The subscription's pending CGAs (credits still to come), soonest first; ``NotFound`` for
    an unknown subscription."""
    ctx.require(ENTITY, Action.READ)
    sub = uow.subscriptions.find(subscription_id)
    if sub is None or sub.status is not Status.PUBLISHED:
        raise NotFound(f"subscription {subscription_id} not found")
    return _pending(uow, "subscription_id", sub.id)


def customer_upcoming_grants(
    uow: UnitOfWork, ctx: Context, *, customer_id: str
) -> list[CreditGrantApplication]:
    """The customer's pending CGAs over all its subscriptions, soonest first; ``NotFound`` for an
    unknown customer."""
    ctx.require(ENTITY, Action.READ)
    customer = uow.customers.find(customer_id)
    if customer is None or customer.status is not Status.PUBLISHED:
        raise NotFound(f"customer {customer_id} not found")
    return _pending(uow, "customer_id", customer.id)
