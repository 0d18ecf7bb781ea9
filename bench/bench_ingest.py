"""Benchmark: bulk usage event ingestion into a large events table, raw driver vs library vs HTTP.

Run: ``python -m bench ingest [-- --preload 1000000 --batches 20 --rounds 5 --stores sqlite,postgres
--no-profile --alerts --alert-customers 20 --immediate-share 0.1]``.

For each store (a SQLite file in a temporary directory; PostgreSQL at ``--pg-url``, a database this
benchmark owns: it is created when missing and its ``public`` schema is dropped and recreated):

0. the schema is created with billingkit's migrations, a tenant is bootstrapped, a SUM meter is
   created for the event name (so every event is matched) and an ``event_ingestor`` API key is
   issued; then the ``events`` table is preloaded with ``--preload`` events (1,000 customers,
   random event ids, timestamps spread over three months, properties ``{"tokens": n, "model":
   "m1"}``) with the fastest bare-driver path (sqlite3 ``executemany`` in id order with the
   secondary indexes built afterwards; psycopg ``COPY`` with the indexes built afterwards). The
   preload is not measured.
1. Three ways of ingesting batches of 1,000 new events (fresh random ids) are measured, interleaved
   for ``--rounds`` rounds of ``--batches`` batches each:

   a. raw: the bare driver (``sqlite3`` / ``psycopg``, no SQLAlchemy) runs the statement the library
      runs, one multi-row ``INSERT ... ON CONFLICT (tenant_id, environment_id, id) DO NOTHING
      RETURNING id`` per batch, in one transaction per batch, from rows already in the form the
      driver takes (timestamps as the column stores them, properties as JSON text). It is the
      floor: what the database and its driver cost. (On PostgreSQL the library sends a batch as
      four 250-row statements in psycopg's pipeline mode, validating each part while the server
      inserts the one before; for the bare driver the two forms cost the same, measured in
      docs/performance.md, so the floor stays one statement.)
   b. library: ``scoped.events.ingest_bulk(batch)`` in process, batches of 1,000 dicts in wire
      form (ISO 8601 timestamp strings, properties dicts): validation, the insert, meter matching,
      the commit.
   c. HTTP: ``billingkit serve`` (uvicorn) in a subprocess on the same database; this process
      POSTs pre-encoded ``{"events": [...]}`` bodies of 1,000 events to ``/v1/events/bulk`` over
      one keep-alive connection, with the ``event_ingestor`` key.

   Each round starts from the same state: its inputs built beforehand and a checkpoint just done
   (PostgreSQL ``CHECKPOINT``, SQLite ``wal_checkpoint(TRUNCATE)``: after a checkpoint
   PostgreSQL logs whole pages again, which makes the next batches up to 1.5x slower). Within a
   round the modes take turns batch by batch, the first of each turn rotating (and the mode that
   opens a round, from round to round), and each call is timed alone after a full garbage
   collection (``--interleave batch``, the default): the
   database's own speed drifts by up to 1.3x between rounds, and taking turns makes every mode
   meet the same drift, so the ratios measure the modes and not the moment each ran.
   ``--interleave mode`` runs each mode's batches in a row after a checkpoint of its own, as
   before. The figure of each mode is the median over the rounds of events per second; the
   ratios b/a and c/a are of the medians (targets, issue 22: b/a >= 0.90, c/a >= 0.80).
   With ``--alerts`` (issue 17), the first ``--alert-customers`` customers also get a subscription
   (started at the start of the events' three months, so its current period holds a month of
   their usage) to a plan pricing the meter, a spend alert on it, a prepaid wallet with balance
   alerts, and the metered feature has alert settings; a fourth mode is measured in the same
   rounds:

   d. library with alerts: as (b), with ``evaluate_alerts_immediately`` on ``--immediate-share``
      of the batches (every ``round(1 / share)``-th): those evaluate the alerts of the customers
      the batch touched before returning (invoice previews of their subscriptions, their wallets'
      real-time balances). The ratio d/b is the target (issue 17: d/b >= 0.90). Without the flag
      ingestion reads no alert at all, so (b) is ingestion with the alerts configured and without
      them alike.

2. Unless ``--no-profile``: where (b)'s time goes, over ``--profile-batches`` more batches: the
   wall-clock time of its parts (validation, the insert, the meter lookup, the commit, the unit of
   work), then a cProfile, top functions by cumulative time.

The PostgreSQL database is left in place (it is reset at the next run); the SQLite file is removed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.ingest_alerts import configure_alerts
from bench.ingest_http import HttpIngest, http_server
from bench.ingest_profile import profile_ingestion
from bench.stores import (
    COLUMNS,
    DEFAULT_PG_URL,
    Store,
    checkpoint,
    count_events,
    libpq_url,
    preload_postgres,
    preload_sqlite,
    reset_postgres,
    sqlite_connect,
)
from billingkit import Billing, SqlStorage
from billingkit.storage.sql.types import sqlite_time  # how UtcDateTime stores instants on SQLite

TARGET_LIBRARY = 0.90
TARGET_HTTP = 0.80
TARGET_ALERTS = 0.90
EVENT_NAME = "llm.tokens"
PERIOD_START = datetime(2026, 1, 1, tzinfo=UTC)
PERIOD_SECONDS = 90 * 86400  # three months


# -- the workload -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    event_id: str
    customer: str
    timestamp: datetime
    tokens: int


class Workload:
    """Random events: 1,000 customers, random ids, timestamps over three months (millisecond
    precision), ``tokens`` 1..5,000."""

    def __init__(self, customers: int, seed: int) -> None:
        self.random = random.Random(seed)
        self.customers = [f"cust-{i:04d}" for i in range(customers)]

    def events(self, n: int) -> list[Event]:
        rnd = self.random
        return [
            Event(
                f"evt_{rnd.getrandbits(128):032x}",
                rnd.choice(self.customers),
                PERIOD_START + timedelta(milliseconds=rnd.randrange(PERIOD_SECONDS * 1000)),
                rnd.randint(1, 5000),
            )
            for _ in range(n)
        ]


def wire(events: list[Event]) -> list[dict[str, Any]]:
    """The wire form, as an API client sends it (and as ``ingest_bulk`` takes it)."""
    return [
        {
            "event_id": e.event_id,
            "event_name": EVENT_NAME,
            "external_customer_id": e.customer,
            "timestamp": e.timestamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "properties": {"tokens": e.tokens, "model": "m1"},
        }
        for e in events
    ]


def storage_rows(store: Store, events: list[Event], ingested_at: datetime) -> list[tuple[Any, ...]]:
    """Rows in the form the driver takes for the ``events`` columns (``COLUMNS``)."""
    as_time: Callable[[datetime], Any] = sqlite_time if store.kind == "sqlite" else (lambda t: t)
    ingested = as_time(ingested_at)
    return [
        (
            store.tenant_id,
            store.environment_id,
            e.event_id,
            EVENT_NAME,
            e.customer,
            None,
            as_time(e.timestamp),
            None,
            json.dumps({"tokens": e.tokens, "model": "m1"}),
            ingested,
        )
        for e in events
    ]


# -- setup ----------------------------------------------------------------------------------------


def prepare(store: Store, args: argparse.Namespace, workload: Workload) -> None:
    """Schema, tenant, meter, ingestor key, then the preload (not measured)."""
    started = time.perf_counter()
    if store.kind == "postgres":
        reset_postgres(store.url)
    storage = SqlStorage.from_url(store.url, migrate=True)
    billing = Billing(storage)
    setup = billing.bootstrap(tenant_name="Bench", owner_email="owner@bench.test")
    env = setup.environments[0][0]
    store.tenant_id, store.environment_id = setup.tenant.id, env.id
    scoped = billing.scope(store.tenant_id, store.environment_id)
    meter = scoped.meters.create(
        name="Tokens", event_name=EVENT_NAME, aggregation={"type": "SUM", "field": "tokens"}
    )
    account, _ = scoped.users.create(type="service_account", name="ingest", roles=["event_ingestor"])
    store.api_key = scoped.api_keys.create(name="bench", service_account_id=account.id).api_key
    if args.alerts:
        configure_alerts(scoped, meter.id, workload.customers[: args.alert_customers], PERIOD_START)
    billing.close()

    events = workload.events(args.preload)
    events.sort(key=lambda e: e.event_id)  # primary key order: appends, not random inserts
    rows = storage_rows(store, events, PERIOD_START + timedelta(seconds=PERIOD_SECONDS))
    del events
    if store.kind == "sqlite":
        preload_sqlite(store, rows)
    else:
        preload_postgres(store, rows)
    print(
        f"  preloaded {len(rows):,} events for {len(workload.customers):,} customers "
        f"in {time.perf_counter() - started:.1f}s (not measured)"
    )


# -- (a) raw driver -------------------------------------------------------------------------------


def _multi_row_insert(kind: str, rows: int) -> str:
    """The statement, with ``?`` placeholders (sqlite3) or ``$n`` ones (psycopg's RawCursor)."""
    width = len(COLUMNS)
    if kind == "sqlite":
        groups = ["(" + ", ".join(["?"] * width) + ")"] * rows
    else:
        groups = [
            "(" + ", ".join(f"${i + j}" for j in range(1, width + 1)) + ")"
            for i in range(0, rows * width, width)
        ]
    return (
        f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES {', '.join(groups)} "
        "ON CONFLICT (tenant_id, environment_id, id) DO NOTHING RETURNING id"
    )


class RawIngest:
    """One multi-row ``INSERT ... ON CONFLICT DO NOTHING RETURNING id`` per batch, one transaction
    per batch, on a bare driver connection. sqlite3 caches the compiled statement; on PostgreSQL
    the statement uses ``$n`` placeholders on a ``RawCursor`` (no client-side placeholder
    rewriting, the fastest psycopg form measured) and psycopg prepares it after five uses."""

    def __init__(self, store: Store) -> None:
        self.store = store
        if store.kind == "sqlite":
            self.conn: Any = sqlite_connect(store)
        else:
            import psycopg

            self.conn = psycopg.connect(libpq_url(store.url), cursor_factory=psycopg.RawCursor)
        self.statements: dict[int, str] = {}

    def __call__(self, rows: list[tuple[Any, ...]]) -> int:
        sql = self.statements.get(len(rows))
        if sql is None:
            sql = self.statements[len(rows)] = _multi_row_insert(self.store.kind, len(rows))
        params = [value for row in rows for value in row]
        conn = self.conn
        if self.store.kind == "sqlite":
            conn.execute("BEGIN IMMEDIATE")
            stored = {r[0] for r in conn.execute(sql, params).fetchall()}
            conn.execute("COMMIT")
        else:
            with conn.cursor() as cur:
                cur.execute(sql, params)
                stored = {r[0] for r in cur.fetchall()}
            conn.commit()
        return len(stored)

    def close(self) -> None:
        self.conn.close()


# -- measuring ------------------------------------------------------------------------------------


def _measure(run: Callable[[Any], int], inputs: list[Any], batch_size: int) -> float:
    """Events per second over ``inputs`` (one call each); every event must be new. A full garbage
    collection first, so no mode pays for the garbage of another (or for its own prebuilt input)."""
    gc.collect()
    start = time.perf_counter()
    for item in inputs:
        stored = run(item)
        if stored != batch_size:
            raise SystemExit(f"expected {batch_size} new events, the store took {stored}")
    return len(inputs) * batch_size / (time.perf_counter() - start)


def _measure_interleaved(
    runners: dict[str, Callable[[Any], int]], inputs: dict[str, list[Any]], batch_size: int, first: int = 0
) -> dict[str, float]:
    """Events per second of each mode over its ``inputs``, the modes taking turns batch by batch
    (the first mode of each turn rotating), so that every mode meets the same database: the
    same distance from the last checkpoint, the same autovacuum and the same neighbours' load.
    ``first`` picks the mode that opens the round (pass the round's number): the first batch
    after the checkpoint is the dearest (PostgreSQL logs every page it touches in full), and
    the same mode must not pay it every round. Each call is timed alone, after a full garbage
    collection."""
    modes = list(inputs)
    spent = dict.fromkeys(modes, 0.0)
    for i in range(len(inputs[modes[0]])):
        shift = (first + i) % len(modes)
        turn = modes[shift:] + modes[:shift]
        for mode in turn:
            gc.collect()
            start = time.perf_counter()
            stored = runners[mode](inputs[mode][i])
            spent[mode] += time.perf_counter() - start
            if stored != batch_size:
                raise SystemExit(f"expected {batch_size} new events, the store took {stored}")
    return {mode: len(inputs[mode]) * batch_size / spent[mode] for mode in modes}


def run_store(store: Store, args: argparse.Namespace) -> dict[str, float]:
    print(f"== {store.kind}: {store.url}")
    workload = Workload(args.customers, seed=args.seed)
    prepare(store, args, workload)
    size = args.batch_size

    raw = RawIngest(store)
    billing = Billing(SqlStorage.from_url(store.url, migrate=False))
    scoped = billing.scope(store.tenant_id, store.environment_id)
    modes = "abcd" if args.alerts else "abc"
    every = max(1, round(1 / args.immediate_share)) if args.immediate_share > 0 else 0
    figures: dict[str, list[float]] = {mode: [] for mode in modes}
    with http_server(store.url) as port:
        client = HttpIngest(port, store.api_key)

        def inputs(mode: str, n: int) -> list[Any]:
            batches = [workload.events(size) for _ in range(n)]
            if mode == "a":
                now = datetime.now(UTC)
                return [storage_rows(store, b, now) for b in batches]
            if mode == "b":
                return [wire(b) for b in batches]
            if mode == "d":
                return [(wire(b), bool(every) and i % every == 0) for i, b in enumerate(batches)]
            return [json.dumps({"events": wire(b)}).encode() for b in batches]

        runners: dict[str, Callable[[Any], int]] = {
            "a": raw,
            "b": lambda batch: len(scoped.events.ingest_bulk(batch).accepted_ids),
            "c": client,
            "d": lambda item: len(
                scoped.events.ingest_bulk(item[0], evaluate_alerts_immediately=item[1]).accepted_ids
            ),
        }
        for mode in modes:  # warm up: driver statement caches, pools, the server's first request
            _measure(runners[mode], inputs(mode, 2), size)
        for round_no in range(1, args.rounds + 1):
            line = []
            if args.interleave == "batch":
                prepared = {mode: inputs(mode, args.batches) for mode in modes}
                checkpoint(store)
                client.reconnect()
                rates = _measure_interleaved(runners, prepared, size, first=round_no - 1)
            else:
                rates = {}
                for mode in modes:
                    batches = inputs(mode, args.batches)
                    checkpoint(store)
                    if mode == "c":
                        client.reconnect()
                    rates[mode] = _measure(runners[mode], batches, size)
            for mode in modes:
                figures[mode].append(rates[mode])
                line.append(f"{mode} {rates[mode]:>9,.0f}/s")
            # The round's own ratios: its modes met the same database, batch by batch.
            paired = [f"{m}/a {rates[m] / rates['a']:.2f}" for m in modes if m != "a"]
            print(f"  round {round_no}: " + "   ".join(line) + "   (" + ", ".join(paired) + ")")
        client.close()
    raw.close()

    result = {mode: statistics.median(values) for mode, values in figures.items()}
    expected = args.preload + len(modes) * (2 + args.rounds * args.batches) * size
    stored = count_events(store)
    if stored != expected:
        raise SystemExit(f"the events table has {stored:,} rows, expected {expected:,}")
    if not args.no_profile:
        n = args.profile_batches
        checkpoint(store)
        profile_ingestion(
            scoped.events.ingest_bulk,
            lambda: [wire(workload.events(args.batch_size)) for _ in range(n)],
            batch_size=args.batch_size,
            top=args.top,
        )
    billing.close()
    return result


def main(argv: list[str]) -> None:
    """Print events/s of raw driver, library and HTTP ingestion per store, and their ratios."""
    parser = argparse.ArgumentParser(prog="bench ingest")
    parser.add_argument("--preload", type=int, default=1_000_000, help="events in the table before")
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=20, help="batches per measurement")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of a, b, c")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL, help="a database this benchmark may wipe")
    parser.add_argument("--seed", type=int, default=20260501)
    parser.add_argument(
        "--interleave",
        choices=("batch", "mode"),
        default="batch",
        help="batch: the modes take turns batch by batch within a round (the default); "
        "mode: each mode runs its batches in a row after a checkpoint of its own",
    )
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--profile-batches", type=int, default=10)
    parser.add_argument("--top", type=int, default=25, help="profile rows to show")
    parser.add_argument("--alerts", action="store_true", help="configure alerts and measure (d)")
    parser.add_argument("--alert-customers", type=int, default=20, help="customers with alerts")
    parser.add_argument(
        "--immediate-share", type=float, default=0.1, help="share of (d)'s batches with immediate evaluation"
    )
    args = parser.parse_args(argv)

    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = set(stores) - {"sqlite", "postgres"}
    if unknown:
        raise SystemExit(f"unknown store(s) {sorted(unknown)}; use sqlite and/or postgres")
    print(
        f"workload: {args.preload:,} events preloaded, {args.customers:,} customers; "
        f"{args.rounds} rounds x {args.batches} batches x {args.batch_size:,} events per figure; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_ingest_") as tmp:
        for kind in stores:
            url = f"sqlite:///{Path(tmp) / 'bench.db'}" if kind == "sqlite" else args.pg_url
            results[kind] = run_store(Store(kind, url), args)

    print()
    print(
        "| store | (a) raw driver | (b) library | (c) HTTP | b/a | c/a |"
        + (" (d) alerts | d/b |" if args.alerts else "")
    )
    print("|---|---|---|---|---|---|" + ("---|---|" if args.alerts else ""))
    met = True
    for kind, r in results.items():
        b_a, c_a = r["b"] / r["a"], r["c"] / r["a"]
        met = met and b_a >= TARGET_LIBRARY and c_a >= TARGET_HTTP
        row = f"| {kind} | {r['a']:,.0f}/s | {r['b']:,.0f}/s | {r['c']:,.0f}/s | {b_a:.2f} | {c_a:.2f} |"
        if args.alerts:
            d_b = r["d"] / r["b"]
            met = met and d_b >= TARGET_ALERTS
            row += f" {r['d']:,.0f}/s | {d_b:.2f} |"
        print(row)
    verdict = "met" if met else "NOT met"
    alerts = f", d/b >= {TARGET_ALERTS}" if args.alerts else ""
    print(f"targets b/a >= {TARGET_LIBRARY}, c/a >= {TARGET_HTTP}{alerts}: {verdict}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
