"""Benchmark: ``billingkit.simulate`` of 1,000 customers over 12 months.

Run: ``python -m bench simulate [-- --customers 1000 --months 12 --seed 1 --profile]``.

Two plans (``basic``: 10.00 a month plus 0.01 a call; ``pro``: 49.00 a month plus SLAB tiers),
customers drawn 2:1 between them (:func:`~billingkit.simulation.sample_customers`), and usage
``Poisson("api.request", per_day=300, growth=0.10, property="calls", spread=0.8)``: one event per
customer and day carrying the day's calls (365,000 events for 1,000 customers over a year). The
figure is the wall time of the whole call (catalogue, customers and subscriptions with their
opening invoices, generating and ingesting the events, twelve billing runs, reading the result
back) and customer-months per second; then the DataFrames are built and timed, and the check:
the revenue frames add up to the invoices' totals, and a second run with the same seed gives the
same totals. The process's CPU time is printed beside the wall time (the steadier figure on a
shared machine). ``--profile`` prints where the time of a run goes (cProfile, top 25 by cumulative).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from decimal import Decimal
from typing import Any

import billingkit
from billingkit.simulation import Poisson, SimulationResult, sample_customers

MONTHLY = {"currency": "usd", "billing_period": "MONTHLY"}
METERS = {
    "calls": {
        "name": "API calls",
        "event_name": "api.request",
        "aggregation": {"type": "SUM", "field": "calls"},
    }
}
_FEE = {**MONTHLY, "type": "FIXED", "billing_model": "FLAT_FEE", "invoice_cadence": "ADVANCE"}
_USAGE = {**MONTHLY, "type": "USAGE", "invoice_cadence": "ARREAR", "meter_id": "calls"}
PLANS: dict[str, Any] = {
    "basic": {
        "name": "Basic",
        "prices": [{**_FEE, "amount": "10.00"}, {**_USAGE, "billing_model": "FLAT_FEE", "amount": "0.01"}],
    },
    "pro": {
        "name": "Pro",
        "prices": [
            {**_FEE, "amount": "49.00"},
            {
                **_USAGE,
                "billing_model": "TIERED",
                "tier_mode": "SLAB",
                "tiers": [{"up_to": 10000, "unit_amount": "0.005"}, {"up_to": None, "unit_amount": "0.002"}],
            },
        ],
    },
}


def run(customers: int, months: int, seed: int) -> SimulationResult:
    """One simulation of the benchmark's workload."""
    return billingkit.simulate(
        meters=METERS,
        plans=PLANS,
        customers=sample_customers(customers, plans={"basic": 2, "pro": 1}, seed=seed),
        usage=Poisson("api.request", per_day=300, growth=0.10, property="calls", spread=0.8),
        months=months,
        seed=seed,
        progress=False,
    )


def main(argv: list[str]) -> None:
    """Print the simulation's wall time, customer-months per second, frame times and checks."""
    parser = argparse.ArgumentParser(prog="python -m bench simulate")
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    started, started_cpu = time.perf_counter(), time.process_time()
    if args.profile:
        profile = cProfile.Profile()
        result = profile.runcall(run, args.customers, args.months, args.seed)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    else:
        result = run(args.customers, args.months, args.seed)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    cm = args.customers * args.months
    print(
        f"simulate {args.customers:,} customers x {args.months} months: {elapsed:.1f} s (CPU {cpu:.1f} s, "
        f"{cm / elapsed:,.0f} customer-months/s), {len(result.invoices):,} invoices"
    )
    started = time.perf_counter()
    invoices, lines = result.invoices_frame(), result.lines_frame()
    by_month, by_plan, by_customer = (
        result.revenue_by_month(),
        result.revenue_by_plan(),
        result.revenue_by_customer(),
    )
    frames = time.perf_counter() - started
    print(f"frames: {len(invoices):,} invoices, {len(lines):,} lines, three revenue tables in {frames:.2f} s")
    total = sum((inv.total for inv in result.finalized), Decimal(0))
    for frame in (by_month, by_plan, by_customer):
        assert sum(frame["revenue"], Decimal(0)) == total, "a revenue frame does not add up"
    print(f"check: revenue {total:,} USD in every revenue frame")
    again = run(args.customers, args.months, args.seed)
    assert again.totals() == result.totals(), "the same seed gave other totals"
    print("check: the same seed gives the same totals")
