"""Time buckets of bucketed meters: UTC-aligned windows (minutes to days on the epoch grid, weeks
from Monday 00:00, months from the 1st)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum

from billingkit.domain.periods import ensure_utc, epoch_seconds
from billingkit.errors import ValidationError

__all__ = ["BucketSize", "bucket_count", "bucket_end", "bucket_start"]


class BucketSize(StrEnum):
    """Time bucket of a bucketed meter (wire values as in the reference API)."""

    MINUTE = "MINUTE"
    FIFTEEN_MINUTES = "15MIN"
    THIRTY_MINUTES = "30MIN"
    HOUR = "HOUR"
    THREE_HOURS = "3HOUR"
    SIX_HOURS = "6HOUR"
    TWELVE_HOURS = "12HOUR"
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"


_BUCKET_SECONDS = {
    BucketSize.MINUTE: 60,
    BucketSize.FIFTEEN_MINUTES: 15 * 60,
    BucketSize.THIRTY_MINUTES: 30 * 60,
    BucketSize.HOUR: 3600,
    BucketSize.THREE_HOURS: 3 * 3600,
    BucketSize.SIX_HOURS: 6 * 3600,
    BucketSize.TWELVE_HOURS: 12 * 3600,
    BucketSize.DAY: 86400,
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MONDAY_EPOCH = datetime(1970, 1, 5, tzinfo=UTC)


def bucket_start(instant: datetime, size: BucketSize) -> datetime:
    """Start of the UTC-aligned bucket holding ``instant``.

    Example: HOUR, 10:42:07 → 10:00:00; WEEK → the Monday 00:00 before; MONTH → the 1st 00:00.
    Raises ``ValidationError`` (fields ``timestamp``, ``bucket_size``).
    """
    instant = ensure_utc(instant, "timestamp")
    try:
        size = BucketSize(size)
    except (ValueError, TypeError):
        raise ValidationError("unknown bucket_size", field="bucket_size") from None
    if size is BucketSize.MONTH:
        return datetime(instant.year, instant.month, 1, tzinfo=UTC)
    if size is BucketSize.WEEK:
        days = (instant - _MONDAY_EPOCH).days // 7 * 7
        return _MONDAY_EPOCH + timedelta(days=days)
    step = _BUCKET_SECONDS[size]
    return _EPOCH + timedelta(seconds=epoch_seconds(instant) // step * step)


def bucket_end(start: datetime, size: BucketSize) -> datetime:
    """End of the bucket that starts at ``start`` (see :func:`bucket_start`)."""
    if size is BucketSize.MONTH:
        year, month = (start.year + 1, 1) if start.month == 12 else (start.year, start.month + 1)
        try:
            return datetime(year, month, 1, tzinfo=UTC)
        except ValueError:
            raise ValidationError("timestamp is out of range", field="timestamp") from None
    if size is BucketSize.WEEK:
        return start + timedelta(days=7)
    return start + timedelta(seconds=_BUCKET_SECONDS[size])


def bucket_count(start: datetime, end: datetime, size: BucketSize) -> int:
    """How many buckets of ``size`` overlap ``[start, end)`` (0 when ``end <= start``).

    Example: HOUR, 10:30 to 13:00 -> 3 (10:00, 11:00 and 12:00). Raises ``ValidationError``.
    """
    if end <= start:
        return 0
    first = bucket_start(start, size)
    step = _BUCKET_SECONDS.get(BucketSize(size))
    if step is not None:
        return -(-(epoch_seconds(end) - epoch_seconds(first)) // step)
    count = 0
    current = first
    while current < end:
        count += 1
        current = bucket_end(current, size)
    return count
