"""Prometheus metrics for one application: its own ``CollectorRegistry``, never the global one,
so several apps (or ``Billing`` objects) in one process, and tests, never share counters.

:class:`PrometheusMetrics` is a :class:`~billingkit.facade.BillingObserver`: the library reports
events ingested, invoices issued and billing runs to it without importing prometheus.
:class:`RequestMetrics` is the ASGI middleware counting requests by route template and status.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from billingkit.facade import BillingObserver
from billingkit.http.observability import route_label
from billingkit.services.billing_runs import RunReport
from billingkit.services.events import IngestResult

__all__ = ["CONTENT_TYPE", "PrometheusMetrics", "RequestMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
#: Billing runs range from milliseconds (nothing due) to many minutes (a month-end book).
RUN_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0)


class PrometheusMetrics(BillingObserver):
    """Every billingkit metric, registered in ``registry`` (a new one by default)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        labels = ("method", "route", "status")
        self.requests = Counter(
            "billingkit_http_requests", "HTTP requests answered.", labels, registry=self.registry
        )
        self.request_seconds = Histogram(
            "billingkit_http_request_duration_seconds",
            "Time from request to the end of the response.",
            labels,
            registry=self.registry,
        )
        self.ingested = Counter("billingkit_events_ingested", "Usage events stored.", registry=self.registry)
        self.duplicates = Counter(
            "billingkit_events_duplicate",
            "Usage events sent again (already stored, or repeated in a batch): not stored again.",
            registry=self.registry,
        )
        self.invoices = Counter(
            "billingkit_invoices_issued", "Invoices finalized and issued.", registry=self.registry
        )
        self.runs = Counter(
            "billingkit_billing_runs",
            "Billing runs (run_due) by outcome: completed, or failed (raised).",
            ("status",),
            registry=self.registry,
        )
        self.run_seconds = Histogram(
            "billingkit_billing_run_duration_seconds",
            "Duration of billing runs, completed or failed.",
            buckets=RUN_BUCKETS,
            registry=self.registry,
        )
        self.run_failures = Counter(
            "billingkit_billing_run_subscription_failures",
            "Subscriptions a completed billing run could not bill (they stay due).",
            registry=self.registry,
        )
        # Both outcomes are exported from the start, so a rate() over "failed" has a zero to start from.
        for status in ("completed", "failed"):
            self.runs.labels(status=status)

    # -- BillingObserver -------------------------------------------------------------------
    def events_ingested(self, result: IngestResult) -> None:
        self.ingested.inc(len(result.accepted_ids))
        self.duplicates.inc(len(result.duplicate_ids))

    def invoices_issued(self, count: int) -> None:
        self.invoices.inc(count)

    def billing_run(self, report: RunReport | None, *, seconds: float) -> None:
        self.runs.labels(status="failed" if report is None else "completed").inc()
        self.run_seconds.observe(seconds)
        if report is not None and report.failures:
            self.run_failures.inc(len(report.failures))

    # -- HTTP ------------------------------------------------------------------------------
    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method=method, route=route, status=str(status)).inc()
        self.request_seconds.labels(method=method, route=route, status=str(status)).observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition format of every metric in this registry."""
        return generate_latest(self.registry)


class RequestMetrics:
    """ASGI middleware: counts and times every HTTP request by method, route template and status."""

    def __init__(self, app: Any, metrics: PrometheusMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception before the response started is a 500

        async def send_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.observe_request(
                scope["method"], route_label(scope), status, time.perf_counter() - started
            )
