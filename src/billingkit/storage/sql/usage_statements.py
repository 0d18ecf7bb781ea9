"""The statements of :mod:`billingkit.storage.sql.usage`, built once per meter and shape.

A statement's text depends on the dialect, the meter (event name, aggregation, field, filters,
buckets, groups) and the shape of the questions, never on the scope, the customers or the window:
those are bound parameters with fixed names (``:t``, ``:e``, and ``:qc``, ``:qs``, ``:qe`` for a
single question or ``:q``, a JSON table of questions). :func:`prepared` caches the finished text
in the driver's own placeholder style (``:name`` for sqlite3, ``%(name)s`` for psycopg) with the
meter's own parameters, so a usage call runs ``exec_driver_sql`` on a ready string: no SQLAlchemy
compilation, no ``text()`` parsing, and on PostgreSQL one statement text per meter that psycopg
prepares on the server after a few uses.

Shapes (``Shape``):

- ``ONE``: one question (one customer, or all customers) without buckets or groups: a plain
  ``SELECT <aggregate> FROM events WHERE ...`` over one index range (the hot path of entitlement
  checks, previews and single reports);
- ``ROWS``: many questions, one (index, customer) row each, no buckets or groups: on SQLite a
  correlated subquery per question (no temporary B-tree to group the joined rows); on PostgreSQL
  as ``GROUPED``;
- ``GROUPED``: the general join of the question table to the events, grouped by question,
  bucket and group.
"""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache
from typing import Any

from billingkit.domain.usage import AggregationType, BucketSize, MeterSpec
from billingkit.storage.sql.json_props import Fragment, json_number, json_path, json_text

__all__ = ["Shape", "prepared", "statement"]

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


class Shape(Enum):
    """How the questions of one statement are laid out (see the module docstring)."""

    ONE = "one"
    ROWS = "rows"
    GROUPED = "grouped"


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


def _micros_to_end_sql(dialect: str, end: str) -> str:
    if dialect == "postgresql":
        return f"(EXTRACT(EPOCH FROM ({end} - e.timestamp)) * 1000000)"
    return (
        f"((unixepoch(substr({end}, 1, 19)) - unixepoch(substr(e.timestamp, 1, 19))) * 1000000"
        f" + CAST(substr({end}, 21) AS INTEGER) - CAST(substr(e.timestamp, 21) AS INTEGER))"
    )


def _pg_aggregate_sql(meter: MeterSpec, s: str) -> str:
    """PostgreSQL: the aggregate's pieces as columns (the event count is ``events``) over the
    columns of ``s`` (``s.v`` the number, ``s.ts``, ``s.id``, ``s.micros``)."""
    kind = meter.aggregation
    if kind is AggregationType.COUNT:
        return ""
    if kind is AggregationType.COUNT_UNIQUE:
        return f", count(DISTINCT {s}v) AS distinct_count"
    if kind is AggregationType.MAX:
        return f", count({s}v) AS numbers, max({s}v) AS maximum"
    if kind is AggregationType.LATEST:
        latest = f'ORDER BY {s}ts DESC, {s}id COLLATE "C" DESC) FILTER (WHERE {s}v IS NOT NULL))[1]'
        return (
            f", count({s}v) AS numbers, (array_agg({s}v {latest} AS latest,"
            f" (array_agg({s}ts {latest} AS latest_ts, (array_agg({s}id {latest} AS latest_id"
        )
    if kind is AggregationType.WEIGHTED_SUM:
        return f", count({s}v) AS numbers, sum({s}v) AS total, sum({s}v * {s}micros) AS weighted"
    return f", count({s}v) AS numbers, sum({s}v) AS total"


def _sqlite_packed_sql(meter: MeterSpec, c: dict[str, str], exact_integers: bool) -> str:
    """SQLite: one text value ``"<events>;<the aggregate's pieces>"`` over the columns ``c``
    (``v`` the property's JSON literal, ``vt`` its JSON type, ``vi`` its SQL value, ``ts``,
    ``id``, ``micros``); read back by ``usage._sqlite_partial``.

    Sums (SUM, AVG, SUM_WITH_MULTIPLIER) add JSON integers in SQLite itself and hand only the
    other numbers (decimals, numeric strings) to ``bk_sum``: a Python call per event costs more
    than the rest of the query. SQLite adds 64-bit integers exactly and raises on overflow; an
    integer too large for 64 bits is read as a double, which makes the sum a double. Either way
    the reader notices and the caller asks again with ``exact_integers=False`` (every number
    through ``bk_sum``)."""
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


def _questions_sql(dialect: str) -> str:
    """The question table ``q(idx, customer, start_at, end_at)`` read from the JSON parameter
    ``:q`` (a list of ``[idx, customer, start, end]``)."""
    if dialect == "postgresql":
        return (
            "(SELECT (r ->> 0)::int AS idx, r ->> 1 AS customer, (r ->> 2)::timestamptz AS start_at,"
            " (r ->> 3)::timestamptz AS end_at FROM jsonb_array_elements(CAST(:q AS jsonb)) AS r)"
        )
    return (
        "(SELECT json_extract(value, '$[0]') AS idx, json_extract(value, '$[1]') AS customer,"
        " json_extract(value, '$[2]') AS start_at, json_extract(value, '$[3]') AS end_at"
        " FROM json_each(:q))"
    )


def statement(
    dialect: str, meter: MeterSpec, by_customer: bool, shape: Shape, exact_integers: bool = True
) -> tuple[str, dict[str, Any]]:
    """The statement answering questions of ``shape`` for ``meter``, with ``:name`` parameters,
    and the meter's own parameter values (the caller adds ``t``, ``e`` and the questions).

    Result rows: ``ONE`` → one row ``(events, <pieces>)`` on PostgreSQL, ``(packed)`` on SQLite;
    otherwise ``(idx, bucket, grp, events, <pieces>)`` on PostgreSQL and ``(idx, bucket, grp,
    packed)`` on SQLite."""
    sql = Fragment()
    props = "e.properties"
    sqlite = dialect != "postgresql"
    one = shape is Shape.ONE
    if one:
        customer, start, end = ":qc", ":qs", ":qe"
        if not sqlite:
            start, end = "CAST(:qs AS timestamptz)", "CAST(:qe AS timestamptz)"
    else:
        customer, start, end = "q.customer", "q.start_at", "q.end_at"
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
        c["micros"] = _micros_to_end_sql(dialect, end)
    conditions = ["e.tenant_id = :t", "e.environment_id = :e", f"e.event_name = {sql.bind(meter.event_name)}"]
    if by_customer:
        conditions.append(f"e.external_customer_id = {customer}")
    conditions += [f"e.timestamp >= {start}", f"e.timestamp < {end}"]
    for meter_filter in meter.filters:
        values = ", ".join(sql.bind(v) for v in meter_filter.values)
        conditions.append(f"{json_text(dialect, props, meter_filter.key, sql)} IN ({values})")
    if meter.sources:
        conditions.append(f"e.source IN ({', '.join(sql.bind(s) for s in meter.sources)})")
    where = " AND ".join(conditions)
    if one:
        if sqlite:
            packed = _sqlite_packed_sql(meter, c, exact_integers)
            return f"SELECT {packed} AS packed FROM events AS e WHERE {where}", sql.params
        columns = ", ".join(f"{c[name]} AS {name}" for name in ("v", "ts", "id", "micros"))
        text = (
            f"SELECT count(*) AS events{_pg_aggregate_sql(meter, 's.')}"
            f" FROM (SELECT {columns} FROM events AS e WHERE {where}) AS s"
        )
        return text, sql.params
    questions = _questions_sql(dialect)
    if sqlite and shape is Shape.ROWS:
        # One value per question: a correlated subquery walks the index once per question and
        # needs no temporary B-tree to group the joined rows (about four times faster).
        packed = _sqlite_packed_sql(meter, c, exact_integers)
        text = (
            f"SELECT q.idx AS idx, NULL AS bucket, NULL AS grp,"
            f" (SELECT {packed} FROM events AS e WHERE {where}) AS packed FROM {questions} AS q"
        )
        return text, sql.params
    bucket = _bucket_sql(dialect, meter.bucket_size)
    if meter.group_by_source:
        group = "e.source"
    else:
        group = "NULL" if meter.group_by is None else json_text(dialect, props, meter.group_by, sql)
    columns = ", ".join(f"{expression} AS {name}" for name, expression in c.items())
    inner = (
        f"SELECT q.idx AS idx, {bucket} AS bucket, {group} AS grp, {columns}"
        f" FROM {questions} AS q JOIN events AS e ON {where}"
    )
    if sqlite:
        pieces = f", {_sqlite_packed_sql(meter, {name: f's.{name}' for name in c}, exact_integers)} AS packed"
    else:
        pieces = f", count(*) AS events{_pg_aggregate_sql(meter, 's.')}"
    text = f"SELECT s.idx, s.bucket, s.grp{pieces} FROM ({inner}) AS s GROUP BY s.idx, s.bucket, s.grp"
    return text, sql.params


_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@lru_cache(maxsize=512)
def prepared(
    dialect: str, meter: MeterSpec, by_customer: bool, shape: Shape, exact_integers: bool = True
) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """:func:`statement` in the driver's placeholder style, cached per meter and shape (a pure
    function of its arguments; a few hundred meter versions fit). The parameters come back as
    pairs: the caller copies them into a fresh dict per call."""
    text, params = statement(dialect, meter, by_customer, shape, exact_integers)
    if dialect == "postgresql":
        # psycopg's pyformat: a literal % is doubled, :name becomes %(name)s (casts are ::type).
        text = _NAMED.sub(r"%(\1)s", text.replace("%", "%%"))
    return text, tuple(params.items())
