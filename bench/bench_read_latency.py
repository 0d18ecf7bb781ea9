"""Benchmark: how long an API read takes while a billing run of N subscriptions is under way.

Run: ``python -m bench read_latency [-- --subscriptions 10000 --stores sqlite,postgres --rounds 3
--readers thread,process --pause-ms 5 --library-sample 200]``.

For each store (a SQLite file in WAL mode in a temporary directory; PostgreSQL at ``--pg-url``, a
database this benchmark owns):

0. Setup, not measured: ``bench billing``'s workload (:func:`bench.billing_setup.prepare`):
   ``--subscriptions`` monthly subscriptions due at once, one customer each, 100 events each
   (about 1 million events for 10,000), one in four with a coupon and a tax. The prepared database
   is then kept as a template (a copy of the SQLite file; ``CREATE DATABASE ... TEMPLATE`` on
   PostgreSQL), and every run below starts from a fresh copy of it.
1. Idle reads: the reader (below) alone for ``--idle-seconds``, for reference.
2. ``--rounds`` rounds, each of billing runs from the template, in an order that rotates from
   round to round: one ``billing.run_due()`` over all due subscriptions (batches of 500) in the
   main thread, once without reads and once per ``--readers`` mode with a reader issuing reads in
   a loop for as long as the run lasts, with ``--pause-ms`` between reads: in turn
   ``scoped.customers.get(id)``, ``scoped.invoices.list(customer_id=..., limit=10)`` and
   ``scoped.usage.for_meter(...)`` (a SUM over one customer's first month, 50 events), each for a
   random customer. The reader is

   - ``thread``: a thread of the billing run's process, on the same ``Billing`` (a host that
     serves its API and runs ``run_due`` in one process);
   - ``process``: another process with its own ``Billing`` on the same database (``billingkit
     serve`` beside ``billingkit worker``).

   Every run is checked (all invoices issued, no failure, no failed read).

Printed per round: the run's seconds without and with each reader and their ratio (is the run
slower with reads beside it?), and the reads' latency p50 / p99 / max during the run, overall and
per kind; then the median and spread (min..max) over the rounds. Target: p99 under 50 ms on
SQLite (the thread reader: the brief's setting).

A thread reader shares the GIL with the run: each time a read gives it up for the database, it
waits for the run's thread to give it back (up to ``sys.getswitchinterval()``, 5 ms, per
statement, and longer on a machine with more runnable threads than cores), and a full garbage
collection in the run's thread holds it throughout. The process reader shows what the database
alone costs a read.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.billing_setup import prepare
from bench.billing_workload import RUN_AT, T0, Cohort
from bench.stores import DEFAULT_PG_URL, Store, checkpoint, libpq_url, pg_database
from billingkit import Billing, Scoped, SqlStorage, TestClock

TARGET_P99_MS = 50.0
MONTH = timedelta(days=31)


@dataclass
class Samples:
    """Read latencies in seconds, by kind."""

    by_kind: dict[str, list[float]] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)

    def add(self, kind: str, seconds: float) -> None:
        self.by_kind.setdefault(kind, []).append(seconds)

    def all(self) -> list[float]:
        return [s for values in self.by_kind.values() for s in values]


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by nearest rank; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def summary_ms(values: list[float]) -> str:
    return (
        f"n={len(values):,} p50 {percentile(values, 0.5) * 1e3:.1f} ms, "
        f"p99 {percentile(values, 0.99) * 1e3:.1f} ms, max {max(values, default=0) * 1e3:.1f} ms"
    )


# -- the template --------------------------------------------------------------------------------


class Template:
    """The prepared database, kept aside so each run starts from the same state."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.run_url = store.url
        if store.kind == "sqlite":
            path = Path(store.url.removeprefix("sqlite:///"))
            checkpoint(store)  # wal_checkpoint(TRUNCATE): the file alone is the database
            self._path, self._copy = path, path.with_name("template.db")
            shutil.copyfile(path, self._copy)
        else:
            name, self._admin = pg_database(store.url)
            self._template, self._run = name, f"{name}_run"
            self.run_url = store.url.rsplit("/", 1)[0] + f"/{self._run}"

    def restore(self) -> str:
        """A fresh copy of the prepared database; returns its URL."""
        if self.store.kind == "sqlite":
            for suffix in ("-wal", "-shm"):
                Path(f"{self._path}{suffix}").unlink(missing_ok=True)
            shutil.copyfile(self._copy, self._path)
            return self.run_url
        import psycopg

        with psycopg.connect(self._admin, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self._run}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{self._run}" TEMPLATE "{self._template}" STRATEGY FILE_COPY')
        with psycopg.connect(libpq_url(self.run_url), autocommit=True) as conn:
            conn.execute("ANALYZE")
            conn.execute("CHECKPOINT")
        return self.run_url


# -- the reader ----------------------------------------------------------------------------------


@dataclass
class Targets:
    """What the reads ask for: customers (id, external id) and the SUM meter."""

    customers: list[tuple[str, str]]
    meter_id: str


def targets_of(billing: Billing, store: Store) -> Targets:
    engine = billing.storage.engine  # type: ignore[attr-defined]
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id, external_id FROM customers WHERE tenant_id = :t AND environment_id = :e"),
            {"t": store.tenant_id, "e": store.environment_id},
        ).all()
    scoped = billing.scope(store.tenant_id, store.environment_id)
    meter = next(m for m in scoped.meters.list().items if m.event_name == "storage.write")
    return Targets([(r.id, r.external_id) for r in rows], meter.id)


def reads(scoped: Scoped, targets: Targets, rnd: random.Random) -> list[tuple[str, Callable[[], Any]]]:
    def customer() -> tuple[str, str]:
        return rnd.choice(targets.customers)

    return [
        ("customers.get", lambda: scoped.customers.get(customer()[0])),
        ("invoices.list", lambda: scoped.invoices.list(customer_id=customer()[0], limit=10)),
        (
            "usage.for_meter",
            lambda: scoped.usage.for_meter(
                targets.meter_id, external_customer_id=customer()[1], start_time=T0, end_time=T0 + MONTH
            ),
        ),
    ]


def read_loop_until(
    calls: list[tuple[str, Callable[[], Any]]],
    stopped: Callable[[], bool],
    wait: Callable[[float], Any],
    samples: Samples,
    pause: float,
) -> None:
    n = 0
    try:
        while not stopped():
            kind, call = calls[n % len(calls)]
            started = time.perf_counter()
            call()
            samples.add(kind, time.perf_counter() - started)
            n += 1
            if pause:
                wait(pause)
    except BaseException as exc:  # reported by the caller
        samples.errors.append(exc)


def read_loop(
    scoped: Scoped, targets: Targets, stop: threading.Event, samples: Samples, pause: float, seed: int
) -> None:
    calls = reads(scoped, targets, random.Random(seed))
    read_loop_until(calls, stop.is_set, stop.wait, samples, pause)


def start_reader(
    billing: Billing, store: Store, targets: Targets, pause: float, seed: int
) -> tuple[threading.Thread, threading.Event, Samples]:
    stop, samples = threading.Event(), Samples()
    scoped = billing.scope(store.tenant_id, store.environment_id)
    thread = threading.Thread(
        target=read_loop, args=(scoped, targets, stop, samples, pause, seed), daemon=True
    )
    thread.start()
    return thread, stop, samples


def _process_reader(
    url: str,
    scope: tuple[str, str],
    targets: Targets,
    pause: float,
    seed: int,
    ready: Any,
    stop: Any,
    results: Any,
) -> None:
    """The reader in another process: its own ``Billing`` on ``url``; puts its samples (and any
    error) on ``results`` once ``stop`` is set."""
    samples = Samples()
    billing = Billing(SqlStorage.from_url(url, migrate=False), TestClock(RUN_AT))
    try:
        calls = reads(billing.scope(*scope), targets, random.Random(seed))
        for _kind, call in calls:  # warm up (imports, the first connection) before the run starts
            call()
        ready.set()
        read_loop_until(calls, stop.is_set, stop.wait, samples, pause)
    except BaseException as exc:
        samples.errors.append(exc)
        ready.set()
    finally:
        billing.close()
        results.put((samples.by_kind, [repr(e) for e in samples.errors]))


class ProcessReader:
    """A reader process (``spawn``: a fresh interpreter, as a separate server would be)."""

    def __init__(self, url: str, store: Store, targets: Targets, pause: float, seed: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._ready, self._stop, self._results = context.Event(), context.Event(), context.Queue()
        scope = (store.tenant_id, store.environment_id)
        self._process = context.Process(
            target=_process_reader,
            args=(url, scope, targets, pause, seed, self._ready, self._stop, self._results),
            daemon=True,
        )
        self._process.start()
        if not self._ready.wait(120):
            raise SystemExit("the reader process did not start")

    def finish(self) -> Samples:
        self._stop.set()
        by_kind, errors = self._results.get(timeout=60)
        self._process.join(30)
        if errors:
            raise SystemExit(f"a read failed: {errors[0]}")
        return Samples(by_kind=by_kind)


# -- one run ---------------------------------------------------------------------------------------


@dataclass
class Run:
    seconds: float
    samples: Samples | None


def billing_run(
    store: Store, url: str, size: int, *, reader: str, args: argparse.Namespace, seed: int
) -> Run:
    """One run from the template, with ``reader`` ("", "thread" or "process") reading beside it."""
    billing = Billing(SqlStorage.from_url(url, migrate=False), TestClock(RUN_AT))
    try:
        targets = targets_of(billing, store)
        pause = args.pause_ms / 1000
        thread = stop = samples = process = None
        if reader == "thread":
            thread, stop, samples = start_reader(billing, store, targets, pause, seed)
        elif reader == "process":
            process = ProcessReader(url, store, targets, pause, seed)
        gc.collect()
        if args.gc_freeze:
            gc.freeze()  # what is alive now (imports, the Billing, the targets) is never walked again
        started = time.perf_counter()
        report = billing.run_due(RUN_AT, keep_invoices=False)
        seconds = time.perf_counter() - started
        if thread is not None and stop is not None:
            stop.set()
            thread.join(30)
        if process is not None:
            samples = process.finish()
        if report.failures or report.invoice_count != size:
            raise SystemExit(
                f"the run issued {report.invoice_count:,} invoices, failures {report.failures[:3]}"
            )
        if samples is not None and samples.errors:
            raise SystemExit(f"a read failed: {samples.errors[0]!r}")
        return Run(seconds, samples)
    finally:
        billing.close()
        if args.gc_freeze:
            gc.unfreeze()


def idle_reads(store: Store, url: str, args: argparse.Namespace) -> Samples:
    billing = Billing(SqlStorage.from_url(url, migrate=False), TestClock(RUN_AT))
    try:
        targets = targets_of(billing, store)
        thread, stop, samples = start_reader(billing, store, targets, args.pause_ms / 1000, 1)
        time.sleep(args.idle_seconds)
        stop.set()
        thread.join(30)
        if samples.errors:
            raise SystemExit(f"a read failed: {samples.errors[0]!r}")
        return samples
    finally:
        billing.close()


# -- per store -------------------------------------------------------------------------------------


def run_store(store: Store, args: argparse.Namespace) -> dict[str, list[float]]:
    print(f"-- {store.kind}: {store.url}")
    size = args.subscriptions
    cohort = Cohort("main", T0, RUN_AT, size, 0, adjusted_every=4)
    prepare(store, [cohort], args)
    template = Template(store)
    url = template.restore()
    idle = idle_reads(store, url, args)
    print(f"  idle reads (no run, a thread): {summary_ms(idle.all())}")
    figures: dict[str, list[float]] = {"without": []}
    modes = ["", *args.readers]
    for round_number in range(args.rounds):
        shift = round_number % len(modes)
        runs: dict[str, Run] = {}
        for reader in modes[shift:] + modes[:shift]:
            url = template.restore()
            runs[reader] = billing_run(store, url, size, reader=reader, args=args, seed=round_number)
        plain = runs[""]
        figures["without"].append(plain.seconds)
        print(f"  round {round_number + 1}: run {plain.seconds:.2f}s without reads")
        for reader in args.readers:
            run = runs[reader]
            assert run.samples is not None
            latencies = run.samples.all()
            ratio = run.seconds / plain.seconds
            for name, value in (
                ("with", run.seconds),
                ("ratio", ratio),
                ("p50", percentile(latencies, 0.5) * 1e3),
                ("p99", percentile(latencies, 0.99) * 1e3),
                ("max", max(latencies, default=0) * 1e3),
            ):
                figures.setdefault(f"{reader} {name}", []).append(value)
            during = summary_ms(latencies)
            print(f"    {reader} reader: run {run.seconds:.2f}s (x{ratio:.3f}); reads during it: {during}")
            for kind, values in run.samples.by_kind.items():
                print(f"      {kind:<16} {summary_ms(values)}")
    return figures


def spread(values: list[float], unit: str, digits: int = 1) -> str:
    return (
        f"{statistics.median(values):.{digits}f}{unit} ({min(values):.{digits}f}..{max(values):.{digits}f})"
    )


def main(argv: list[str]) -> None:
    """Print the read latency during a billing run, and the run's time with and without reads."""
    parser = argparse.ArgumentParser(prog="python -m bench read_latency")
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=3, help="each: a run without reads and one per reader")
    parser.add_argument(
        "--readers", default="thread,process", help="where the reads run: thread and/or process"
    )
    parser.add_argument("--pause-ms", type=float, default=5.0, help="between two reads of the reader")
    parser.add_argument("--idle-seconds", type=float, default=3.0, help="reads alone, for reference")
    parser.add_argument("--library-sample", type=int, default=200, help="made through the library")
    parser.add_argument("--seed", type=int, default=20260201)
    parser.add_argument(
        "--pg-url",
        default=DEFAULT_PG_URL.replace("billingkit_bench", "billingkit_bench_reads"),
        help="a database this benchmark may wipe (and <name>_run beside it)",
    )
    parser.add_argument(
        "--switch-interval-ms",
        type=float,
        default=None,
        help="sys.setswitchinterval for this process (default: Python's, 5 ms): how long a thread "
        "waiting for the GIL waits before the running thread is asked to give it up",
    )
    parser.add_argument(
        "--gc-freeze", action="store_true", help="gc.freeze() after the setup, as a long-lived host may"
    )
    args = parser.parse_args(argv)
    if args.switch_interval_ms is not None:
        sys.setswitchinterval(args.switch_interval_ms / 1000)
    args.readers = [r.strip() for r in args.readers.split(",") if r.strip()]
    if not args.readers or set(args.readers) - {"thread", "process"}:
        raise SystemExit("--readers takes thread and/or process")
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = set(stores) - {"sqlite", "postgres"}
    if unknown:
        raise SystemExit(f"unknown store(s) {sorted(unknown)}; use sqlite and/or postgres")
    print(
        f"switch interval {sys.getswitchinterval() * 1000:g} ms, "
        f"gc.freeze() {'after the setup' if args.gc_freeze else 'not called'}; "
        f"workload: a billing run of {args.subscriptions:,} due subscriptions (bench billing's), a reader "
        f"({', '.join(args.readers)}) beside it, {args.pause_ms:g} ms between reads; {args.rounds} rounds; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_reads_") as tmp:
        for kind in stores:
            url = f"sqlite:///{Path(tmp) / 'billing.db'}" if kind == "sqlite" else args.pg_url
            results[kind] = run_store(Store(kind, url), args)

    print()
    print(f"median (min..max) over {args.rounds} rounds:")
    print("| store | reader | run without reads | run with reads | ratio | read p50 | read p99 | read max |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, f in results.items():
        for reader in args.readers:
            runs = f"{spread(f['without'], ' s', 2)} | {spread(f[f'{reader} with'], ' s', 2)}"
            print(
                f"| {kind} | {reader} | {runs} | "
                f"{spread(f[f'{reader} ratio'], '', 3)} | {spread(f[f'{reader} p50'], ' ms')} | "
                f"{spread(f[f'{reader} p99'], ' ms')} | {spread(f[f'{reader} max'], ' ms')} |"
            )
    if "sqlite" in results:
        reader = "thread" if "thread" in args.readers else args.readers[0]
        p99 = statistics.median(results["sqlite"][f"{reader} p99"])
        verdict = "met" if p99 < TARGET_P99_MS else "NOT met"
        target = f"read p99 under {TARGET_P99_MS:g} ms on SQLite during the run ({reader} reader)"
        print(f"target: {target}: {verdict} ({p99:.1f} ms)")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
