"""Benchmark: plan price sync of a large plan, and the billing run's auto-invoice threshold checks.

Run: ``python -m bench plan_sync [-- --subscriptions 10000 --stores sqlite,memory
--batch-sizes 100,500,2000 --threshold-subscriptions 2000]``.

For each store (a SQLite file in a temporary directory, or the memory store):

1. Sync. One plan (a monthly FIXED fee and a USAGE price on a COUNT meter, USD); one subscription
   made through the library, then ``--subscriptions`` - 1 copies of it (new ids, a customer
   each) added through the store's repositories (``add_many``, as the library writes them). Then
   the fee gets a new version and a USAGE price is added, and ``scoped.plans.sync_subscriptions``
   runs once per ``--batch-sizes`` entry (the subscriptions are reset to their synced sequence in
   between): wall time, subscriptions per second, and the peak of Python memory allocated during
   the sync (``tracemalloc``, which slows the run down; the time is measured in a separate run
   without it). Each run checks that every subscription ends with four lines and in sync.
2. Threshold checks. ``--threshold-subscriptions`` subscriptions with ``auto_invoice_threshold``
   on a usage-only plan, 10 events each; one ``billing.run_due`` when their checks are due (none
   reaches its threshold) and one where every one does (each issues an invoice): wall time per
   subscription.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from billingkit import Billing, Scoped, SqlStorage, TestClock
from billingkit.domain.customers import Customer
from billingkit.domain.queries import Filter, ListQuery, Op
from billingkit.domain.subscriptions import Subscription
from billingkit.storage.memory import MemoryStorage

T0 = datetime(2026, 5, 1, tzinfo=UTC)
CHUNK = 1000


def _prices(meter_id: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "FIXED",
            "billing_model": "FLAT_FEE",
            "amount": "20",
            "currency": "usd",
            "billing_period": "MONTHLY",
            "invoice_cadence": "ADVANCE",
            "display_name": "Base",
        },
        _usage(meter_id, "0.10", "Calls"),
    ]


def _usage(meter_id: str, amount: str, name: str) -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "FLAT_FEE",
        "amount": amount,
        "currency": "usd",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "display_name": name,
    }


def _copies(billing: Billing, s: Scoped, template: Subscription, customer: Customer, count: int) -> None:
    """``count`` copies of ``template``, each with its own customer, added in chunks."""
    for first in range(0, count, CHUNK):
        customers: list[Customer] = []
        subs: list[Subscription] = []
        for n in range(first, min(first + CHUNK, count)):
            cust = customer.model_copy(update={"id": billing.ids.new("cust"), "external_id": f"bench-{n}"})
            sub_id = billing.ids.new("subs")
            lines = tuple(
                li.model_copy(
                    update={
                        "id": billing.ids.new("subs_line"),
                        "subscription_id": sub_id,
                        "customer_id": cust.id,
                    }
                )
                for li in template.line_items
            )
            customers.append(cust)
            subs.append(
                template.model_copy(update={"id": sub_id, "customer_id": cust.id, "line_items": lines})
            )

        def add(
            uow: Any, ctx: Any, customers: list[Customer] = customers, subs: list[Subscription] = subs
        ) -> None:
            uow.customers.add_many(customers)
            uow.subscriptions.add_many(subs)

        s.run(add)


def _store(kind: str, directory: Path, name: str) -> Any:
    return MemoryStorage() if kind == "memory" else SqlStorage.from_url(f"sqlite:///{directory / name}.db")


def _world(storage: Any) -> tuple[Billing, TestClock, Scoped, str]:
    clock = TestClock(T0)
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    return billing, clock, s, meter.id


def _reset(s: Scoped, plan_id: str, sequence: int, lines: int) -> None:
    """Every subscription of the plan back to ``sequence`` with its first ``lines`` line items."""

    def run(uow: Any, ctx: Any) -> None:
        offset = 0
        while True:
            page = uow.subscriptions.list(
                ListQuery(filters=(Filter("plan_id", Op.EQ, plan_id),), limit=CHUNK, offset=offset)
            ).items
            if not page:
                return
            uow.subscriptions.update_many(
                [
                    (
                        sub,
                        sub.model_copy(
                            update={
                                "synced_price_sequence": sequence,
                                "line_items": tuple(
                                    li.model_copy(update={"end_date": None}) for li in sub.line_items[:lines]
                                ),
                            }
                        ),
                    )
                    for sub in page
                ]
            )
            offset += len(page)

    s.run(run)


def _check(s: Scoped, plan_id: str, count: int) -> None:
    """Every subscription of the plan has its four lines (fee, its successor, calls, exports)."""

    def run(uow: Any, ctx: Any) -> tuple[int, int]:
        total = right = 0
        while True:
            query = ListQuery(filters=(Filter("plan_id", Op.EQ, plan_id),), limit=CHUNK, offset=total)
            subs = uow.subscriptions.list(query).items
            if not subs:
                return total, right
            total += len(subs)
            right += sum(1 for sub in subs if len(sub.line_items) == 4)

    total, right = s.run(run)
    assert (total, right) == (count, count), (total, right)


def bench_sync(kind: str, directory: Path, count: int, batch_sizes: list[int]) -> None:
    storage = _store(kind, directory, "sync")
    billing, clock, s, meter_id = _world(storage)
    plan = s.plans.create(name="Pro", prices=_prices(meter_id))
    customer = s.customers.create(external_id="bench-template", name="Template")
    template = s.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="MONTHLY"
    )
    started = time.perf_counter()
    _copies(billing, s, template, customer, count - 1)
    print(f"  {kind}: {count:,} subscriptions set up in {time.perf_counter() - started:.1f} s")
    clock.set(T0 + timedelta(days=10))
    fee = next(p for p in plan.prices if p.type.value == "FIXED")
    s.prices.update(fee.id, amount="25")
    exports = s.meters.create(name="Exports", event_name="export", aggregation={"type": "COUNT"})
    s.prices.create(entity_type="PLAN", entity_id=plan.id, **_usage(exports.id, "1.00", "Exports"))
    for size in batch_sizes:
        for traced in (False, True):
            _reset(s, plan.id, template.synced_price_sequence, len(template.line_items))
            if traced:
                tracemalloc.start()
            started = time.perf_counter()
            result = s.plans.sync_subscriptions(plan.id, batch_size=size)
            seconds = time.perf_counter() - started
            if traced:
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                print(f"    batch {size:>6,}: peak Python memory {peak / 2**20:,.1f} MiB (traced run)")
            else:
                assert result.subscriptions_updated == count, result
                print(
                    f"    batch {size:>6,}: {seconds:6.2f} s, {count / seconds:,.0f} subscriptions/s "
                    f"({result.line_items_added:,} lines added, {result.line_items_ended:,} ended)"
                )
            _check(s, plan.id, count)
    storage.close()


def bench_thresholds(kind: str, directory: Path, count: int) -> None:
    storage = _store(kind, directory, "thresholds")
    billing, clock, s, meter_id = _world(storage)
    plan = s.plans.create(name="Metered", prices=[_usage(meter_id, "0.10", "Calls")])
    customer = s.customers.create(external_id="bench-template", name="Template")
    template = s.subscriptions.create(
        customer_id=customer.id,
        plan_id=plan.id,
        currency="usd",
        billing_period="MONTHLY",
        auto_invoice_threshold="5",
    )
    _copies(billing, s, template, customer, count - 1)
    externals = ["bench-template", *(f"bench-{n}" for n in range(count - 1))]

    def ingest(start: datetime, per_customer: int, prefix: str) -> None:
        events = [
            {
                "event_name": "api",
                "external_customer_id": ext,
                "timestamp": (start + timedelta(seconds=i)).isoformat(),
                "event_id": f"{prefix}-{ext}-{i}",
            }
            for ext in externals
            for i in range(per_customer)
        ]
        for first in range(0, len(events), 1000):
            s.events.ingest_bulk(events[first : first + 1000])

    clock.set(T0 + timedelta(hours=1))
    ingest(T0 + timedelta(minutes=10), 10, "a")  # 1.00 each: below 5.00
    for label, when in (("no threshold reached", T0 + timedelta(hours=1)), ("every threshold reached", None)):
        if when is None:
            clock.set(T0 + timedelta(hours=2))
            ingest(T0 + timedelta(hours=1, minutes=10), 50, "b")  # 5.00 more: 6.00 >= 5.00
            when = T0 + timedelta(hours=2)
        started = time.perf_counter()
        report = billing.run_due(now=when, keep_invoices=False)
        seconds = time.perf_counter() - started
        print(
            f"  {kind}: {count:,} threshold checks, {label}: {seconds:.2f} s "
            f"({seconds / count * 1000:.2f} ms each, {report.invoice_count:,} invoices)"
        )
    storage.close()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench plan_sync")
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--stores", default="sqlite,memory")
    parser.add_argument("--batch-sizes", default="100,500,2000")
    parser.add_argument("--threshold-subscriptions", type=int, default=2000)
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.batch_sizes.split(",")]
    runs: list[Callable[[str, Path], None]] = [
        lambda kind, d: bench_sync(kind, d, args.subscriptions, sizes),
        lambda kind, d: bench_thresholds(kind, d, args.threshold_subscriptions),
    ]
    for kind in args.stores.split(","):
        with tempfile.TemporaryDirectory() as directory:
            for run in runs:
                run(kind, Path(directory))
