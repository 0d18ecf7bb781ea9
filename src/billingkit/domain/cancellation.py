"""Cancelling a subscription (reference notes §1.7): when a cancellation takes effect, what each
cancellation type writes, what a cancellation schedule remembers so that withdrawing it restores
the subscription, and the credit for the unused part of the period.

Pure: nothing here reads the clock or the store; the services call these rules and store the
result. Worked examples (UTC; monthly 30.00 FIXED ADVANCE, current period [1 Jun, 1 Jul), 30 days):

* ``immediate`` on 11 Jun 00:00 -> ``cancelled``; ``cancel_at`` = ``end_date`` = ``cancelled_at`` =
  11 Jun; open line items end on 11 Jun. With ``create_prorations`` the unused 20 days are credited:
  30.00 x 1,728,000 s / 2,592,000 s = 20.00.
* ``end_of_period`` -> still ``active``, ``cancel_at`` = 1 Jul, ``cancel_at_period_end``; the billing
  run of 1 Jul bills the period as usual (no ADVANCE charges for July) and cancels it at 1 Jul.
* ``scheduled_date`` 20 Jun -> still ``active``, ``cancel_at`` = ``end_date`` = 20 Jun, the current
  period is cut to [1 Jun, 20 Jun) so the billing run of 20 Jun bills that short period and cancels.
* withdrawing the ``scheduled_date`` schedule before 20 Jun -> ``cancel_at`` and ``end_date`` as they
  were (none), the period [1 Jun, 1 Jul) again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.money import ZERO, round_money
from billingkit.domain.periods import BillingPeriod, InvoiceCadence, Period
from billingkit.domain.pricing import PriceSpec
from billingkit.domain.proration import ProratedItem, prorate_credit
from billingkit.domain.resources import iso
from billingkit.domain.subscription_lifecycle import next_run_at
from billingkit.domain.subscriptions import (
    PauseStatus,
    Subscription,
    SubscriptionLineItem,
    SubscriptionStatus,
    SubscriptionType,
)
from billingkit.errors import InvalidOperation, ValidationError

__all__ = [
    "METADATA_KEYS",
    "CancelInvoicePolicy",
    "Cancellation",
    "CancellationType",
    "LineCredit",
    "check_single_period",
    "end_line_items",
    "ended_fields",
    "plan_cancellation",
    "restored_fields",
    "scheduled_end",
    "unused_time_credit",
]

_DAY = 86400


class CancellationType(StrEnum):
    IMMEDIATE = "immediate"
    END_OF_PERIOD = "end_of_period"
    SCHEDULED_DATE = "scheduled_date"


class CancelInvoicePolicy(StrEnum):
    """What an immediate cancellation bills: ``generate_invoice`` one invoice for the used part
    of the current period (its ARREAR charges), ``skip`` (the default) nothing."""

    GENERATE_INVOICE = "generate_invoice"
    SKIP = "skip"


#: The metadata every cancellation writes on the subscription (reference notes §1.7).
METADATA_KEYS = ("cancellation_type", "cancellation_reason", "effective_date")


def _instant(text: Any) -> datetime | None:
    return None if text is None else datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def scheduled_end(sub: Subscription) -> datetime | None:
    """When ``sub`` stops being billed: the earlier of its ``end_date`` and ``cancel_at`` (a
    scheduled cancellation), or ``None``. The billing run ends it there."""
    ends = [instant for instant in (sub.end_date, sub.cancel_at) if instant is not None]
    return min(ends) if ends else None


def end_line_items(lines: Iterable[SubscriptionLineItem], at: datetime) -> tuple[SubscriptionLineItem, ...]:
    """``lines`` with every one still open at ``at`` ending there (a line starting later ends at
    its own start: it was never charged). Lines that ended already keep their end; none is removed.

    Example: lines ending never, 30 Jun and 5 Jun, ended at 11 Jun -> 11 Jun, 11 Jun, 5 Jun.
    """
    ended = []
    for line in lines:
        if line.end_date is None or line.end_date > at:
            start = line.start_date
            line = line.model_copy(update={"end_date": at if start is None or start < at else start})
        ended.append(line)
    return tuple(ended)


def ended_fields(sub: Subscription, at: datetime) -> dict[str, Any]:
    """The fields of ``sub`` once it has ended at ``at`` (its end date reached or a scheduled
    cancellation fired): ``end_date`` = ``at``, its open line items ended there, and no pause
    running or scheduled (the pause rows are closed with it, ``subscription_termination``)."""
    return {
        "end_date": at,
        "line_items": end_line_items(sub.line_items, at),
        "pause_status": PauseStatus.NONE,
        "active_pause_id": None,
    }


def _refuse(sub: Subscription, cancellation_type: CancellationType) -> None:
    status = sub.subscription_status
    if status is SubscriptionStatus.DRAFT:
        raise InvalidOperation(f"subscription {sub.id} is a draft: a draft cannot be cancelled")
    if status is SubscriptionStatus.CANCELLED:
        raise InvalidOperation(f"subscription {sub.id} is already cancelled")
    if sub.subscription_type is SubscriptionType.INHERITED:
        raise InvalidOperation(
            f"subscription {sub.id} is inherited: it ends with its parent subscription, cancel that one"
        )
    if cancellation_type is not CancellationType.IMMEDIATE and sub.cancel_at is not None:
        raise InvalidOperation(
            f"subscription {sub.id} already has a cancellation scheduled at {iso(sub.cancel_at)}: "
            "cancel that schedule first"
        )


def _effective(
    sub: Subscription, cancellation_type: CancellationType, cancel_at: datetime | None, now: datetime
) -> datetime:
    """When the cancellation takes effect (reference notes §1.7), or a ``ValidationError`` on
    ``cancel_at``."""
    start = sub.current_period_start
    if cancellation_type is CancellationType.END_OF_PERIOD:
        if cancel_at is not None:
            raise ValidationError(
                "end_of_period cancels at current_period_end and takes no cancel_at; "
                "use scheduled_date for another date",
                field="cancel_at",
            )
        return sub.current_period_end
    if cancellation_type is CancellationType.SCHEDULED_DATE and cancel_at is None:
        raise ValidationError("a scheduled_date cancellation needs cancel_at", field="cancel_at")
    if cancel_at is None:
        return now
    if cancellation_type is CancellationType.IMMEDIATE and cancel_at > now:
        raise ValidationError(
            "an immediate cancellation takes a cancel_at in the past or now; use scheduled_date "
            "for a future date",
            field="cancel_at",
        )
    if cancel_at <= start:
        raise ValidationError(
            f"cancel_at must be after the current period's start ({iso(start)})", field="cancel_at"
        )
    if sub.end_date is not None and cancel_at >= sub.end_date:
        raise ValidationError(
            f"cancel_at must be before the subscription's end_date ({iso(sub.end_date)})", field="cancel_at"
        )
    return cancel_at


@dataclass(frozen=True, slots=True)
class Cancellation:
    """What a cancellation request does to a subscription: the type, when it takes effect, the
    subscription fields it writes now, and (scheduled types) the configuration of the
    ``cancellation`` schedule that remembers what it changed."""

    cancellation_type: CancellationType
    effective: datetime
    changes: dict[str, Any]
    schedule_configuration: dict[str, Any] | None

    @property
    def immediate(self) -> bool:
        return self.cancellation_type is CancellationType.IMMEDIATE


def plan_cancellation(
    sub: Subscription,
    *,
    cancellation_type: CancellationType,
    cancel_at: datetime | None,
    reason: str | None,
    now: datetime,
    renewal_notice: timedelta | None,
) -> Cancellation:
    """The cancellation of ``sub`` requested at ``now`` (see the module doc).

    | type | status | cancel_at | end_date | cancel_at_period_end | cancelled_at | current_period_end |
    |---|---|---|---|---|---|---|
    | immediate | cancelled | effective | effective | false | effective | unchanged |
    | end_of_period | unchanged | period end | unchanged | true | none yet | unchanged |
    | scheduled_date | unchanged | date | date | true | none yet | the date if earlier |

    Every type writes metadata ``cancellation_type``, ``cancellation_reason``, ``effective_date``.
    Refused with ``InvalidOperation``: drafts, cancelled and inherited subscriptions, and a
    scheduled type while a cancellation is scheduled already. ``ValidationError`` on ``cancel_at``:
    missing for ``scheduled_date``; given for ``end_of_period``; in the future for ``immediate``;
    not after the current period's start; not before ``end_date``.
    """
    _refuse(sub, cancellation_type)
    effective = _effective(sub, cancellation_type, cancel_at, now)
    metadata = {
        **sub.metadata,
        "cancellation_type": cancellation_type.value,
        "cancellation_reason": reason or "",
        "effective_date": iso(effective) or "",
    }
    if cancellation_type is CancellationType.IMMEDIATE:
        changes: dict[str, Any] = {
            "subscription_status": SubscriptionStatus.CANCELLED,
            "cancel_at": effective,
            "cancel_at_period_end": False,
            "cancelled_at": effective,
            "next_run_at": None,
            "metadata": metadata,
            **ended_fields(sub, effective),
        }
        return Cancellation(cancellation_type, effective, changes, None)
    period_end = sub.current_period_end
    changes = {"cancel_at": effective, "cancel_at_period_end": True, "metadata": metadata}
    if cancellation_type is CancellationType.SCHEDULED_DATE:
        changes["end_date"] = effective
        if effective < period_end:
            period_end = changes["current_period_end"] = effective
    changes["next_run_at"] = next_run_at(
        sub.subscription_status, sub.current_period_start, period_end, sub.renewal_notice_for, renewal_notice
    )
    configuration = {
        "cancellation_type": cancellation_type.value,
        "reason": reason,
        "effective_date": iso(effective),
        "original_cancel_at": iso(sub.cancel_at),
        "original_cancel_at_period_end": sub.cancel_at_period_end,
        "original_end_date": iso(sub.end_date),
        "original_current_period_start": iso(sub.current_period_start),
        "original_current_period_end": iso(sub.current_period_end),
        "original_metadata": {key: sub.metadata[key] for key in METADATA_KEYS if key in sub.metadata},
    }
    return Cancellation(cancellation_type, effective, changes, configuration)


def restored_fields(
    sub: Subscription, configuration: dict[str, Any], *, renewal_notice: timedelta | None
) -> dict[str, Any]:
    """The fields of ``sub`` once its pending cancellation schedule (``configuration`` as
    :func:`plan_cancellation` wrote it) is withdrawn: ``cancel_at``, ``cancel_at_period_end``,
    ``end_date`` and the cancellation metadata as they were. A current period cut at the
    cancellation date runs to its boundary again: the original end while it is still the period
    that was cut, else the next boundary of the schedule (cut at the restored ``end_date``).

    Example: period [1 Jun, 1 Jul) cut to [1 Jun, 20 Jun) by a cancellation on 20 Jun -> withdrawn
    on 15 Jun: [1 Jun, 1 Jul), no ``cancel_at``, no ``end_date``.
    """
    end_date = _instant(configuration.get("original_end_date"))
    metadata = {key: value for key, value in sub.metadata.items() if key not in METADATA_KEYS}
    metadata.update(configuration.get("original_metadata") or {})
    changes: dict[str, Any] = {
        "cancel_at": _instant(configuration.get("original_cancel_at")),
        "cancel_at_period_end": bool(configuration.get("original_cancel_at_period_end")),
        "end_date": end_date,
        "metadata": metadata,
    }
    period_end = sub.current_period_end
    effective = _instant(configuration.get("effective_date"))
    if configuration.get("cancellation_type") == CancellationType.SCHEDULED_DATE and period_end == effective:
        original_end = _instant(configuration.get("original_current_period_end"))
        if sub.current_period_start == _instant(configuration.get("original_current_period_start")):
            period_end = original_end or period_end
        else:
            period_end = sub.schedule().first_period(sub.current_period_start, end_date=end_date).end
    changes["current_period_end"] = period_end
    changes["next_run_at"] = next_run_at(
        sub.subscription_status, sub.current_period_start, period_end, sub.renewal_notice_for, renewal_notice
    )
    return changes


def check_single_period(sub: Subscription) -> None:
    """``create_prorations`` measures unused time against the subscription's period, so every
    recurring line must bill on it: a line with another billing period or count is a
    ``ValidationError`` on ``proration_behavior``."""
    own = (sub.billing_period, sub.billing_period_count)
    for line in sub.line_items:
        if line.billing_period is BillingPeriod.ONETIME:
            continue
        if (line.billing_period, line.billing_period_count) != own:
            raise ValidationError(
                f"create_prorations needs every line item on the subscription's billing period; line "
                f"{line.id} bills {line.billing_period.value} x{line.billing_period_count}",
                field="proration_behavior",
            )


@dataclass(frozen=True, slots=True)
class LineCredit:
    """The credit for one line's unused time (the reference's ``ProrationDetail``): money in
    the subscription's currency, rounded; ``original_amount`` is the line's full-period amount."""

    line_item_id: str
    price_id: str
    plan_name: str
    original_amount: Decimal
    credit_amount: Decimal
    proration_days: int
    description: str
    currency: str
    trace: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "line_item_id": self.line_item_id,
            "price_id": self.price_id,
            "plan_name": self.plan_name,
            "original_amount": str(self.original_amount),
            "credit_amount": str(self.credit_amount),
            "charge_amount": str(round_money(ZERO, self.currency)),
            "proration_days": self.proration_days,
            "description": self.description,
        }


def unused_time_credit(
    line: SubscriptionLineItem,
    price: PriceSpec,
    period: Period,
    at: datetime,
    *,
    billed: Decimal,
    credited: Decimal,
) -> LineCredit | None:
    """The credit for ``line``'s time in ``period`` after ``at`` (reference notes §1.7): only a FIXED
    ADVANCE line with time left; ``None`` otherwise. Credit = full-period amount x unused seconds /
    period seconds, rounded, capped at ``billed - credited`` (what this period's invoices charged
    for the line, less what was already given back). The unused time runs from ``at`` (or the
    line's later start) to the period end (or the line's earlier end).

    Example: 30.00 x 1 in [1 Jun, 1 Jul), ``at`` 11 Jun, 30.00 billed -> 20.00 (20 days).
    """
    if line.price_type is not PriceType.FIXED or line.invoice_cadence is not InvoiceCadence.ADVANCE:
        return None
    start = at if line.start_date is None else max(at, line.start_date)
    start = max(start, period.start)
    end = period.end if line.end_date is None else min(period.end, line.end_date)
    if start >= end:
        return None
    # The helper measures from its instant to the period end; a line ending earlier leaves
    # ``end - start`` unused, so the instant moves later by the part of the period after its end.
    measured_from = start + (period.end - end)
    line_credit = prorate_credit(
        ProratedItem(price, line.quantity, InvoiceCadence.ADVANCE),
        period,
        measured_from,
        amount_billed=billed,
        already_credited=credited,
    )
    if line_credit is None:  # pragma: no cover - ADVANCE always credits
        return None
    coefficient = line_credit.coefficient
    days = coefficient.remaining_seconds // _DAY
    name = line.display_name or line.price_id
    return LineCredit(
        line_item_id=line.id,
        price_id=line.price_id,
        plan_name=line.plan_display_name or "",
        original_amount=round_money(line_credit.full_amount, price.currency),
        credit_amount=line_credit.amount,
        proration_days=days,
        description=(
            f"credit for {days} unused of {coefficient.period_seconds // _DAY} days of {name} "
            f"({coefficient.remaining_seconds} of {coefficient.period_seconds} seconds)"
        ),
        currency=price.currency,
        trace=line_credit.trace(),
    )
