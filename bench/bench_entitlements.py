"""Benchmark: the in-process entitlement check, ``scoped.entitlements.check(customer, feature)``.

Run: ``python -m bench entitlements [-- --customers 1000 --heavy-events 100000 --light-events 100
--checks 2000 --stores sqlite,postgres]``.

For each store (a SQLite file in a temporary directory; PostgreSQL at ``--pg-url``, a database this
benchmark owns and resets), through the library with the system clock:

0. Setup (not measured). Meters ``requests`` (COUNT) and ``tokens`` (SUM of ``tokens``) on
   ``llm.tokens``; plan ``Pro`` (monthly, 20.00 usd) granting 1,000,000 requests and 2,000,000,000
   tokens a month (hard limits) and the boolean ``sso``; ``--customers`` customers, each
   subscribed to Pro since ten days ago (``scoped.subscriptions.create``). Events go in through the
   bare driver as ``bench ingest`` preloads them: the heavy customer (the first) has
   ``--heavy-events`` events in the current period and as many in the period before, every other
   customer ``--light-events`` in the current period.
1. The figures, each a distribution of single calls (one unit of work each, as a host calls it):
   - heavy customer, COUNT and SUM features, cache warm: ``--checks`` checks; after every 20th a
     new event is ingested through the library (not timed), so the usage read after the cached
     head is never empty for long;
   - 1,000 customers, COUNT feature, round robin (one warm-up pass, then three timed passes);
   - a boolean feature (no usage to read), round robin;
   - cold: the same checks with the cache off (``entitlement_cache_ttl=0``), what every check
     would cost without it.
   Target: p50 under 1 ms on SQLite for the warm checks.
2. Checks: the usage each figure's last check reports equals a direct aggregation of the same
   window (``scoped.usage.aggregate``); the heavy customer's is at least ``--heavy-events``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.bench_ingest import EVENT_NAME, Event, storage_rows
from bench.stores import DEFAULT_PG_URL, Store, preload_postgres, preload_sqlite, reset_postgres
from billingkit import Billing, Scoped, Settings, SqlStorage
from billingkit.domain.entitlement_checks import EntitlementCheck
from billingkit.domain.usage import UsageQuery

TARGET_P50_MS = 1.0
TEN_DAYS = timedelta(days=10)
MONTHLY_USD = {"currency": "usd", "billing_period": "MONTHLY"}


def _percentiles(timings: list[float]) -> tuple[float, float]:
    ordered = sorted(timings)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _setup(store: Store, args: argparse.Namespace, now: datetime) -> list[str]:
    """Schema, tenant, catalogue, customers and subscriptions, then the events; returns the
    customers' external ids (the heavy one first)."""
    if store.kind == "postgres":
        reset_postgres(store.url)
    billing = Billing(SqlStorage.from_url(store.url, migrate=True))
    setup = billing.bootstrap(tenant_name="Bench", owner_email="owner@bench.test")
    store.tenant_id, store.environment_id = setup.tenant.id, setup.environments[0][0].id
    scoped = billing.scope(store.tenant_id, store.environment_id)
    requests = scoped.meters.create(name="Requests", event_name=EVENT_NAME, aggregation={"type": "COUNT"})
    tokens = scoped.meters.create(
        name="Tokens", event_name=EVENT_NAME, aggregation={"type": "SUM", "field": "tokens"}
    )
    metered = {"type": "metered"}
    features = {
        "requests": scoped.features.create(
            name="Requests", meter_id=requests.id, lookup_key="requests", **metered
        ),
        "tokens": scoped.features.create(name="Tokens", meter_id=tokens.id, lookup_key="tokens", **metered),
        "sso": scoped.features.create(name="SSO", type="boolean", lookup_key="sso"),
    }
    fee = {"type": "FIXED", "billing_model": "FLAT_FEE", "amount": "20.00", "currency": "usd",
           "billing_period": "MONTHLY", "invoice_cadence": "ADVANCE"}  # fmt: skip
    monthly = {"usage_reset_period": "MONTHLY"}
    plan = scoped.plans.create(
        name="Pro",
        prices=[fee],
        entitlements=[
            {"feature_id": features["requests"].id, "usage_limit": 1_000_000, **monthly},
            {"feature_id": features["tokens"].id, "usage_limit": 2_000_000_000, **monthly},
            {"feature_id": features["sso"].id},
        ],
    )
    started = time.perf_counter()
    customers = [f"cust-{i:04d}" for i in range(args.customers)]
    start = now - TEN_DAYS
    for external_id in customers:
        customer = scoped.customers.create(external_id=external_id, name=external_id)
        scoped.subscriptions.create(customer_id=customer.id, plan_id=plan.id, start_date=start, **MONTHLY_USD)
    made = time.perf_counter() - started
    billing.close()

    rnd = random.Random(args.seed)

    def events(customer: str, n: int, since: datetime, until: datetime) -> list[Event]:
        span = int((until - since).total_seconds() * 1000)
        return [
            Event(
                f"evt_{rnd.getrandbits(128):032x}",
                customer,
                since + timedelta(milliseconds=rnd.randrange(span)),
                rnd.randint(1, 5000),
            )
            for _ in range(n)
        ]

    heavy = customers[0]
    rows = events(heavy, args.heavy_events, start, now - timedelta(minutes=5))
    rows += events(heavy, args.heavy_events, start - timedelta(days=31), start)
    for customer in customers[1:]:
        rows += events(customer, args.light_events, start, now - timedelta(minutes=5))
    rows.sort(key=lambda e: e.event_id)
    stored = storage_rows(store, rows, now)
    (preload_sqlite if store.kind == "sqlite" else preload_postgres)(store, stored)
    if store.kind == "postgres":  # the preload analyzes the events; the library-made rows too
        storage = SqlStorage.from_url(store.url, migrate=False)
        with storage.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
        storage.close()
    print(
        f"  setup: {args.customers:,} customers and subscriptions through the library in {made:.1f}s, "
        f"{len(stored):,} events preloaded (not measured)"
    )
    return customers


def _timed(calls: list[Callable[[], Any]]) -> list[float]:
    timings = []
    for call in calls:
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def _direct(scoped: Scoped, check: EntitlementCheck, customer: str, meter_name: str) -> Any:
    """The same window aggregated directly (no cache), to check a figure's answer."""
    meter = next(m for m in scoped.meters.list().items if m.name == meter_name)
    assert check.window_start is not None and check.window_end is not None
    query = UsageQuery(meter.to_spec(), check.window_start, check.window_end, frozenset({customer}))
    (result,) = scoped.usage.aggregate([query])
    return result.value


def run_store(store: Store, args: argparse.Namespace) -> dict[str, float]:
    now = datetime.now(UTC)
    customers = _setup(store, args, now)
    billing = Billing(SqlStorage.from_url(store.url))
    scoped = billing.scope(store.tenant_id, store.environment_id)
    heavy = customers[0]
    ids = iter(range(10**9))
    figures: dict[str, float] = {}

    def ingest_one() -> None:
        scoped.events.ingest(
            event_name=EVENT_NAME, external_customer_id=heavy, event_id=f"live-{next(ids)}",
            properties={"tokens": 7, "model": "m1"},
        )  # fmt: skip

    def heavy_checks(feature: str, meter_name: str) -> None:
        scoped.entitlements.check(heavy, feature)  # warm the cache (cold cost shown below)
        timings: list[float] = []
        for start in range(0, args.checks, 20):
            batch = min(20, args.checks - start)
            timings += _timed([lambda: scoped.entitlements.check(heavy, feature)] * batch)
            ingest_one()
        last = scoped.entitlements.check(heavy, feature)
        assert last.usage == _direct(scoped, last, heavy, meter_name), (last.usage, feature)
        assert last.usage >= args.heavy_events and last.allowed
        p50, p99 = _percentiles(timings)
        figures[f"heavy_{feature}_p50_ms"], figures[f"heavy_{feature}_p99_ms"] = p50, p99
        print(
            f"  heavy customer ({last.usage:,} {feature} in the window), warm: p50 {p50:.3f} ms, "
            f"p99 {p99:.3f} ms over {len(timings):,} checks; target p50 < {TARGET_P50_MS:g} ms: "
            f"{'met' if p50 < TARGET_P50_MS else 'MISSED'}"
        )

    heavy_checks("requests", "Requests")
    heavy_checks("tokens", "Tokens")

    for feature in ("requests", "sso"):
        _timed([lambda c=c, f=feature: scoped.entitlements.check(c, f) for c in customers])  # warm-up
        timings = _timed([lambda c=c, f=feature: scoped.entitlements.check(c, f) for c in customers * 3])
        sample = random.Random(args.seed).choice(customers[1:])
        last = scoped.entitlements.check(sample, feature)
        if feature == "requests":
            assert last.usage == _direct(scoped, last, sample, "Requests") == args.light_events
        assert last.allowed
        p50, p99 = _percentiles(timings)
        figures[f"many_{feature}_p50_ms"], figures[f"many_{feature}_p99_ms"] = p50, p99
        print(
            f"  {len(customers):,} customers round robin, {feature}, warm: p50 {p50:.3f} ms, "
            f"p99 {p99:.3f} ms over {len(timings):,} checks"
        )

    billing.settings = Settings(entitlement_cache_ttl=timedelta(0))
    for feature, who in (("requests", heavy), ("tokens", heavy), ("requests", customers[-1])):
        timings = _timed([lambda w=who, f=feature: scoped.entitlements.check(w, f)] * args.cold_checks)
        p50, p99 = _percentiles(timings)
        label = "heavy customer" if who == heavy else "light customer"
        figures[f"cold_{feature}_{label.split()[0]}_p50_ms"] = p50
        print(f"  no cache, {label}, {feature}: p50 {p50:.3f} ms, p99 {p99:.3f} ms ({len(timings)} checks)")
    billing.close()
    return figures


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench entitlements")
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--heavy-events", type=int, default=100_000)
    parser.add_argument("--light-events", type=int, default=100)
    parser.add_argument("--checks", type=int, default=2000)
    parser.add_argument("--cold-checks", type=int, default=20)
    parser.add_argument("--stores", default="sqlite")
    parser.add_argument(
        "--pg-url", default=DEFAULT_PG_URL.replace("billingkit_bench", "billingkit_bench_entitlements")
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="billingkit-bench-entitlements-") as tmp:
        for kind in args.stores.split(","):
            url = f"sqlite:///{Path(tmp) / 'entitlements.db'}" if kind == "sqlite" else args.pg_url
            print(f"-- {kind}")
            run_store(Store(kind=kind, url=url), args)
