"""Benchmark: usage aggregation through the library against the same SUM as one plain SQL statement.

Run: ``python -m bench usage [-- --preload 300000 --samples 300 --repeats 3 --stores sqlite,postgres]``.

For each store (a SQLite file in a temporary directory; PostgreSQL at ``--pg-url``, a database this
benchmark owns and resets), the table is built as ``bench ingest`` builds it (same preload: random
ids, 1,000 customers, timestamps over three months, ``{"tokens": n, "model": "m1"}``), then:

1. single, library vs raw: SUM of ``tokens`` over one customer's calendar month (February) for
   ``--samples`` random customers, each asked twice in random order: through the library
   (``scoped.usage.aggregate``, a unit of work per call, like any caller) and as the best plain
   statement on the stored rows through the bare driver on its own connection (autocommit, no
   transaction; PostgreSQL prepared): ``SELECT sum(properties ->> '$.tokens')`` (SQLite: JSON
   integers summed exactly by SQLite) or ``sum((properties ->> 'tokens')::numeric)`` (PostgreSQL),
   ``WHERE`` scope, customer, event name and window, served by the index ``ix_events_usage``.
   Both answers must be equal. p50 and p90 of each and the ratio of the p50s (target <= 2.0),
   for ``--repeats`` rounds, then the median and the range of the ratios;
2. batch: one call with the February SUM of all 1,000 customers (one statement); the median of
   three calls in seconds (target: < 2 s), each answer checked against the single answers.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench.bench_ingest import EVENT_NAME, Workload, prepare
from bench.stores import DEFAULT_PG_URL, Store, libpq_url, sqlite_path
from billingkit import Billing, SqlStorage
from billingkit.domain.usage import AggregationType, MeterSpec, UsageQuery
from billingkit.storage.sql.types import sqlite_time

TARGET_RATIO = 2.0
TARGET_BATCH_S = 2.0
FEBRUARY = (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC))
METER = MeterSpec(EVENT_NAME, AggregationType.SUM, "tokens")
_WHERE = (
    "FROM events WHERE tenant_id = {m} AND environment_id = {m} AND external_customer_id = {m}"
    " AND event_name = {m} AND timestamp >= {m} AND timestamp < {m}"
)
RAW_SQL = {
    "sqlite": "SELECT sum(properties ->> '$.tokens') " + _WHERE.format(m="?"),
    "postgres": "SELECT sum((properties ->> 'tokens')::numeric) " + _WHERE.format(m="%s"),
}


def raw_sum(store: Store) -> tuple[Callable[[str], Decimal], Callable[[], None]]:
    """The plain statement through the bare driver on its own connection: ``(ask, close)``."""
    if store.kind == "sqlite":
        conn = sqlite3.connect(sqlite_path(store), isolation_level=None, check_same_thread=False)
        start, end = (sqlite_time(t) for t in FEBRUARY)

        def ask_sqlite(customer: str) -> Decimal:
            params = (store.tenant_id, store.environment_id, customer, EVENT_NAME, start, end)
            found = conn.execute(RAW_SQL["sqlite"], params).fetchone()[0]
            return Decimal(found or 0)

        return ask_sqlite, conn.close
    import psycopg

    pg = psycopg.connect(libpq_url(store.url), autocommit=True)

    def ask_pg(customer: str) -> Decimal:
        params = (store.tenant_id, store.environment_id, customer, EVENT_NAME, *FEBRUARY)
        row = pg.execute(RAW_SQL["postgres"], params, prepare=True).fetchone()
        return Decimal((row[0] if row else None) or 0)

    return ask_pg, pg.close


def _p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=10)[q - 1] if q != 5 else statistics.median(values)


def run_store(store: Store, args: argparse.Namespace) -> dict[str, Any]:
    workload = Workload(customers=1000, seed=args.seed)
    prepare(store, args, workload)
    storage = SqlStorage.from_url(store.url)
    billing = Billing(storage)
    scoped = billing.scope(store.tenant_id, store.environment_id)
    rnd = random.Random(args.seed + 1)
    raw, close_raw = raw_sum(store)

    def library(customer: str) -> Decimal:
        (result,) = scoped.usage.aggregate([UsageQuery(METER, *FEBRUARY, frozenset({customer}))])
        return result.value

    for customer in rnd.sample(workload.customers, 50):  # warm caches, connections, prepared statements
        assert library(customer) == raw(customer), customer
    ratios: list[float] = []
    checked: dict[str, Decimal] = {}
    rounds = []
    for round_no in range(1, args.repeats + 1):
        times: dict[str, list[float]] = {"library": [], "raw": []}
        for customer in rnd.sample(workload.customers, min(args.samples, len(workload.customers))):
            # Each customer once through each path, in random order: whichever runs first reads
            # the customer's pages into the caches, so neither path always gets them warm.
            order = [("library", library), ("raw", raw)]
            rnd.shuffle(order)
            answers = {}
            for name, ask in order:
                started = time.perf_counter()
                answers[name] = ask(customer)
                times[name].append((time.perf_counter() - started) * 1000)
            assert answers["library"] == answers["raw"], (customer, answers)
            checked[customer] = answers["library"]
        lib50, raw50 = _p(times["library"], 5), _p(times["raw"], 5)
        ratios.append(lib50 / raw50)
        rounds.append((lib50, _p(times["library"], 9), raw50, _p(times["raw"], 9)))
        lib90, raw90 = rounds[-1][1], rounds[-1][3]
        print(
            f"  round {round_no}: single customer-month SUM p50/p90 library {lib50:.3f}/{lib90:.3f} ms,"
            f" raw {raw50:.3f}/{raw90:.3f} ms, ratio {ratios[-1]:.2f}"
        )
    close_raw()

    queries = [UsageQuery(METER, *FEBRUARY, frozenset({c})) for c in workload.customers]
    batch_times = []
    for _ in range(3):
        started = time.perf_counter()
        results = scoped.usage.aggregate(queries)
        batch_times.append(time.perf_counter() - started)
    for customer, result in zip(workload.customers, results, strict=True):
        if customer in checked:
            assert result.value == checked[customer], customer
    events_in_batch = sum(r.event_count for r in results)
    billing.close()

    ratio = statistics.median(ratios)
    print(
        f"  library / raw p50: median {ratio:.2f} (range {min(ratios):.2f}-{max(ratios):.2f}, "
        f"{args.repeats} rounds of {min(args.samples, len(workload.customers))} customers, "
        f"~{events_in_batch / len(workload.customers):.0f} events each) target <= {TARGET_RATIO:g}: "
        f"{'met' if ratio <= TARGET_RATIO else 'MISSED'}"
    )
    batch = statistics.median(batch_times)
    print(
        f"  batch of 1,000 customer-months: {batch:.3f} s (median of 3; {events_in_batch:,} events) "
        f"target < {TARGET_BATCH_S:g} s: {'met' if batch < TARGET_BATCH_S else 'MISSED'}"
    )
    return {"ratio": ratio, "ratios": ratios, "rounds": rounds, "batch_s": batch}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench usage")
    parser.add_argument("--preload", type=int, default=300_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument(
        "--pg-url", default=DEFAULT_PG_URL.replace("billingkit_bench", "billingkit_bench_usage")
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.set_defaults(alerts=False)  # bench_ingest.prepare's --alerts: this benchmark sets none
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="billingkit-bench-usage-") as tmp:
        for kind in args.stores.split(","):
            url = f"sqlite:///{Path(tmp) / 'usage.db'}" if kind == "sqlite" else args.pg_url
            print(f"-- {kind}")
            run_store(Store(kind=kind, url=url), args)
