"""Benchmark: usage aggregation over a table of 1,000,000 events across 1,000 customers.

Run: ``python -m bench usage [-- --preload 1000000 --samples 200 --stores sqlite,postgres]``.

For each store (a SQLite file in a temporary directory; PostgreSQL at ``--pg-url``, a database this
benchmark owns and resets), the table is built as ``bench ingest`` builds it (same preload: random
ids, 1,000 customers, timestamps over three months, ``{"tokens": n, "model": "m1"}``; about 330
events per customer-month), then through the library (``scoped.usage.aggregate``, a unit of work
per call, like any caller):

1. single: SUM of ``tokens`` over one customer's calendar month (February), for ``--samples``
   random customers; p50 and p90 in milliseconds (target: p50 < 10 ms);
2. batch: one call with the February SUM of all 1,000 customers (one statement); the median of
   three runs in seconds (target: < 2 s).

Each figure is checked against a plain SQL sum of the same rows, so a fast wrong answer fails.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from sqlalchemy import text

from bench.bench_ingest import DEFAULT_PG_URL, EVENT_NAME, Store, Workload, prepare
from billingkit import Billing, SqlStorage
from billingkit.domain.usage import AggregationType, MeterSpec, UsageQuery

TARGET_P50_MS = 10.0
TARGET_BATCH_S = 2.0
FEBRUARY = (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC))
METER = MeterSpec(EVENT_NAME, AggregationType.SUM, "tokens")


def _plain_sum(storage: SqlStorage, store: Store, customer: str) -> Decimal:
    """The check: a direct SQL sum over the same rows (integers, so exact on both stores)."""
    value = (
        "(properties ->> 'tokens')::numeric"
        if store.kind == "postgres"
        else "json_extract(properties, '$.tokens')"
    )
    start, end = (
        FEBRUARY if store.kind == "postgres" else (t.strftime("%Y-%m-%d %H:%M:%S.%f") for t in FEBRUARY)
    )
    with storage.engine.connect() as conn:
        found = conn.execute(
            text(
                f"SELECT coalesce(sum({value}), 0) FROM events WHERE tenant_id = :t AND environment_id = :e"
                " AND external_customer_id = :c AND event_name = :n AND timestamp >= :s AND timestamp < :u"
            ),
            {
                "t": store.tenant_id,
                "e": store.environment_id,
                "c": customer,
                "n": EVENT_NAME,
                "s": start,
                "u": end,
            },
        ).scalar_one()
    return Decimal(found)


def run_store(store: Store, args: argparse.Namespace) -> dict[str, float]:
    workload = Workload(customers=1000, seed=args.seed)
    prepare(store, args, workload)
    storage = SqlStorage.from_url(store.url)
    billing = Billing(storage)
    scoped = billing.scope(store.tenant_id, store.environment_id)
    rnd = random.Random(args.seed + 1)

    def one(customer: str) -> Decimal:
        (result,) = scoped.usage.aggregate([UsageQuery(METER, *FEBRUARY, frozenset({customer}))])
        return result.value

    for customer in rnd.sample(workload.customers, 20):  # warm caches and connections
        one(customer)
    timings = []
    sampled = rnd.sample(workload.customers, min(args.samples, len(workload.customers)))
    checked: dict[str, Decimal] = {}
    for customer in sampled:
        started = time.perf_counter()
        checked[customer] = one(customer)
        timings.append((time.perf_counter() - started) * 1000)
    for customer in sampled[:20]:
        assert checked[customer] == _plain_sum(storage, store, customer), customer

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

    quantiles = statistics.quantiles(timings, n=10)
    figures = {
        "p50_ms": statistics.median(timings),
        "p90_ms": quantiles[8],
        "batch_s": statistics.median(batch_times),
        "batch_events": float(events_in_batch),
        "events_per_customer_month": events_in_batch / len(workload.customers),
    }
    print(
        f"  single customer-month SUM: p50 {figures['p50_ms']:.2f} ms, p90 {figures['p90_ms']:.2f} ms "
        f"({len(timings)} customers, ~{figures['events_per_customer_month']:.0f} events each) "
        f"target p50 < {TARGET_P50_MS:g} ms: {'met' if figures['p50_ms'] < TARGET_P50_MS else 'MISSED'}"
    )
    print(
        f"  batch of 1,000 customer-months: {figures['batch_s']:.3f} s (median of 3; "
        f"{events_in_batch:,} events) target < {TARGET_BATCH_S:g} s: "
        f"{'met' if figures['batch_s'] < TARGET_BATCH_S else 'MISSED'}"
    )
    return figures


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench usage")
    parser.add_argument("--preload", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument(
        "--pg-url", default=DEFAULT_PG_URL.replace("billingkit_bench", "billingkit_bench_usage")
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="billingkit-bench-usage-") as tmp:
        for kind in args.stores.split(","):
            url = f"sqlite:///{Path(tmp) / 'usage.db'}" if kind == "sqlite" else args.pg_url
            print(f"-- {kind}")
            run_store(Store(kind=kind, url=url), args)
