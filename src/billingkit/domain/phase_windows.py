"""Where a subscription's phases lie in time, and how its line items follow them. Pure.

Rules (``docs/billing-rules.md``, "Subscription phases", has worked examples):

* A phase is a window ``[start_date, end_date)`` (``end_date`` ``None``: open-ended). Phases lie
  inside the subscription's window (not before its ``start_date``, not after its ``end_date``), do
  not overlap, and only the last one may be open-ended. Gaps are allowed: time before the first
  phase, between phases and after a closed last phase is billed by the plan's own line items.
* The subscription's **plan lines** (``entity_type`` ``plan``, no ``subscription_phase_id``) bill
  the time no phase covers; each phase bills its own copy of every plan line (overridden as the
  phase says) plus its extra lines, all dated inside the phase window. Billing then needs no switch
  logic: every charge is clipped to its line's own ``[start_date, end_date)``.
* A plan line therefore ends where a phase starts and a new piece of it (same price, same
  quantity, new id) starts where the phase ends. A plan line whose whole life is covered by
  phases is kept, ended at its start (``end_date == start_date``: it bills nothing), so the
  subscription always keeps the plan's line to copy from.
* Changes never touch what may have been invoiced: every window change happens at or after the
  subscription's *settled instant* (:func:`settled_until`), which callers check first and
  :func:`check_settled` proves on the result.

Example: monthly plan line ``L`` from 1 Jan; phases ``[1 Jan, 1 Apr)`` and ``[1 Apr, open)`` ->
``L`` ends at 1 Jan (``[1 Jan, 1 Jan)``), phase 1's copy ``[1 Jan, 1 Apr)``, phase 2's copy
``[1 Apr, open)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from billingkit.domain.subscriptions import Subscription, SubscriptionLineItem
from billingkit.errors import InternalError, ValidationError

__all__ = [
    "PhaseLines",
    "Window",
    "check_fits",
    "check_settled",
    "check_windows",
    "is_plan_line",
    "overlap",
    "settled_until",
    "subtract",
]

#: ``(start, end)``, half-open; ``end`` ``None`` means open-ended.
Window = tuple[datetime, datetime | None]

_DAWN = datetime.min.replace(tzinfo=UTC)


def _before_end(instant: datetime, end: datetime | None) -> bool:
    """``instant`` lies before ``end`` (always, for an open end)."""
    return end is None or instant < end


def _min_end(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def overlap(a: Window, b: Window) -> Window | None:
    """The common part of two windows, or ``None`` when they share no instant."""
    start = max(a[0], b[0])
    end = _min_end(a[1], b[1])
    return (start, end) if _before_end(start, end) else None


def subtract(a: Window, cut: Window) -> tuple[Window | None, Window | None]:
    """``a`` without ``cut``: the part before ``cut`` and the part after it (each ``None`` when
    empty). Example: ``[1 Jan, open) - [1 Feb, 1 Mar)`` -> ``[1 Jan, 1 Feb)``, ``[1 Mar, open)``."""
    left: Window | None = None
    right: Window | None = None
    if a[0] < cut[0]:
        end = _min_end(a[1], cut[0])
        if end is not None and a[0] < end:
            left = (a[0], end)
    if cut[1] is not None and _before_end(cut[1], a[1]):
        start = max(a[0], cut[1])
        if _before_end(start, a[1]):
            right = (start, a[1])
    return left, right


def _window(line: SubscriptionLineItem, default_start: datetime) -> Window:
    return (line.start_date or default_start, line.end_date)


def is_plan_line(line: SubscriptionLineItem) -> bool:
    """A line of the plan itself (not a phase's, an add-on's or an extra line)."""
    return line.entity_type == "plan" and line.subscription_phase_id is None


def settled_until(sub: Subscription, now: datetime) -> datetime:
    """The instant before which a subscription's charges may already be invoiced: the end of its
    current period (its ADVANCE charges are billed when the period opens), or ``now`` when that
    is later. Phase changes happen at or after it."""
    return max(now, sub.current_period_end)


def check_windows(
    windows: Sequence[Window], *, sub_start: datetime, sub_end: datetime | None, prefixes: Sequence[str]
) -> None:
    """Phases given together (on create): each well formed and inside the subscription (see
    :func:`check_fits`), in order of start, none overlapping the one before. Errors name
    ``prefixes[i] + "start_date"`` (or ``end_date``)."""
    for index, (window, prefix) in enumerate(zip(windows, prefixes, strict=True)):
        check_fits(window, (), sub_start=sub_start, sub_end=sub_end, prefix=prefix)
        if index == 0:
            continue
        before = windows[index - 1]
        if window[0] < before[0]:
            raise ValidationError(
                f"phases must be given in order of start_date; this one starts before phases[{index - 1}]",
                field=prefix + "start_date",
            )
        if _before_end(window[0], before[1]):
            ends = "has no end_date" if before[1] is None else f"ends at {before[1].isoformat()}"
            raise ValidationError(f"overlaps phases[{index - 1}], which {ends}", field=prefix + "start_date")


def check_fits(
    window: Window,
    others: Iterable[Window],
    *,
    sub_start: datetime,
    sub_end: datetime | None,
    prefix: str = "",
) -> None:
    """``window`` is a phase the subscription can hold beside ``others``: ends after it starts,
    lies inside ``[sub_start, sub_end)`` and overlaps none of ``others``. Errors name
    ``prefix + "start_date"`` or ``prefix + "end_date"``."""
    start, end = window
    if end is not None and end <= start:
        raise ValidationError("end_date must be after start_date", field=prefix + "end_date")
    if start < sub_start:
        raise ValidationError(
            f"a phase cannot start before the subscription ({sub_start.isoformat()})",
            field=prefix + "start_date",
        )
    if sub_end is not None:
        if start >= sub_end:
            raise ValidationError(
                f"a phase must start before the subscription ends ({sub_end.isoformat()})",
                field=prefix + "start_date",
            )
        if end is not None and end > sub_end:
            raise ValidationError(
                f"a phase cannot end after the subscription ({sub_end.isoformat()})",
                field=prefix + "end_date",
            )
    for other in others:
        if overlap(window, other) is None:
            continue
        ends = "open-ended" if other[1] is None else f"until {other[1].isoformat()}"
        inside = other[0] <= start
        raise ValidationError(
            f"overlaps the phase from {other[0].isoformat()} {ends}",
            field=prefix + ("start_date" if inside else "end_date"),
        )


def check_settled(
    before: Sequence[SubscriptionLineItem], after: Sequence[SubscriptionLineItem], settled: datetime
) -> None:
    """Prove that an edit of a subscription's lines changed nothing before ``settled``: every line
    covers the same time before it as it did (a removed line covered none). ``InternalError``
    otherwise: a caller let a change reach time that may be invoiced."""
    now = {line.id: line for line in after}
    for line in before:
        changed = now.get(line.id)
        old = _part_before(line, settled)
        new = _part_before(changed, settled) if changed is not None else None
        if old != new:
            raise InternalError(f"a phase change would alter invoiced time of line item {line.id}")


def _part_before(line: SubscriptionLineItem, settled: datetime) -> Window | None:
    return overlap((line.start_date or _DAWN, line.end_date), (_DAWN, settled))


@dataclass(slots=True)
class _Line:
    """A line being edited, and the plan price key it belongs to (``None``: an extra line)."""

    line: SubscriptionLineItem
    key: str | None


class PhaseLines:
    """A subscription's line items while phases are given, moved or removed.

    ``keys`` maps each phase copy of a plan line (by id) to the price of the plan line it copies
    (the plan lines are their own key: their ``price_id``). ``new_id`` makes line item ids.
    :meth:`claim` hands time of the plan lines to a phase, :meth:`release` gives a phase's time
    back to them; both keep the lines' order (new lines go at the end)."""

    def __init__(
        self,
        lines: Sequence[SubscriptionLineItem],
        keys: Mapping[str, str],
        new_id: Callable[[], str],
        *,
        sub_start: datetime,
    ) -> None:
        self._lines = [
            _Line(line, line.price_id if is_plan_line(line) else keys.get(line.id)) for line in lines
        ]
        self._new_id = new_id
        self._start = sub_start

    @property
    def lines(self) -> tuple[SubscriptionLineItem, ...]:
        return tuple(item.line for item in self._lines)

    def key_of(self, line_id: str) -> str | None:
        return next((item.key for item in self._lines if item.line.id == line_id), None)

    def _base(self, key: str | None = None) -> list[_Line]:
        return [item for item in self._lines if is_plan_line(item.line) and (key is None or item.key == key)]

    def _of_phase(self, phase_id: str) -> list[_Line]:
        return [item for item in self._lines if item.line.subscription_phase_id == phase_id]

    def _set(self, item: _Line, window: Window) -> None:
        item.line = item.line.model_copy(update={"start_date": window[0], "end_date": window[1]})

    def _add(self, line: SubscriptionLineItem, key: str | None) -> _Line:
        item = _Line(line, key)
        self._lines.append(item)
        return item

    def _remove(self, item: _Line) -> None:
        self._lines.remove(item)

    def _copy(self, source: SubscriptionLineItem, window: Window, **update: Any) -> SubscriptionLineItem:
        return source.model_copy(
            update={"id": self._new_id(), "start_date": window[0], "end_date": window[1], **update}
        )

    def add(self, lines: Iterable[SubscriptionLineItem]) -> None:
        """Append a phase's extra lines (they belong to no plan price)."""
        for line in lines:
            self._add(line, None)

    def replace(self, lines: Iterable[SubscriptionLineItem]) -> None:
        """Put changed versions of lines (same ids) in place, e.g. overridden phase copies."""
        changed = {line.id: line for line in lines}
        for item in self._lines:
            if item.line.id in changed:
                item.line = changed.pop(item.line.id)
        if changed:
            raise InternalError(f"no line items {sorted(changed)} to replace")

    def claim(self, phase_id: str, window: Window) -> list[SubscriptionLineItem]:
        """Hand ``window`` of every plan line to phase ``phase_id``: each plan line meeting the
        window is cut around it (its piece after the window gets a new id), and the phase gets
        that part as its copy of the line. An existing copy of the same price in the phase that
        touches the part grows instead; a new copy takes the fields of the phase's other copy of
        that price when it has one (its overrides), else of the plan line. Returns the new copies."""
        made: list[SubscriptionLineItem] = []
        for item in self._base():  # a snapshot: pieces added below are outside the window
            own = _window(item.line, self._start)
            part = overlap(own, window)
            if part is None:
                continue
            left, right = subtract(own, window)
            if left is not None:
                self._set(item, left)
                if right is not None:
                    self._add(self._copy(item.line, right), item.key)
            elif right is not None:
                self._set(item, right)
            elif len(self._base(item.key)) > 1:
                self._remove(item)
            else:  # the plan's last line of this price: kept, ended at its start
                self._set(item, (own[0], own[0]))
            copy = self._give(phase_id, item, part)
            if copy is not None:
                made.append(copy)
        return made

    def _give(self, phase_id: str, base: _Line, part: Window) -> SubscriptionLineItem | None:
        copies = [c for c in self._of_phase(phase_id) if c.key == base.key]
        for copy in copies:
            start, end = _window(copy.line, self._start)
            if end == part[0]:
                self._set(copy, (start, part[1]))
                return None
            if part[1] is not None and start == part[1]:
                self._set(copy, (part[0], end))
                return None
        source = copies[0].line if copies else base.line
        line = self._copy(source, part, subscription_phase_id=phase_id)
        self._add(line, base.key)
        return line

    def release(self, phase_id: str, window: Window) -> None:
        """Give ``window`` of phase ``phase_id`` back to the plan lines: the phase's copies and
        extra lines lose that part (a line left with nothing is removed), and each plan line
        grows over it (or a new piece of it covers it). Extra lines follow :meth:`follow`."""
        for item in list(self._of_phase(phase_id)):
            if item.key is None:
                continue
            own = _window(item.line, self._start)
            part = overlap(own, window)
            if part is None:
                continue
            left, right = subtract(own, window)
            if left is not None and right is not None:
                raise InternalError("a phase gives back time only at its edges")
            rest = left or right
            if rest is None:
                self._remove(item)
            else:
                self._set(item, rest)
            self._take_back(item.key, part)

    def _take_back(self, key: str, part: Window) -> None:
        pieces = self._base(key)
        if not pieces:
            return  # the plan line of this price is gone: its time stays unbilled
        left = next((p for p in pieces if p.line.end_date == part[0]), None)
        right = next(
            (p for p in pieces if p is not left and part[1] is not None and p.line.start_date == part[1]),
            None,
        )
        if left is not None and right is not None:
            self._set(left, (_window(left.line, self._start)[0], right.line.end_date))
            self._remove(right)
        elif left is not None:
            self._set(left, (_window(left.line, self._start)[0], part[1]))
        elif right is not None:
            self._set(right, (part[0], right.line.end_date))
        else:
            empty = next((p for p in pieces if p.line.start_date == p.line.end_date), None)
            if empty is not None:
                self._set(empty, part)
            else:
                self._add(self._copy(pieces[0].line, part), key)

    def follow(self, phase_id: str, old: Window, new: Window) -> None:
        """The phase's extra lines after its window moved from ``old`` to ``new``: a bound equal
        to the phase's old bound moves with it, then each is clipped to ``new`` (a line left with
        nothing is removed). Plan copies follow through :meth:`claim` and :meth:`release`."""
        for item in list(self._of_phase(phase_id)):
            if item.key is not None:
                continue
            start, end = _window(item.line, self._start)
            start = new[0] if start == old[0] else start
            end = new[1] if end == old[1] else end
            clipped = overlap((start, end), new)
            if clipped is None:
                self._remove(item)
            else:
                self._set(item, clipped)

    def drop(self, phase_id: str, window: Window) -> None:
        """Remove phase ``phase_id`` whole: its time goes back to the plan lines, its lines go."""
        self.release(phase_id, window)
        for item in self._of_phase(phase_id):
            self._remove(item)

    def end_at_start(self, starts: Mapping[str, datetime]) -> None:
        """Plan lines left with no time end at their original start (``starts``: line id ->
        start before the phases were given), rather than where the last phase began."""
        for item in self._base():
            if item.line.start_date == item.line.end_date and item.line.id in starts:
                at = starts[item.line.id]
                self._set(item, (at, at))
