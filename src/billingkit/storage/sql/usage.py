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

from sqlalchemy import Connection, text

from billingkit.domain.usage import (
    EXACT,
    AggregationType,
    BucketSize,
    Cell,
    MeterSpec,
    UsagePartial,
    UsageQuery,
    UsageResult,
    usage_from_partials,
)
from billingkit.storage.sql.json_props import Fragment, json_number, json_text, sqlite_number, sqlite_plain
from billingkit.storage.sql.types import sqlite_instant, sqlite_time

__all__ = ["SqlUsageStore", "register_sqlite_functions"]

_CHUNK = 1000  # questions per statement
_FIXED_SECONDS = {
    BucketSize.MINUTE: 60,
    BucketSize.FIFTEEN_MINUTES: 900,
    BucketSize.THIRTY_MINUTES: 1800,
    BucketSize.HOUR: 3600,
    BucketSize.THREE_HOURS: 10800,
    BucketSize.SIX_HOURS: 21600,
    BucketSize.TWELVE_HOURS: 43200,
    BucketSize.DAY: 86400,
}
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


# --- statement building ---------------------------------------------------------------------------


def _bucket_sql(dialect: str, size: BucketSize | None) -> str:
    if size is None:
        return "NULL"
    if dialect == "postgresql":
        if size is BucketSize.MONTH:
            return "date_trunc('month', e.timestamp, 'UTC')"
        if size is BucketSize.WEEK:
            return "date_bin(INTERVAL '7 days', e.timestamp, TIMESTAMPTZ '1970-01-05 00:00:00+00')"
        seconds = _FIXED_SECONDS[size]
        return f"date_bin(INTERVAL '{seconds} seconds', e.timestamp, TIMESTAMPTZ '1970-01-01 00:00:00+00')"
    if size is BucketSize.MONTH:
        return "unixepoch(substr(e.timestamp, 1, 7) || '-01')"
    seconds, origin = (604800, 345600) if size is BucketSize.WEEK else (_FIXED_SECONDS[size], 0)
    epoch = "unixepoch(substr(e.timestamp, 1, 19))"  # whole seconds: SQLite rounds fractions to ms
    return f"({epoch} - (((({epoch} - {origin}) % {seconds}) + {seconds}) % {seconds}))"


def _micros_to_end_sql(dialect: str) -> str:
    if dialect == "postgresql":
        return "(EXTRACT(EPOCH FROM (q.end_at - e.timestamp)) * 1000000)"
    return (
        "((unixepoch(substr(q.end_at, 1, 19)) - unixepoch(substr(e.timestamp, 1, 19))) * 1000000"
        " + CAST(substr(q.end_at, 21) AS INTEGER) - CAST(substr(e.timestamp, 21) AS INTEGER))"
    )


def _aggregate_sql(dialect: str, meter: MeterSpec) -> str:
    kind = meter.aggregation
    if kind is AggregationType.COUNT:
        return ""
    if kind is AggregationType.COUNT_UNIQUE:
        return ", count(DISTINCT s.v) AS distinct_count"
    if dialect == "postgresql":
        if kind is AggregationType.MAX:
            return ", count(s.v) AS numbers, max(s.v) AS maximum"
        if kind is AggregationType.LATEST:
            latest = 'ORDER BY s.ts DESC, s.id COLLATE "C" DESC) FILTER (WHERE s.v IS NOT NULL))[1]'
            return (
                f", count(s.v) AS numbers, (array_agg(s.v {latest} AS latest,"
                f" (array_agg(s.ts {latest} AS latest_ts, (array_agg(s.id {latest} AS latest_id"
            )
        if kind is AggregationType.WEIGHTED_SUM:
            return ", count(s.v) AS numbers, sum(s.v) AS total, sum(s.v * s.micros) AS weighted"
        return ", count(s.v) AS numbers, sum(s.v) AS total"
    if kind is AggregationType.MAX:
        return ", bk_max(s.v) AS packed"
    if kind is AggregationType.LATEST:
        return ", bk_latest(s.v, s.ts, s.id) AS packed"
    if kind is AggregationType.WEIGHTED_SUM:
        return ", bk_wsum(s.v, s.micros) AS packed"
    return ", bk_sum(s.v) AS packed"


def _questions_sql(dialect: str, sql: Fragment, rows: list[list[Any]]) -> str:
    payload = sql.bind(json.dumps(rows))
    if dialect == "postgresql":
        return (
            f"(SELECT (r ->> 0)::int AS idx, r ->> 1 AS customer, (r ->> 2)::timestamptz AS start_at,"
            f" (r ->> 3)::timestamptz AS end_at FROM jsonb_array_elements(CAST({payload} AS jsonb)) AS r)"
        )
    return (
        "(SELECT json_extract(value, '$[0]') AS idx, json_extract(value, '$[1]') AS customer,"
        " json_extract(value, '$[2]') AS start_at, json_extract(value, '$[3]') AS end_at"
        f" FROM json_each({payload}))"
    )


def _statement(
    dialect: str,
    scope: tuple[str | None, str | None],
    meter: MeterSpec,
    rows: list[list[Any]],
    by_customer: bool,
) -> tuple[str, dict[str, Any]]:
    sql = Fragment()
    props = "e.properties"
    if meter.aggregation is AggregationType.COUNT:
        value = "NULL"
    elif meter.aggregation is AggregationType.COUNT_UNIQUE:
        assert meter.field is not None
        value = json_text(dialect, props, meter.field, sql)
    else:
        assert meter.field is not None
        value = json_number(dialect, props, meter.field, sql)
    group = "NULL" if meter.group_by is None else json_text(dialect, props, meter.group_by, sql)
    micros = _micros_to_end_sql(dialect) if meter.aggregation is AggregationType.WEIGHTED_SUM else "NULL"
    questions = _questions_sql(dialect, sql, rows)
    conditions = [
        f"e.tenant_id = {sql.bind(scope[0])}",
        f"e.environment_id = {sql.bind(scope[1])}",
        f"e.event_name = {sql.bind(meter.event_name)}",
        "e.timestamp >= q.start_at",
        "e.timestamp < q.end_at",
    ]
    if by_customer:
        conditions.insert(2, "e.external_customer_id = q.customer")
    for meter_filter in meter.filters:
        values = ", ".join(sql.bind(v) for v in meter_filter.values)
        conditions.append(f"{json_text(dialect, props, meter_filter.key, sql)} IN ({values})")
    bucket = _bucket_sql(dialect, meter.bucket_size)
    inner = (
        f"SELECT q.idx AS idx, e.timestamp AS ts, e.id AS id, {bucket} AS bucket, {group} AS grp,"
        f" {value} AS v, {micros} AS micros"
        f" FROM {questions} AS q JOIN events AS e ON {' AND '.join(conditions)}"
    )
    statement = (
        f"SELECT s.idx, s.bucket, s.grp, count(*) AS events{_aggregate_sql(dialect, meter)}"
        f" FROM ({inner}) AS s GROUP BY s.idx, s.bucket, s.grp"
    )
    return statement, sql.params


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


def _partial(dialect: str, meter: MeterSpec, row: Any) -> UsagePartial:
    kind = meter.aggregation
    events = int(row.events)
    if kind is AggregationType.COUNT:
        return UsagePartial(events=events)
    if kind is AggregationType.COUNT_UNIQUE:
        return UsagePartial(events=events, distinct=int(row.distinct_count))
    if dialect == "postgresql":
        numbers = int(row.numbers)
        if kind is AggregationType.MAX:
            return UsagePartial(events, numbers, maximum=row.maximum)
        if kind is AggregationType.LATEST:
            key = None if row.latest_ts is None else (row.latest_ts.astimezone(UTC), row.latest_id)
            return UsagePartial(events, numbers, latest=row.latest, latest_key=key)
        total = row.total if row.total is not None else Decimal(0)
        weighted = getattr(row, "weighted", None)
        return UsagePartial(events, numbers, total, weighted=weighted if weighted is not None else Decimal(0))
    parts = row.packed.split(";", 3)  # the event id is last: it may contain ";"
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
    return UsagePartial(events, numbers, _decimal(parts[1]))


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
        # One statement per meter (and per "all customers" / "these customers" shape).
        work: dict[tuple[MeterSpec, bool], list[list[Any]]] = defaultdict(list)
        for index, query in enumerate(queries):
            start, end = _time_text(self._dialect, query.start), _time_text(self._dialect, query.end)
            if query.external_customer_ids is None:
                work[(query.meter, False)].append([index, None, start, end])
            else:
                for customer in sorted(query.external_customer_ids):
                    work[(query.meter, True)].append([index, customer, start, end])
        for (meter, by_customer), rows in work.items():
            self._run(meter, rows, by_customer, cells)
            if meter.aggregation is AggregationType.COUNT_UNIQUE and meter.group_by is not None:
                # Distinct counts do not add up across groups: ask again without grouping.
                plain = MeterSpec(meter.event_name, meter.aggregation, meter.field, meter.filters)
                totals: list[dict[Cell, UsagePartial]] = [{} for _ in queries]
                self._run(plain, rows, by_customer, totals)
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
        cells: list[dict[Cell, UsagePartial]],
    ) -> None:
        for chunk in _chunks(rows, _CHUNK):
            statement, params = _statement(self._dialect, self._scope, meter, chunk, by_customer)
            for row in self._conn.execute(text(statement), params):
                key: Cell = (_bucket_value(row.bucket), row.grp)
                cells[int(row.idx)][key] = _partial(self._dialect, meter, row)
