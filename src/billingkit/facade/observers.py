"""``BillingObserver``: in-process hooks for metrics, without the library knowing any metrics tool.

``billing.observe(observer)`` registers one; the REST adapter registers a Prometheus one
(:mod:`billingkit.http.metrics`), a host can register its own (StatsD, OpenTelemetry, a test).
"""

from __future__ import annotations

from billingkit.services.billing_runs import RunReport
from billingkit.services.events import IngestResult

__all__ = ["BillingObserver"]


class BillingObserver:
    """Subclass and override the hooks you need; each default does nothing.

    Hooks run on the calling thread after the work committed (a billing run's hook also after a run
    that raised), so they must be quick. An exception in a hook is logged, never raised into the
    caller: observing must not break billing.
    """

    def events_ingested(self, result: IngestResult) -> None:
        """An ingestion call committed: ``result.accepted_ids`` were stored now,
        ``result.duplicate_ids`` had been stored before (or were repeated in the batch)."""

    def invoices_issued(self, count: int) -> None:
        """``count`` invoices were finalized (numbered and issued) by one committed unit of work:
        a billing run's batch, a subscription's opening invoice, and so on. Skipped (empty)
        invoices are not counted."""

    def billing_run(self, report: RunReport | None, *, seconds: float) -> None:
        """A :meth:`Billing.run_due` call ended after ``seconds``: ``report`` is what it did
        (``report.failures`` lists subscriptions it could not bill), ``None`` when it raised."""
