"""Benchmark: a billing run (``Billing.run_due``) of 10,000 due subscriptions.

Run: ``python -m bench billing [-- --subscriptions 10000 --stores sqlite,postgres --library-sample 200
--profile-subscriptions 500 --no-profile --top 25 --sort cumulative --keep-invoices yes --gc on
--wallet-every 0 --addon-every 0]``.

For each store (a SQLite file in a temporary directory; PostgreSQL at ``--pg-url``, a database this
benchmark owns: created when missing, its ``public`` schema dropped and recreated):

0. Setup (timed, not part of the figure). One plan, ``Pro``, monthly in USD: a FIXED ADVANCE
   ``FLAT_FEE`` of 49.00, a USAGE ARREAR ``TIERED``/``SLAB`` price on a COUNT meter of
   ``api.request`` (20 at 0.10, 20 at 0.05 + 1.00 flat, the rest at 0.01 + 2.00 flat) and a USAGE
   ARREAR ``PACKAGE`` price on a SUM meter of ``bytes`` of ``storage.write`` (0.10 per started
   250,000 bytes). Every subscription starts at T0 = 2026-01-01 00:00 UTC (monthly, anniversary),
   one customer each, with 100 events inside its first period (50 ``api.request``, 50
   ``storage.write`` of 1..200,000 bytes). With ``--wallet-every N`` one customer in N (the
   first, then every N-th) has a PRE_PAID wallet (all price types) holding 30 credits worth 1.00
   each, which its invoice consumes (a debit row and a wallet update each). With ``--addon-every
   N`` one subscription in N (the first, then every N-th) also has add-on ``Boost`` (its
   association and two line items): a FIXED ADVANCE ``FLAT_FEE`` of 9.00 and a USAGE ARREAR
   ``FLAT_FEE`` of 0.02 per ``api.request``, so its invoices carry two more lines.

   The first ``--library-sample`` customers and subscriptions go through the library
   (``scoped.customers.create``, ``scoped.subscriptions.create``: each subscription issues its opening
   invoice); their rate is measured and extrapolated to all subscriptions. The rest are inserted
   directly: copies of a library-made subscription (new ids, its own customer; exactly the model
   ``create_subscription`` builds for that plan and start, opening invoice counted in
   ``billing_sequence`` but not stored) turned into rows with
   ``billingkit.storage.sql.mapping.row_encoder`` (as the repositories write them) and inserted in one
   executemany; the events go in
   through the bare driver as ``bench ingest`` preloads them (sqlite3 ``executemany`` / psycopg
   ``COPY``, indexes built afterwards), then the statistics are refreshed.
1. The figure: one ``billing.run_due(now=T0 + 1 month + 1 hour)`` (default batches of 500) over all
   due subscriptions, wall time and invoices per second (target on SQLite: >= 1,000/s). With
   ``--keep-invoices no`` the run only counts its invoices (``keep_invoices=False``, as the worker
   runs); the checks then read the invoices back from the store. ``--gc off`` runs it without the
   garbage collector, to measure what its passes cost.
2. Checks: the run reports ``--subscriptions`` invoices and no failure, the store holds that many
   cycle invoices and no subscription is still due; 20 random invoices, read back through the
   library, have the amounts computed here from the event data with plain arithmetic (line by line
   and in total); the run's invoice numbers are ``INV-202602-00001`` .. ``-10000`` without a gap
   (the library-made subscriptions' opening invoices drew from January's counter).
3. Where the time goes (unless ``--no-profile``), on two more cohorts of ``--profile-subscriptions``
   (same plan, started 2026-01-06 and 2026-01-12, so each falls due on its own): the first run with
   wall-clock timers around the parts (a wrapper costs about 0.1 us a call), the second under
   cProfile (which slows Python calls down: its shares lean towards Python-heavy parts).

The PostgreSQL database is left in place (it is reset at the next run); the SQLite file is removed.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from bench.billing_checks import SAMPLE, check_run, stored_invoices
from bench.billing_profile import run_profiled, run_timed
from bench.billing_setup import prepare
from bench.billing_workload import (
    ADDON_FEE,
    ADDON_PER_REQUEST,
    COUPON_PERCENT,
    EVENTS_PER_NAME,
    RUN_AT,
    T0,
    TAX_PERCENT,
    WALLET_CREDITS,
    Cohort,
)
from bench.stores import DEFAULT_PG_URL, Store, checkpoint
from billingkit import Billing, SqlStorage, TestClock

TARGET_PER_SECOND = 1000.0


def run_store(store: Store, args: argparse.Namespace) -> dict[str, float]:
    print(f"-- {store.kind}: {store.url}")
    size, psize = args.subscriptions, args.profile_subscriptions
    every, wallets, addons = args.adjusted_every, args.wallet_every, args.addon_every
    cohorts = [
        Cohort("main", T0, RUN_AT, size, 0, adjusted_every=every, wallet_every=wallets, addon_every=addons)
    ]
    if not args.no_profile:
        cohorts.append(
            Cohort(
                "timers",
                T0 + timedelta(days=5),
                RUN_AT + timedelta(days=5),
                psize,
                size,
                adjusted_every=every,
                wallet_every=wallets,
                addon_every=addons,
            )
        )
        cohorts.append(
            Cohort(
                "cprofile",
                T0 + timedelta(days=11),
                RUN_AT + timedelta(days=11),
                psize,
                size + psize,
                adjusted_every=every,
                wallet_every=wallets,
                addon_every=addons,
            )
        )
    setup = prepare(store, cohorts, args)

    billing = Billing(SqlStorage.from_url(store.url, migrate=False), TestClock(RUN_AT))
    scoped = billing.scope(store.tenant_id, store.environment_id)
    checkpoint(store)
    gc.collect()
    if args.gc == "off":
        gc.disable()  # diagnostics: what the garbage collector's passes cost the run
    started, cpu = time.perf_counter(), time.process_time()
    report = billing.run_due(RUN_AT, keep_invoices=args.keep_invoices == "yes")
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    gc.enable()
    rate = report.invoice_count / seconds
    verdict = (
        ""
        if store.kind != "sqlite"
        else (" target >= 1,000/s: " + ("met" if rate >= TARGET_PER_SECOND else "MISSED"))
    )
    print(
        f"  run_due: {report.subscription_count:,} subscriptions, {report.invoice_count:,} invoices, "
        f"{report.notification_count:,} notifications, {len(report.failures)} failures in {seconds:.2f}s "
        f"({cpu:.2f}s of CPU in this process): "
        f"{rate:,.0f} invoices/s{verdict}"
    )
    if report.failures:
        raise SystemExit(f"failures: {report.failures[:3]}")
    issued = (
        list(report.invoices) if args.keep_invoices == "yes" else stored_invoices(store, billing, cohorts[0])
    )
    check_run(store, billing, scoped, cohorts[0], issued, args.seed, first_number=1)
    print(
        f"  checked: {size:,} invoices stored, none still due, {SAMPLE} amounts match, "
        f"numbers INV-{RUN_AT:%Y%m}-00001..{size:05d} without a gap"
    )

    if not args.no_profile:
        invoices, _, _ = run_timed(billing, cohorts[1])
        check_run(store, billing, scoped, cohorts[1], invoices, args.seed)
        invoices = run_profiled(billing, cohorts[2], args.top, args.sort)
        check_run(store, billing, scoped, cohorts[2], invoices, args.seed)
    billing.close()
    return {
        "seconds": seconds,
        "rate": rate,
        "library_subs_per_s": args.library_sample / setup.seconds["library: subscriptions"],
        "setup": sum(setup.seconds.values()),
    }


def _adjusted_share(every: int) -> str:
    if every <= 0:
        return "no coupon or tax"
    return f"one in {every} with a {COUPON_PERCENT}% coupon and a {TAX_PERCENT}% tax"


def _addon_share(every: int) -> str:
    if every <= 0:
        return "no add-ons"
    return f"one in {every} with add-on Boost ({ADDON_FEE} in advance, {ADDON_PER_REQUEST} a request)"


def _wallet_share(every: int) -> str:
    if every <= 0:
        return "no wallets"
    return f"one in {every} with a PRE_PAID wallet of {WALLET_CREDITS} credits"


def main(argv: list[str]) -> None:
    """Print the billing run's invoices per second per store, checks, and where the time goes."""
    parser = argparse.ArgumentParser(prog="python -m bench billing")
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--library-sample", type=int, default=200, help="made through the library")
    parser.add_argument("--profile-subscriptions", type=int, default=500, help="per profiled run")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument(
        "--pg-url",
        default=DEFAULT_PG_URL.replace("billingkit_bench", "billingkit_bench_billing"),
        help="a database this benchmark may wipe",
    )
    parser.add_argument("--seed", type=int, default=20260201)
    parser.add_argument(
        "--gc", default="on", choices=["on", "off"], help="'off': the main run without the garbage collector"
    )
    parser.add_argument(
        "--keep-invoices",
        default="yes",
        choices=["yes", "no"],
        help="run_due(keep_invoices=...): 'no' is how the worker runs (the report only counts)",
    )
    parser.add_argument(
        "--adjusted-every",
        type=int,
        default=4,
        help="one subscription in N has a 10%% coupon and a 20%% tax (0: none)",
    )
    parser.add_argument(
        "--wallet-every",
        type=int,
        default=0,
        help="one customer in N has a PRE_PAID wallet of 30 credits paying its invoice (0: none)",
    )
    parser.add_argument(
        "--addon-every",
        type=int,
        default=0,
        help="one subscription in N has an add-on with a FIXED and a USAGE price (0: none)",
    )
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--top", type=int, default=25, help="cProfile rows to show")
    parser.add_argument(
        "--sort", default="cumulative", choices=["cumulative", "tottime"], help="of those rows"
    )
    args = parser.parse_args(argv)
    if args.subscriptions < SAMPLE:
        raise SystemExit(f"--subscriptions must be at least {SAMPLE}")

    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = set(stores) - {"sqlite", "postgres"}
    if unknown:
        raise SystemExit(f"unknown store(s) {sorted(unknown)}; use sqlite and/or postgres")
    print(
        f"workload: {args.subscriptions:,} monthly subscriptions due at once (flat fee in advance, SLAB "
        f"COUNT and PACKAGE SUM in arrear), {2 * EVENTS_PER_NAME} events each, "
        f"{_adjusted_share(args.adjusted_every)}, {_wallet_share(args.wallet_every)}, "
        f"{_addon_share(args.addon_every)}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_billing_") as tmp:
        for kind in stores:
            url = f"sqlite:///{Path(tmp) / 'billing.db'}" if kind == "sqlite" else args.pg_url
            results[kind] = run_store(Store(kind, url), args)

    print()
    print("| store | run_due | invoices/s | library subscriptions.create | setup |")
    print("|---|---|---|---|---|")
    for kind, r in results.items():
        print(
            f"| {kind} | {r['seconds']:.2f}s | {r['rate']:,.0f}/s | {r['library_subs_per_s']:,.0f}/s | "
            f"{r['setup']:.0f}s |"
        )
    if "sqlite" in results:
        met = results["sqlite"]["rate"] >= TARGET_PER_SECOND
        print(f"target >= {TARGET_PER_SECOND:,.0f} invoices/s on SQLite: {'met' if met else 'NOT met'}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
