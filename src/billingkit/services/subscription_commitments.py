"""Commitments on subscriptions, from the create request to the billing core.

* Subscription level: ``commitment_amount``, ``overage_factor`` (>= 1), ``enable_true_up`` and
  ``commitment_duration``. A duration longer than the billing period makes the commitment
  cumulative: it must be a whole number of billing periods (:func:`commitment_periods`), its window
  is ``[start, start + duration)`` repeated from the subscription's start
  (:func:`commitment_window`), and the true-up is due only on the invoice whose period end reaches
  the window's end.
* Line level: ``line_item_commitments`` keyed by price id (:class:`LineItemCommitmentConfig`),
  stored on the subscription's USAGE line items' ``commitment_*`` fields
  (:func:`commit_line_items`) and turned back into the core's
  :class:`~billingkit.domain.commitments.LineCommitment` at billing (:func:`line_commitment`).
* Prior usage of a cumulative window comes from the subscription's stored invoices
  (:func:`load_commitment_usage`): each committed line's ``commitment_info`` gives the usage it
  billed, ``utilized + overage / overage_factor``; the billing core is handed the sum of the lines
  of the window's earlier periods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from billingkit.domain.catalog import Meter
from billingkit.domain.catalog.prices import PriceType
from billingkit.domain.commitments import LineCommitment, TimeBucket, TimeOfDay
from billingkit.domain.invoice_lines import CommitmentInfo
from billingkit.domain.invoices import Invoice, InvoiceStatus
from billingkit.domain.money import ZERO, parse_decimal
from billingkit.domain.periods import BillingCycle, BillingPeriod, BillingSchedule, Period, period_multiple
from billingkit.domain.queries import Filter, Op
from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.domain.validation import InputModel
from billingkit.errors import ValidationError
from billingkit.ports import UnitOfWork
from billingkit.services.records import list_where_in

__all__ = [
    "CommitmentTimeBucketConfig",
    "CommittedUsage",
    "LineItemCommitmentConfig",
    "check_line_item_commitments",
    "commit_line_items",
    "commitment_periods",
    "commitment_window",
    "committed_usage",
    "has_cumulative_commitment",
    "line_commitment",
    "load_commitment_usage",
    "wire_commitment_info",
]

_ONE = Decimal(1)


def _reference_number(value: Any) -> Any:
    """A decimal from a string, an integer or a JSON number.

    The reference types these fields ``number`` and its SDK sends floats, so a float is read
    through its shortest decimal form (``1.5`` -> ``Decimal("1.5")``): exactly what was written.
    """
    if isinstance(value, float):
        value = repr(value)
    try:
        return parse_decimal(value, field="value")
    except ValidationError as exc:
        raise ValueError(exc.message.removeprefix("value ")) from None


#: A decimal given as a string, an integer or a JSON number (see :func:`_reference_number`).
ReferenceNumber = Annotated[Decimal, BeforeValidator(_reference_number)]


class TimeOfDayConfig(InputModel):
    """A wall-clock time, UTC: ``hour`` 0-24 (24 only as an end), ``minute`` 0-59."""

    hour: Annotated[int, Field(ge=0, le=24)]
    minute: Annotated[int, Field(ge=0, le=59)] = 0


class CommitmentTimeBucketConfig(InputModel):
    """One ``commitment_time_buckets`` entry: a time-of-day window ``[start, end)`` with its own
    commitment, priced with the line's price (the reference's per-bucket ``price`` is not taken)."""

    id: Annotated[str, Field(max_length=255)] = ""
    commitment_type: Literal["amount", "quantity"]
    commitment_value: Annotated[ReferenceNumber, Field(ge=0)]
    overage_factor: Annotated[ReferenceNumber, Field(ge=1)] = _ONE
    true_up_enabled: bool = False
    start: TimeOfDayConfig
    end: TimeOfDayConfig


class LineItemCommitmentConfig(InputModel):
    """The reference's ``LineItemCommitmentConfig``: a commitment on one USAGE line item.

    ``commitment_type`` ``amount`` (``commitment_amount``, money) or ``quantity``
    (``commitment_quantity``, units priced through the line's price); ``overage_factor`` >= 1 on
    usage beyond it; ``enable_true_up`` bills the shortfall; ``is_window_commitment`` applies it
    per meter bucket (bucketed meters only), optionally per time of day
    (``commitment_time_buckets``, which need it); ``commitment_duration`` longer than the billing
    period makes it cumulative.
    """

    commitment_type: Literal["amount", "quantity"] = "amount"
    commitment_amount: Annotated[ReferenceNumber, Field(ge=0)] | None = None
    commitment_quantity: Annotated[ReferenceNumber, Field(ge=0)] | None = None
    overage_factor: Annotated[ReferenceNumber, Field(ge=1)] = _ONE
    enable_true_up: bool = False
    is_window_commitment: bool = False
    commitment_duration: BillingPeriod | None = None
    commitment_time_buckets: list[CommitmentTimeBucketConfig] = []


# The core's field names -> the request's, to name a bad value as the caller wrote it.
_REQUEST_NAMES = {
    "commitment_overage_factor": "overage_factor",
    "commitment_true_up_enabled": "enable_true_up",
    "commitment_windowed": "is_window_commitment",
    "hour": "commitment_time_buckets",
    "minute": "commitment_time_buckets",
    "start": "commitment_time_buckets",
    "end": "commitment_time_buckets",
}


def commitment_periods(
    duration: BillingPeriod | None, period: BillingPeriod, count: int, *, field: str
) -> int:
    """How many billing periods one commitment window spans (1 without a duration).

    Raises ``ValidationError`` naming ``field`` when ``duration`` is not a whole multiple of
    ``count`` x ``period`` (e.g. MONTHLY on a WEEKLY subscription, or ANNUAL on 5 x MONTHLY).
    """
    if duration is None or (duration is period and count == 1):
        return 1
    periods = period_multiple(duration, period, count)
    if periods is None:
        raise ValidationError(
            f"{field} must be a whole number of billing periods ({count} x {period.value})", field=field
        )
    return periods


def check_line_item_commitments(
    configs: Mapping[str, LineItemCommitmentConfig], period: BillingPeriod, count: int
) -> None:
    """The rules of each config on its own (the subscription's lines are checked by
    :func:`commit_line_items`). Raises ``ValidationError`` naming
    ``line_item_commitments.<price_id>.<field>``."""
    for price_id, config in configs.items():
        prefix = f"line_item_commitments.{price_id}"
        if config.commitment_type == "amount" and config.commitment_amount is None:
            raise ValidationError(
                "commitment_amount is required for an amount commitment", field=f"{prefix}.commitment_amount"
            )
        if config.commitment_type == "quantity" and config.commitment_quantity is None:
            raise ValidationError(
                "commitment_quantity is required for a quantity commitment",
                field=f"{prefix}.commitment_quantity",
            )
        if config.commitment_time_buckets and not config.is_window_commitment:
            raise ValidationError(
                "commitment_time_buckets need is_window_commitment",
                field=f"{prefix}.commitment_time_buckets",
            )
        periods = commitment_periods(
            config.commitment_duration, period, count, field=f"{prefix}.commitment_duration"
        )
        try:
            _core(config, periods)
        except ValidationError as exc:
            name = _REQUEST_NAMES.get(exc.field or "", exc.field or "")
            raise ValidationError(exc.message, field=f"{prefix}.{name}") from None


def _time_bucket(entry: Mapping[str, Any]) -> TimeBucket:
    return TimeBucket(
        TimeOfDay(entry["start"]["hour"], entry["start"].get("minute", 0)),
        TimeOfDay(entry["end"]["hour"], entry["end"].get("minute", 0)),
        entry["commitment_type"],
        Decimal(entry["commitment_value"]),
        Decimal(entry["overage_factor"]),
        entry["true_up_enabled"],
        id=entry.get("id", ""),
    )


def _stored_time_bucket(bucket: CommitmentTimeBucketConfig, price_id: str) -> dict[str, Any]:
    """A time bucket as the line item stores and shows it (the spec's fields; decimals as strings)."""
    return {
        "id": bucket.id,
        "price_id": price_id,
        "commitment_type": bucket.commitment_type,
        "commitment_value": str(bucket.commitment_value),
        "overage_factor": str(bucket.overage_factor),
        "true_up_enabled": bucket.true_up_enabled,
        "start": {"hour": bucket.start.hour, "minute": bucket.start.minute},
        "end": {"hour": bucket.end.hour, "minute": bucket.end.minute},
    }


def _core(config: LineItemCommitmentConfig, periods: int) -> LineCommitment:
    value = config.commitment_amount if config.commitment_type == "amount" else config.commitment_quantity
    return LineCommitment(
        config.commitment_type,
        value if value is not None else ZERO,
        config.overage_factor,
        config.enable_true_up,
        config.is_window_commitment,
        tuple(_time_bucket(_stored_time_bucket(b, "")) for b in config.commitment_time_buckets),
        periods,
    )


def commit_line_items(
    lines: Sequence[SubscriptionLineItem],
    configs: Mapping[str, LineItemCommitmentConfig],
    meters: Mapping[str, Meter],
) -> tuple[SubscriptionLineItem, ...]:
    """``lines`` with each config stored on the USAGE line item(s) of its price.

    Raises ``ValidationError`` naming ``line_item_commitments.<price_id>``: a price that is not a
    USAGE line of the subscription, or a windowed commitment on a meter without ``bucket_size``
    (its buckets are the windows and, for time buckets, give the usage's start times).
    """
    by_price: dict[str, list[SubscriptionLineItem]] = {}
    for line in lines:
        by_price.setdefault(line.price_id, []).append(line)
    for price_id, config in configs.items():
        prefix = f"line_item_commitments.{price_id}"
        matching = by_price.get(price_id, [])
        if not matching or any(line.price_type is not PriceType.USAGE for line in matching):
            raise ValidationError(
                f"price {price_id} is not a usage line item of this subscription", field=prefix
            )
        for line in matching:
            meter = meters.get(line.meter_id or "")
            if config.is_window_commitment and (meter is None or meter.aggregation.bucket_size is None):
                raise ValidationError(
                    "a window commitment needs a meter with aggregation.bucket_size (its buckets are "
                    "the windows and give each usage bucket's start time)",
                    field=f"{prefix}.is_window_commitment",
                )
    committed: list[SubscriptionLineItem] = []
    for line in lines:
        found = configs.get(line.price_id)
        if found is None:
            committed.append(line)
            continue
        config = found
        committed.append(
            line.model_copy(
                update={
                    "commitment_type": config.commitment_type,
                    "commitment_amount": config.commitment_amount,
                    "commitment_quantity": config.commitment_quantity,
                    "commitment_duration": config.commitment_duration,
                    "commitment_overage_factor": config.overage_factor,
                    "commitment_true_up_enabled": config.enable_true_up,
                    "commitment_windowed": config.is_window_commitment,
                    "commitment_time_buckets": tuple(
                        _stored_time_bucket(b, line.price_id) for b in config.commitment_time_buckets
                    ),
                }
            )
        )
    return tuple(committed)


def line_commitment(line: SubscriptionLineItem, sub: Subscription) -> LineCommitment | None:
    """The core commitment of a stored line item, or None when it has none."""
    if line.commitment_type is None:
        return None
    value = line.commitment_amount if line.commitment_type == "amount" else line.commitment_quantity
    return LineCommitment(
        line.commitment_type,
        value if value is not None else ZERO,
        line.commitment_overage_factor if line.commitment_overage_factor is not None else _ONE,
        line.commitment_true_up_enabled,
        line.commitment_windowed,
        tuple(_time_bucket(entry) for entry in line.commitment_time_buckets),
        commitment_periods(
            line.commitment_duration,
            sub.billing_period,
            sub.billing_period_count,
            field="commitment_duration",
        ),
    )


def has_cumulative_commitment(sub: Subscription) -> bool:
    """Whether ``sub`` or one of its line items commits over several billing periods."""
    durations = [sub.commitment_duration if sub.commitment_amount is not None else None]
    durations += [line.commitment_duration for line in sub.line_items if line.commitment_type]
    return any(
        commitment_periods(d, sub.billing_period, sub.billing_period_count, field="commitment_duration") > 1
        for d in durations
    )


def commitment_window(sub: Subscription, duration: BillingPeriod, instant: datetime) -> Period:
    """The cumulative commitment window holding ``instant``: windows of ``duration`` follow each
    other from the subscription's start (in its time zone). Example: ANNUAL from 10 Jan 2025 ->
    [10 Jan 2025, 10 Jan 2026), then [10 Jan 2026, 10 Jan 2027)."""
    schedule = BillingSchedule(
        anchor=sub.start_date, period=duration, cycle=BillingCycle.ANNIVERSARY, timezone=sub.timezone
    )
    return schedule.period_containing(instant)


@dataclass(frozen=True, slots=True)
class CommittedUsage:
    """The usage (money, before the commitment) one committed invoice line billed for
    ``[period_start, period_end)`` of subscription line item ``line_item_id``."""

    line_item_id: str
    period_start: datetime
    period_end: datetime
    usage: Decimal


def _usage_of(info: Mapping[str, Any] | CommitmentInfo) -> Decimal:
    """``utilized + overage / overage_factor``: the usage cost a committed line measured."""
    if isinstance(info, CommitmentInfo):
        utilized, overage, factor = (
            info.computed_commitment_utilized_amount,
            info.computed_overage_amount,
            info.overage_factor,
        )
    else:
        utilized = Decimal(info["computed_commitment_utilized_amount"])
        overage = Decimal(info["computed_overage_amount"])
        factor = Decimal(info["overage_factor"])
    return utilized + (overage / factor if overage else ZERO)


def committed_usage(
    lines: Iterable[tuple[str | None, datetime, datetime, Mapping[str, Any] | CommitmentInfo | None, bool]],
) -> list[CommittedUsage]:
    """The committed usage of invoice lines given as (subscription line item id, period start,
    period end, commitment info, is the true-up line); lines without a commitment and true-up lines
    (whose info repeats the invoice's totals) are left out."""
    return [
        CommittedUsage(line_id, start, end, _usage_of(info))
        for line_id, start, end, info, true_up in lines
        if line_id is not None and info is not None and not true_up
    ]


def _stored_lines(invoice: Invoice) -> list[CommittedUsage]:
    return committed_usage(
        (
            line.subscription_line_item_id,
            line.period_start,
            line.period_end,
            line.commitment_info,
            line.metadata.get("is_commitment_trueup") == "true",
        )
        for line in invoice.line_items
        if line.period_start is not None and line.period_end is not None
    )


def load_commitment_usage(
    uow: UnitOfWork, subscriptions: Sequence[Subscription]
) -> dict[str, list[CommittedUsage]]:
    """Subscription id -> the committed usage its stored invoices billed in its current cumulative
    window, for the subscriptions with a cumulative commitment only (one query per 500 of them).
    Voided invoices do not count."""
    subs = [sub for sub in subscriptions if has_cumulative_commitment(sub)]
    result: dict[str, list[CommittedUsage]] = {sub.id: [] for sub in subs}
    if not subs:
        return result
    earliest = min(_earliest_window_start(sub) for sub in subs)
    stored = list_where_in(
        uow.invoices,
        "subscription_id",
        [sub.id for sub in subs],
        Filter("period_end", Op.GT, earliest),
        status=None,
    )
    for invoice in stored:
        if invoice.invoice_status is not InvoiceStatus.VOIDED and invoice.subscription_id:
            result[invoice.subscription_id] += _stored_lines(invoice)
    return result


def _earliest_window_start(sub: Subscription) -> datetime:
    durations = [sub.commitment_duration] + [line.commitment_duration for line in sub.line_items]
    starts = [
        commitment_window(sub, duration, sub.current_period_start).start
        for duration in durations
        if duration is not None
    ]
    return min(starts, default=sub.current_period_start)


def wire_commitment_info(info: CommitmentInfo | None, duration: BillingPeriod) -> dict[str, Any] | None:
    """The invoice line's ``commitment_info`` as the reference shows it: money as strings and
    ``duration`` the commitment's billing period (the core counts it in billing periods)."""
    if info is None:
        return None
    data = info.to_dict()
    data["duration"] = duration.value
    return data
