"""Where the library's ingestion time goes (``python -m bench ingest`` without ``--no-profile``):
the wall-clock time of its parts, then a cProfile."""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from bench.timers import Target, timed_calls

__all__ = ["profile_ingestion"]


def _timed_parts() -> AbstractContextManager[dict[str, float]]:
    """Wall-clock seconds spent in the parts of (b) (:func:`bench.timers.timed_calls`).

    The events are validated as the store takes them (``insert_new`` pulls them from a lazy
    iterable), so validation is counted inside ``insert_new``; on PostgreSQL the store sends each
    part of 250 rows without waiting, and only the final wait for the answers is timed apart."""
    from sqlalchemy.engine import Connection

    from billingkit.services import events as service
    from billingkit.storage.sql import events as sql_events
    from billingkit.storage.sql import storage as sql_storage

    targets: list[Target] = [
        (sql_events.SqlEventStore, "insert_new", "insert_new: validation, rows, the INSERT"),
        (service, "parse_event", "  of which validation (parse_event)"),
        (sql_events.SqlEventStore, "_parameters", "  of which building the rows"),
        (Connection, "exec_driver_sql", "  of which statements via SQLAlchemy (SQLite: the INSERT)"),
        (sql_events, "_answers", "  of which waiting for the INSERTs (PostgreSQL)"),
        (service, "meters_for_events", "meters_for_events (meter lookup)"),
        (sql_storage.SqlUnitOfWork, "commit", "commit"),
        (sql_storage.SqlUnitOfWork, "__enter__", "unit of work open (pool, ping)"),
        (sql_storage.SqlUnitOfWork, "__exit__", "unit of work close"),
    ]
    return timed_calls(targets)


def profile_ingestion(
    ingest: Callable[[list[dict[str, Any]]], Any],
    make_batches: Callable[[], list[list[dict[str, Any]]]],
    *,
    batch_size: int,
    top: int,
) -> None:
    """Where (b)'s time goes: timed parts over ``make_batches()``, then cProfile's top ``top``
    functions by cumulative time over another ``make_batches()``."""
    batches = make_batches()
    n = len(batches)
    gc.collect()
    with _timed_parts() as spent:
        start = time.perf_counter()
        for batch in batches:
            ingest(batch)
        total = time.perf_counter() - start
    print(f"  where (b)'s time goes ({n} batches of {batch_size:,}, {total * 1e3 / n:.1f} ms per batch):")
    top_level = 0.0
    for label, seconds in spent.items():
        if not seconds:
            continue
        if not label.startswith(" "):
            top_level += seconds
        print(f"    {label:<48} {seconds * 1e3 / n:7.2f} ms  {seconds / total:6.1%}")
    rest = total - top_level
    print(f"    {'rest (result, matching, bookkeeping)':<48} {rest * 1e3 / n:7.2f} ms  {rest / total:6.1%}")

    batches = make_batches()
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    for batch in batches:
        ingest(batch)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("cumulative").print_stats(top)
    print(f"  cProfile of (b), top {top} by cumulative time (cProfile slows Python calls down):")
    lines = out.getvalue().splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    for line in lines[first:]:
        if line.strip():
            print("    " + line)
