"""Benchmark: ``scoped.backtest`` re-pricing 10,000 customer-months on SQLite, in process.

Run: ``python -m bench backtest [-- --customers 1000 --months 10 --repeats 3 --profile]``.

Setup (timed, not the figure): the ``bench simulate`` workload (two plans, customers 2:1,
``Poisson`` usage of 300 calls a day growing 10 % a month, one event per customer and day) is
simulated into a SQLite file in a temporary directory (``simulate(storage=SqlStorage...)``):
``--customers`` x ``--months`` billed customer-months, their invoices and events stored.

The figure: the median of ``--repeats`` backtests of every customer's every completed month
(``--customers`` x ``--months`` rows) under

1. the billed plans themselves (``subscribed_plan_id`` each; check: every difference is exactly
   0.00), and
2. a candidate price list for everyone (Basic's fee raised to 12.00, calls at 0.008), whose
   revenue change is printed.

Target: under 5 s for 10,000 customer-months. The process's CPU time is printed beside the wall
time: on a shared machine it is the steadier of the two. ``--profile`` prints where the time of one
candidate backtest goes (cProfile, top 25 by cumulative).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import billingkit
from bench.bench_simulate import METERS, PLANS
from billingkit import SqlStorage
from billingkit.simulation import Poisson, sample_customers

TARGET_S = 5.0


def main(argv: list[str]) -> None:
    """Print the backtest's seconds and customer-months per second on SQLite, and its checks."""
    parser = argparse.ArgumentParser(prog="python -m bench backtest")
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--months", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = billingkit.simulate(
            meters=METERS,
            plans=PLANS,
            customers=sample_customers(args.customers, plans={"basic": 2, "pro": 1}, seed=args.seed),
            usage=Poisson("api.request", per_day=300, growth=0.10, property="calls", spread=0.8),
            months=args.months,
            seed=args.seed,
            progress=False,
            storage=SqlStorage.from_url(f"sqlite:///{Path(tmp) / 'backtest.db'}"),
        )
        print(
            f"setup: {args.customers:,} customers x {args.months} months simulated into SQLite in "
            f"{time.perf_counter() - started:.1f} s ({len(result.invoices):,} invoices)"
        )
        scope = result.scope
        meter = next(iter(result.meters))
        fee, usage = (dict(price) for price in PLANS["basic"]["prices"])
        candidate: list[dict[str, Any]] = [
            {**fee, "amount": "12"},
            {**usage, "meter_id": meter, "amount": "0.008"},
        ]
        expected = args.customers * args.months

        def same() -> int:
            rows = 0
            for plan in result.plans.values():
                backtest = scope.backtest(plan, subscribed_plan_id=plan.id)
                assert {r.difference for r in backtest.rows} == {Decimal("0.00")}, "the billed plan differs"
                rows += len(backtest.rows)
            return rows

        for label, run in (
            ("billed plans", same),
            ("candidate prices", lambda: len(scope.backtest(candidate).rows)),
        ):
            times, cpu = [], []
            for _ in range(args.repeats):
                started, started_cpu = time.perf_counter(), time.process_time()
                rows = run()
                times.append(time.perf_counter() - started)
                cpu.append(time.process_time() - started_cpu)
                assert rows == expected, f"{rows} rows, expected {expected}"
            median = statistics.median(times)
            verdict = "ok" if median < TARGET_S else "OVER TARGET"
            print(
                f"backtest ({label}): {rows:,} customer-months in {median:.2f} s median of {args.repeats} "
                f"(range {min(times):.2f}-{max(times):.2f}; CPU {statistics.median(cpu):.2f} s), "
                f"{rows / median:,.0f}/s; "
                f"target < {TARGET_S} s: {verdict}"
            )
        summary = scope.backtest(candidate).summary()
        print(
            f"candidate: revenue change {summary.revenue_change['usd']:+,} USD on {summary.billed['usd']:,}; "
            f"{summary.better_off} customers better off, {summary.worse_off} worse off"
        )
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(scope.backtest, candidate)
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
        result.billing.storage.close()
