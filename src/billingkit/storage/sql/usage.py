"""Usage aggregation in SQL: many (meter, customers, window) questions in one statement per meter.

The database filters, buckets, groups and aggregates; Python only finishes the arithmetic that
needs the domain's rounding (AVG, WEIGHTED_SUM) through ``usage_from_partials``. Each statement
joins a small table of questions ``q(idx, customer, start_at, end_at)`` — a JSON parameter read by
``jsonb_to_recordset`` (PostgreSQL) or ``json_each`` (SQLite) — to the events through the index
``ix_events_usage (tenant, environment, external_customer_id, event_name, timestamp)``, so a
billing run of a thousand customers is one round trip per meter.

Exactness: PostgreSQL sums NUMERIC; SQLite hands each property's JSON literal to small Python
aggregates (``bk_sum`` and friends) that add ``Decimal``s, because SQLite's own arithmetic is
binary floating point.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

from billingkit.domain.usage import (
    EXACT,
    AggregationType,
    Cell,
    MeterSpec,
    UsagePartial,
    UsageQuery,
    UsageResult,
    usage_from_partials,
)
from billingkit.storage.sql.driver import fetch_rows
from billingkit.storage.sql.json_props import sqlite_number, sqlite_plain
from billingkit.storage.sql.types import sqlite_instant, sqlite_time
from billingkit.storage.sql.usage_statements import Shape, prepared

__all__ = ["SqlUsageStore", "register_sqlite_functions"]

_CHUNK = 1000  # questions per statement
_add = EXACT.add  # exact at any size, whatever the caller's decimal context


# --- SQLite: exact decimal aggregates over JSON literals ----------------------------------------


class _SqliteSum:
    """``bk_sum(literal)`` → ``"<numbers>;<sum>"``."""

    def __init__(self) -> None:
        self.count = 0
        self.total = Decimal(0)

    def step(self, literal: str | None) -> None:
        number = sqlite_number(literal)
        if number is not None:
            self.count += 1
            self.total = _add(self.total, number)

    def finalize(self) -> str:
        return f"{self.count};{self.total}"


class _SqliteMax:
    """``bk_max(literal)`` → ``"<numbers>;<max>"`` (max empty when there are no numbers)."""

    def __init__(self) -> None:
        self.count = 0
        self.maximum: Decimal | None = None

    def step(self, literal: str | None) -> None:
        number = sqlite_number(literal)
        if number is not None:
            self.count += 1
            if self.maximum is None or number > self.maximum:
                self.maximum = number

    def finalize(self) -> str:
        return f"{self.count};{'' if self.maximum is None else self.maximum}"


class _SqliteLatest:
    """``bk_latest(literal, timestamp, id)`` → ``"<numbers>;<value>;<timestamp>;<id>"``."""

    def __init__(self) -> None:
        self.count = 0
        self.best: tuple[str, str, Decimal] | None = None

    def step(self, literal: str | None, timestamp: str, event_id: str) -> None:
        number = sqlite_number(literal)
        if number is not None:
            self.count += 1
            if self.best is None or (timestamp, event_id) > self.best[:2]:
                self.best = (timestamp, event_id, number)

    def finalize(self) -> str:
        if self.best is None:
            return f"{self.count};;;"
        timestamp, event_id, number = self.best
        return f"{self.count};{number};{timestamp};{event_id}"


class _SqliteWeighted:
    """``bk_wsum(literal, micros_to_end)`` → ``"<numbers>;<sum>;<sum of value x micros>"``."""

    def __init__(self) -> None:
        self.count = 0
        self.total = Decimal(0)
        self.weighted = Decimal(0)

    def step(self, literal: str | None, micros: int) -> None:
        number = sqlite_number(literal)
        if number is not None:
            self.count += 1
            self.total = _add(self.total, number)
            self.weighted = _add(self.weighted, EXACT.multiply(number, micros))

    def finalize(self) -> str:
        return f"{self.count};{self.total};{self.weighted}"


def register_sqlite_functions(dbapi_connection: Any) -> None:
    """Install the functions the SQLite usage queries call (done on every new connection)."""
    dbapi_connection.create_function("bk_plain", 1, sqlite_plain, deterministic=True)
    dbapi_connection.create_aggregate("bk_sum", 1, _SqliteSum)
    dbapi_connection.create_aggregate("bk_max", 1, _SqliteMax)
    dbapi_connection.create_aggregate("bk_latest", 3, _SqliteLatest)
    dbapi_connection.create_aggregate("bk_wsum", 2, _SqliteWeighted)


# --- reading results ----------------------------------------------------------------------------


def _time_text(dialect: str, instant: datetime) -> str:
    instant = instant.astimezone(UTC)
    return instant.isoformat() if dialect == "postgresql" else sqlite_time(instant)


def _bucket_value(raw: Any) -> datetime | None:
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return raw.astimezone(UTC)
    return datetime.fromtimestamp(int(raw), tz=UTC)


def _decimal(raw: Any) -> Decimal:
    return raw if isinstance(raw, Decimal) else Decimal(raw)


def _pg_partial(meter: MeterSpec, row: Any) -> UsagePartial:
    kind = meter.aggregation
    events = int(row.events)
    if kind is AggregationType.COUNT:
        return UsagePartial(events=events)
    if kind is AggregationType.COUNT_UNIQUE:
        return UsagePartial(events=events, distinct=int(row.distinct_count))
    numbers = int(row.numbers)
    if kind is AggregationType.MAX:
        return UsagePartial(events, numbers, maximum=row.maximum)
    if kind is AggregationType.LATEST:
        key = None if row.latest_ts is None else (row.latest_ts.astimezone(UTC), row.latest_id)
        return UsagePartial(events, numbers, latest=row.latest, latest_key=key)
    total = row.total if row.total is not None else Decimal(0)
    weighted = getattr(row, "weighted", None)
    return UsagePartial(events, numbers, total, weighted=weighted if weighted is not None else Decimal(0))


def _sqlite_partial(meter: MeterSpec, packed: str) -> UsagePartial:
    """The partial packed by ``usage_statements._sqlite_packed_sql``."""
    kind = meter.aggregation
    head, _, rest = packed.partition(";")
    events = int(head)
    if kind is AggregationType.COUNT:
        return UsagePartial(events=events)
    if kind is AggregationType.COUNT_UNIQUE:
        return UsagePartial(events=events, distinct=int(rest))
    parts = rest.split(";", 3)  # the event id is last: it may contain ";"
    numbers = int(parts[0])
    if kind is AggregationType.MAX:
        return UsagePartial(events, numbers, maximum=_decimal(parts[1]) if parts[1] else None)
    if kind is AggregationType.LATEST:
        if not parts[1]:
            return UsagePartial(events, numbers)
        key = (sqlite_instant(parts[2]), parts[3])
        return UsagePartial(events, numbers, latest=_decimal(parts[1]), latest_key=key)
    if kind is AggregationType.WEIGHTED_SUM:
        return UsagePartial(events, numbers, _decimal(parts[1]), weighted=_decimal(parts[2]))
    # integers summed by SQLite; the other numbers by bk_sum
    if any(mark in parts[1] for mark in ".eE"):
        raise _InexactSum  # SQLite read an integer beyond 64 bits as a double
    total = _add(Decimal(parts[1]), _decimal(parts[3]))
    return UsagePartial(events, numbers + int(parts[2]), total)


class _InexactSum(Exception):
    """SQLite could not add a chunk's integers exactly: ask again without ``exact_integers``."""


def _chunks(rows: list[list[Any]], size: int) -> Iterator[list[Any]]:
    """Rows in chunks of about ``size``, never splitting one question's rows (rows[i][0])."""
    chunk: list[list[Any]] = []
    for row in rows:
        if len(chunk) >= size and chunk[-1][0] != row[0]:
            yield chunk
            chunk = []
        chunk.append(row)
    if chunk:
        yield chunk


class SqlUsageStore:
    """The SQL adapter of :class:`billingkit.ports.UsageStore`."""

    def __init__(self, conn: Connection, scope: tuple[str | None, str | None]) -> None:
        self._conn = conn
        self._scope = scope
        self._dialect = conn.dialect.name

    def aggregate(self, queries: Sequence[UsageQuery]) -> list[UsageResult]:
        cells: list[dict[Cell, UsagePartial]] = [{} for _ in queries]
        overall: dict[int, UsagePartial] = {}
        # One statement per meter and shape: all customers or some, and whether every question
        # is one (index, customer) row, which SQLite answers row by row without grouping.
        work: dict[tuple[MeterSpec, bool, bool], list[list[Any]]] = defaultdict(list)
        for index, query in enumerate(queries):
            start, end = _time_text(self._dialect, query.start), _time_text(self._dialect, query.end)
            customers = query.external_customer_ids
            if customers is None:
                work[(query.meter, False, True)].append([index, None, start, end])
            else:
                shape = (query.meter, True, len(customers) == 1)
                for customer in sorted(customers):
                    work[shape].append([index, customer, start, end])
        for (meter, by_customer, single), rows in work.items():
            self._run(meter, rows, by_customer, single, cells)
            if meter.aggregation is AggregationType.COUNT_UNIQUE and meter.grouped:
                # Distinct counts do not add up across groups: ask again without grouping.
                plain = MeterSpec(
                    meter.event_name, meter.aggregation, meter.field, meter.filters, sources=meter.sources
                )
                totals: list[dict[Cell, UsagePartial]] = [{} for _ in queries]
                self._run(plain, rows, by_customer, single, totals)
                for index in {row[0] for row in rows}:
                    overall[index] = totals[index].get((None, None), UsagePartial())
        return [
            usage_from_partials(query.meter, query.start, query.end, cells[index], overall.get(index))
            for index, query in enumerate(queries)
        ]

    def _run(
        self,
        meter: MeterSpec,
        rows: list[list[Any]],
        by_customer: bool,
        single: bool,
        cells: list[dict[Cell, UsagePartial]],
    ) -> None:
        plain = meter.bucket_size is None and not meter.grouped
        if len(rows) == 1 and plain:
            self._run_one(meter, rows[0], by_customer, cells)
            return
        shape = Shape.ROWS if single and plain else Shape.GROUPED
        for chunk in _chunks(rows, _CHUNK):
            payload = json.dumps(chunk)

            def ask(exact_integers: bool, payload: str = payload) -> list[Any]:
                return self._execute(meter, by_customer, shape, exact_integers, {"q": payload})

            if self._dialect == "postgresql":
                for row in ask(True):
                    cells[int(row.idx)][(_bucket_value(row.bucket), row.grp)] = _pg_partial(meter, row)
                continue
            try:
                found = _sqlite_cells(meter, ask(True))
            except (_InexactSum, OperationalError) as exc:
                if isinstance(exc, OperationalError) and "integer overflow" not in str(exc.orig):
                    raise
                # Integers beyond 64 bits, or a sum that leaves them: add every number as a decimal.
                found = _sqlite_cells(meter, ask(False))
            for index, key, partial in found:
                cells[index][key] = partial

    def _run_one(
        self, meter: MeterSpec, row: list[Any], by_customer: bool, cells: list[dict[Cell, UsagePartial]]
    ) -> None:
        """One question, no buckets or groups: one plain statement over one index range."""
        index, customer, start, end = row
        questions = {"qc": customer, "qs": start, "qe": end} if by_customer else {"qs": start, "qe": end}
        if self._dialect == "postgresql":
            (found,) = self._execute(meter, by_customer, Shape.ONE, True, questions)
            if found.events:  # a question without events has no cell
                cells[index][(None, None)] = _pg_partial(meter, found)
            return
        try:
            (found,) = self._execute(meter, by_customer, Shape.ONE, True, questions)
            packed = _packed(found.packed)
            partial = None if packed.partition(";")[0] == "0" else _sqlite_partial(meter, packed)
        except (_InexactSum, OperationalError) as exc:
            if isinstance(exc, OperationalError) and "integer overflow" not in str(exc.orig):
                raise
            (found,) = self._execute(meter, by_customer, Shape.ONE, False, questions)
            packed = _packed(found.packed)
            partial = None if packed.partition(";")[0] == "0" else _sqlite_partial(meter, packed)
        if partial is not None:
            cells[index][(None, None)] = partial

    def _execute(
        self,
        meter: MeterSpec,
        by_customer: bool,
        shape: Shape,
        exact_integers: bool,
        questions: dict[str, Any],
    ) -> list[Any]:
        """Run the cached statement of ``meter`` and ``shape`` for this scope and ``questions``."""
        sql, constants = prepared(self._dialect, meter, by_customer, shape, exact_integers)
        params = dict(constants)
        params["t"], params["e"] = self._scope
        params.update(questions)
        return fetch_rows(self._conn, sql, params)


def _packed(raw: Any) -> str:
    # NULL: no events (a custom aggregate that never stepped); COUNT alone is a number.
    return "0" if raw is None else str(raw)


def _sqlite_cells(meter: MeterSpec, rows: list[Any]) -> list[tuple[int, Cell, UsagePartial]]:
    """The cells of SQLite result rows ``(idx, bucket, grp, packed)``."""
    found = []
    for row in rows:
        packed = _packed(row.packed)
        if packed.partition(";")[0] != "0":  # a question without events has no cell
            cell: Cell = (_bucket_value(row.bucket), row.grp)
            found.append((int(row.idx), cell, _sqlite_partial(meter, packed)))
    return found
