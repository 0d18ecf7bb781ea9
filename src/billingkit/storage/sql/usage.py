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
from sqlalchemy.exc import OperationalError

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
from billingkit.storage.sql.json_props import (
    Fragment,
    json_number,
    json_path,
    json_text,
    sqlite_number,
    sqlite_plain,
)
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


def _pg_aggregate_sql(meter: MeterSpec) -> str:
    """PostgreSQL: the aggregate's pieces as columns (the event count is ``events``)."""
    kind = meter.aggregation
    if kind is AggregationType.COUNT:
        return ""
    if kind is AggregationType.COUNT_UNIQUE:
        return ", count(DISTINCT s.v) AS distinct_count"
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


def _sqlite_packed_sql(meter: MeterSpec, c: dict[str, str], exact_integers: bool) -> str:
    """SQLite: one text value ``"<events>;<the aggregate's pieces>"`` over the columns ``c``
    (``v`` the property's JSON literal, ``vt`` its JSON type, ``vi`` its SQL value, ``ts``,
    ``id``, ``micros``); read back by :func:`_sqlite_partial`.

    Sums (SUM, AVG, SUM_WITH_MULTIPLIER) add JSON integers in SQLite itself and hand only the
    other numbers (decimals, numeric strings) to ``bk_sum``: a Python call per event costs more
    than the rest of the query. SQLite adds 64-bit integers exactly and raises on overflow; an
    integer too large for 64 bits is read as a double, which makes the sum a double. Either way
    :func:`_sqlite_partial` notices and the caller asks again with ``exact_integers=False``
    (every number through ``bk_sum``)."""
    kind = meter.aggregation
    parts = ["count(*)"]
    if kind is AggregationType.COUNT_UNIQUE:
        parts.append(f"count(DISTINCT {c['v']})")
    elif kind is AggregationType.MAX:
        parts.append(f"bk_max({c['v']})")
    elif kind is AggregationType.LATEST:
        parts.append(f"bk_latest({c['v']}, {c['ts']}, {c['id']})")
    elif kind is AggregationType.WEIGHTED_SUM:
        parts.append(f"bk_wsum({c['v']}, {c['micros']})")
    elif kind is not AggregationType.COUNT:
        if exact_integers:
            vt = c["vt"]
            parts += [
                f"count(*) FILTER (WHERE {vt} = 'integer')",
                f"ifnull(sum({c['vi']}) FILTER (WHERE {vt} = 'integer'), 0)",
                f"ifnull(bk_sum({c['v']}) FILTER (WHERE {vt} IN ('real', 'text')), '0;0')",
            ]
        else:
            parts += ["0", "0", f"ifnull(bk_sum({c['v']}), '0;0')"]
    return " || ';' || ".join(parts)


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
    *,
    one_row_per_question: bool = False,
    exact_integers: bool = True,
) -> tuple[str, dict[str, Any]]:
    """The statement answering the questions ``rows``: result rows ``(idx, bucket, grp, events,
    <pieces>)`` on PostgreSQL and ``(idx, bucket, grp, packed)`` on SQLite.
    ``one_row_per_question``: no two rows share an index (one customer, or all of them)."""
    sql = Fragment()
    props = "e.properties"
    sqlite = dialect != "postgresql"
    c = {"ts": "e.timestamp", "id": "e.id", "vt": "NULL", "vi": "NULL", "micros": "NULL"}
    if meter.aggregation is AggregationType.COUNT:
        c["v"] = "NULL"
    elif meter.aggregation is AggregationType.COUNT_UNIQUE:
        assert meter.field is not None
        c["v"] = json_text(dialect, props, meter.field, sql)
    else:
        assert meter.field is not None
        c["v"] = json_number(dialect, props, meter.field, sql)
        if sqlite:
            path = sql.bind(json_path(meter.field))
            c["vt"], c["vi"] = f"json_type({props}, {path})", f"({props} ->> {path})"
    if meter.aggregation is AggregationType.WEIGHTED_SUM:
        c["micros"] = _micros_to_end_sql(dialect)
    group = "NULL" if meter.group_by is None else json_text(dialect, props, meter.group_by, sql)
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
    where = " AND ".join(conditions)
    if sqlite and one_row_per_question and meter.bucket_size is None and meter.group_by is None:
        # One value per question: a correlated subquery walks the index once per question and
        # needs no temporary B-tree to group the joined rows (about four times faster).
        packed = _sqlite_packed_sql(meter, c, exact_integers)
        statement = (
            f"SELECT q.idx AS idx, NULL AS bucket, NULL AS grp,"
            f" (SELECT {packed} FROM events AS e WHERE {where}) AS packed FROM {questions} AS q"
        )
        return statement, sql.params
    bucket = _bucket_sql(dialect, meter.bucket_size)
    columns = ", ".join(f"{expression} AS {name}" for name, expression in c.items())
    inner = (
        f"SELECT q.idx AS idx, {bucket} AS bucket, {group} AS grp, {columns}"
        f" FROM {questions} AS q JOIN events AS e ON {where}"
    )
    if sqlite:
        pieces = f", {_sqlite_packed_sql(meter, {name: f's.{name}' for name in c}, exact_integers)} AS packed"
    else:
        pieces = f", count(*) AS events{_pg_aggregate_sql(meter)}"
    statement = f"SELECT s.idx, s.bucket, s.grp{pieces} FROM ({inner}) AS s GROUP BY s.idx, s.bucket, s.grp"
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
    """The partial packed by :func:`_sqlite_packed_sql`."""
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
            if meter.aggregation is AggregationType.COUNT_UNIQUE and meter.group_by is not None:
                # Distinct counts do not add up across groups: ask again without grouping.
                plain = MeterSpec(meter.event_name, meter.aggregation, meter.field, meter.filters)
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
        for chunk in _chunks(rows, _CHUNK):

            def ask(exact_integers: bool, chunk: list[list[Any]] = chunk) -> list[Any]:
                statement, params = _statement(
                    self._dialect,
                    self._scope,
                    meter,
                    chunk,
                    by_customer,
                    one_row_per_question=single,
                    exact_integers=exact_integers,
                )
                return list(self._conn.execute(text(statement), params))

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


def _sqlite_cells(meter: MeterSpec, rows: list[Any]) -> list[tuple[int, Cell, UsagePartial]]:
    """The cells of SQLite result rows ``(idx, bucket, grp, packed)``."""
    found = []
    for row in rows:
        # NULL: no events (a custom aggregate that never stepped); COUNT alone is a number.
        packed = "0" if row.packed is None else str(row.packed)
        if packed.partition(";")[0] != "0":  # a question without events has no cell
            cell: Cell = (_bucket_value(row.bucket), row.grp)
            found.append((int(row.idx), cell, _sqlite_partial(meter, packed)))
    return found
