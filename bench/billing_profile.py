"""Where ``bench billing``'s run spends its time: wall-clock timers around its parts
(``run_timed``), then a cProfile (``run_profiled``)."""

from __future__ import annotations

import cProfile
import gc
import io
import os
import pstats
import time
from contextlib import AbstractContextManager

from bench.billing_workload import Cohort
from bench.timers import Target, timed_calls
from billingkit import Billing
from billingkit.domain.invoices import Invoice

__all__ = ["ORDER", "PROFILE_ROWS", "run_profiled", "run_timed", "timed_parts"]


def timed_parts() -> AbstractContextManager[dict[str, float]]:
    """Wall-clock seconds in the parts of a run (:func:`bench.timers.timed_calls`). Labels are
    indented under the part that calls them; table inserts are told apart by table."""
    from billingkit.services import billing_runs, invoice_issuing, invoicing, notifications
    from billingkit.storage.sql.repository import SqlRepository
    from billingkit.storage.sql.storage import SqlUnitOfWork
    from billingkit.storage.sql.usage import SqlUsageStore

    targets: list[Target] = [
        (SqlUnitOfWork, "__enter__", lambda *a: "unit of work open (pool checkout, BEGIN)"),
        (SqlUnitOfWork, "claim_due", lambda *a: "claim (SELECT, rows -> Subscription)"),
        (billing_runs, "plan_due", lambda *a: "plan_due"),
        (billing_runs, "load_snapshot", lambda *a: "load_snapshot"),
        (billing_runs, "measure_usage", lambda *a: "measure_usage"),
        (SqlUsageStore, "aggregate", lambda *a: "  usage aggregate (SQL)"),
        (billing_runs, "compute_invoice", lambda *a: "compute_invoice"),
        (invoicing, "_request", lambda *a: "  _request (LineItemInput, InvoiceRequest)"),
        (invoicing, "assemble_invoice", lambda *a: "  assemble_invoice (core)"),
        (billing_runs, "build_invoice", lambda *a: "build_invoice (Invoice, line items)"),
        (invoice_issuing, "number_invoices", lambda *a: "number_invoices (one counter block)"),
        (invoicing, "invoice_payload", lambda *a: "invoice_payload (to_dict)"),
        (notifications, "event", lambda *a: "notification events (built)"),
        (SqlRepository, "add_many", lambda repo, *a: f"INSERT ({repo._table.name}, executemany)"),
        (SqlRepository, "update_many", lambda repo, *a: f"UPDATE ({repo._table.name}, version check)"),
        (SqlUnitOfWork, "commit", lambda *a: "commit"),
        (SqlUnitOfWork, "__exit__", lambda *a: "unit of work close"),
    ]
    return timed_calls(targets)


ORDER = [
    "unit of work open (pool checkout, BEGIN)",
    "claim (SELECT, rows -> Subscription)",
    "plan_due",
    "load_snapshot",
    "measure_usage",
    "  usage aggregate (SQL)",
    "compute_invoice",
    "  _request (LineItemInput, InvoiceRequest)",
    "  assemble_invoice (core)",
    "build_invoice (Invoice, line items)",
    "number_invoices (one counter block)",
    "invoice_payload (to_dict)",
    "notification events (built)",
    "INSERT (invoices, executemany)",
    "UPDATE (subscriptions, version check)",
    "INSERT (notification_events, executemany)",
    "commit",
    "unit of work close",
]

# cProfile rows worth naming: (label, path suffix, function).
PROFILE_ROWS = [
    ("run_due (all)", "facade/billing.py", "run_due"),
    ("claim_due", "sql/storage.py", "claim_due"),
    ("plan_due", "domain/renewals.py", "plan_due"),
    ("load_snapshot", "services/invoicing.py", "load_snapshot"),
    ("measure_usage", "services/invoicing.py", "measure_usage"),
    ("  usage aggregate", "sql/usage.py", "aggregate"),
    ("compute_invoice", "services/invoicing.py", "compute_invoice"),
    ("  _request", "services/invoicing.py", "_request"),
    ("  assemble_invoice", "domain/invoicing.py", "assemble_invoice"),
    ("build_invoice", "services/invoicing.py", "build_invoice"),
    ("number_invoices", "services/invoice_issuing.py", "number_invoices"),
    ("invoice_payload", "services/invoicing.py", "invoice_payload"),
    ("notification events (built)", "services/notifications.py", "event"),
    ("SqlRepository.add_many (invoices, notifications)", "sql/repository.py", "add_many"),
    ("SqlRepository.update_many (subscriptions)", "sql/repository.py", "update_many"),
    ("commit", "sql/storage.py", "commit"),
    ("RowEncoder.values (model -> driver row)", "sql/mapping.py", "values"),
    ("RowDecoder.models (driver rows -> models)", "sql/mapping.py", "models"),
    ("pydantic model_copy", "pydantic/main.py", "model_copy"),
    ("pydantic model_dump", "pydantic/main.py", "model_dump"),
    ("SQLAlchemy Connection.execute", "sqlalchemy/engine/base.py", "execute"),
    ("SQLAlchemy cache key + compile", "sqlalchemy/sql/elements.py", "_compile_w_cache"),
]


def run_timed(billing: Billing, cohort: Cohort) -> tuple[list[Invoice], float, dict[str, float]]:
    gc.collect()
    with timed_parts() as spent:
        started = time.perf_counter()
        report = billing.run_due(cohort.run_at)
        total = time.perf_counter() - started
    if report.failures:
        raise SystemExit(f"{cohort.name}: failures {report.failures[:3]}")
    n = len(report.invoices)
    print(f"  where the time goes (timers; {n:,} subscriptions, {n / total:,.0f} invoices/s):")
    print(f"    {'part':<46} {'total':>8} {'per invoice':>12} {'share':>7}")
    top = 0.0
    for label in ORDER:
        seconds = spent.get(label, 0.0)
        if not label.startswith(" "):
            top += seconds
        print(f"    {label:<46} {seconds:7.3f}s {seconds * 1e6 / n:9.0f} us {seconds / total:7.1%}")
    for label, seconds in spent.items():  # anything not foreseen in ORDER
        if label not in ORDER:
            top += seconds if not label.startswith(" ") else 0.0
            print(f"    {label:<46} {seconds:7.3f}s {seconds * 1e6 / n:9.0f} us {seconds / total:7.1%}")
    rest = total - top
    print(
        f"    {'rest (run_due loop, model_copy, bookkeeping)':<46} {rest:7.3f}s {rest * 1e6 / n:9.0f} us "
        f"{rest / total:7.1%}"
    )
    print(f"    {'total':<46} {total:7.3f}s {total * 1e6 / n:9.0f} us")
    return list(report.invoices), total, spent


def run_profiled(billing: Billing, cohort: Cohort, top: int, sort: str) -> list[Invoice]:
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    report = billing.run_due(cohort.run_at)
    profiler.disable()
    if report.failures:
        raise SystemExit(f"{cohort.name}: failures {report.failures[:3]}")
    stats = pstats.Stats(profiler)
    entries: dict[tuple[str, str], float] = {}
    for (filename, _line, function), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for _label, suffix, name in PROFILE_ROWS:
            if function == name and filename.replace(os.sep, "/").endswith(suffix):
                entries[(suffix, name)] = entries.get((suffix, name), 0.0) + cumulative
    total = entries.get(("facade/billing.py", "run_due"), 0.0) or 1.0
    n = len(report.invoices)
    print(f"  cProfile of a run of {n:,} subscriptions ({total:.2f}s under the profiler), cumulative:")
    for label, suffix, name in PROFILE_ROWS:
        seconds = entries.get((suffix, name), 0.0)
        print(f"    {label:<46} {seconds:7.3f}s {seconds / total:7.1%}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(sort).print_stats(top)
    print(f"  cProfile top {top} by {sort}:")
    lines = out.getvalue().splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    for line in lines[start:]:
        if line.strip():
            print("    " + line)
    return list(report.invoices)
