"""A background loop of due work: ``billingkit worker``, ``billingkit serve`` and hosts that want
billing to happen on its own call :meth:`Worker.start` (a daemon thread) or :meth:`Worker.run`.
Each tick is one ``Billing.run_due``, which is the due-work runner (``services.due_work``)."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from billingkit.services.billing_runs import RunReport

if TYPE_CHECKING:
    from billingkit.facade.billing import Billing

__all__ = ["Worker"]

log = logging.getLogger("billingkit.worker")


class Worker:
    """Calls ``billing.run_due()`` every ``interval`` seconds until stopped.

    >>> worker = Worker(billing, interval=60).start()   # doctest: +SKIP
    >>> worker.stop()                                     # doctest: +SKIP

    A run that fails (the database is down, say) is logged and retried at the next tick; nothing is
    half-written because every batch commits whole or not at all. Reports count invoices without
    keeping them (``keep_invoices=False``): a month-end run of a large book must not stay in memory
    until the next tick.
    """

    def __init__(
        self, billing: Billing, *, interval: float | None = None, batch_size: int | None = None
    ) -> None:
        """``interval`` and ``batch_size`` default to ``billing.settings.worker_interval`` and
        ``billing.settings.run_batch_size``."""
        interval = billing.settings.worker_interval if interval is None else interval
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.billing = billing
        self.interval = interval
        self.batch_size = billing.settings.run_batch_size if batch_size is None else batch_size
        self.runs = 0
        self.last_report: RunReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> RunReport | None:
        """One run of due work; ``None`` when it failed (the error is logged)."""
        try:
            report = self.billing.run_due(batch_size=self.batch_size, keep_invoices=False)
        except Exception:  # a runner must outlive a failed run; the next tick retries it
            # run_due logged the failure with its traceback (billingkit.billing_run).
            log.warning("billing run failed; retrying in %s s", self.interval)
            return None
        self.runs += 1
        self.last_report = report
        return report

    def run(self) -> None:
        """Tick until :meth:`stop` is called (blocks the calling thread)."""
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.interval)

    def start(self) -> Worker:
        """Run in a daemon thread; returns self."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="billingkit-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the loop to stop and wait for the current run to finish."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
