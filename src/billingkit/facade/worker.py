"""A background loop of due work: ``billingkit worker``, ``billingkit serve`` and hosts that want
billing to happen on its own call :meth:`Worker.start` (daemon threads) or :meth:`Worker.run`.
Each tick is one ``Billing.run_due``, which is the due-work runner (``services.due_work``); beside
it, on a shorter interval and a thread of its own, the webhook dispatcher
(``Billing.deliver_webhooks``) sends what is due, so a long billing run never delays deliveries."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from billingkit.services.billing_runs import RunReport
from billingkit.services.webhook_dispatch import DispatchReport

if TYPE_CHECKING:
    from billingkit.facade.billing import Billing

__all__ = ["Worker"]

log = logging.getLogger("billingkit.worker")


class Worker:
    """Calls ``billing.run_due()`` every ``interval`` seconds and ``billing.deliver_webhooks()``
    every ``webhook_interval`` seconds until stopped (``webhook_interval=0``: no dispatcher).

    >>> worker = Worker(billing, interval=60).start()   # doctest: +SKIP
    >>> worker.stop()                                     # doctest: +SKIP

    A run that fails (the database is down, say) is logged and retried at the next tick; nothing is
    half-written because every batch commits whole or not at all. Reports count invoices without
    keeping them (``keep_invoices=False``): a month-end run of a large book must not stay in memory
    until the next tick.
    """

    def __init__(
        self,
        billing: Billing,
        *,
        interval: float | None = None,
        batch_size: int | None = None,
        webhook_interval: float | None = None,
    ) -> None:
        """``interval``, ``batch_size`` and ``webhook_interval`` default to
        ``billing.settings.worker_interval``, ``run_batch_size`` and ``webhook_interval``."""
        interval = billing.settings.worker_interval if interval is None else interval
        if interval <= 0:
            raise ValueError("interval must be positive")
        webhook_interval = billing.settings.webhook_interval if webhook_interval is None else webhook_interval
        if webhook_interval < 0:
            raise ValueError("webhook_interval must be positive, or 0 for no dispatcher")
        self.billing = billing
        self.interval = interval
        self.webhook_interval = webhook_interval
        self.batch_size = billing.settings.run_batch_size if batch_size is None else batch_size
        self.runs = 0
        self.last_report: RunReport | None = None
        self.dispatches = 0
        self.last_dispatch: DispatchReport | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

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

    def dispatch(self) -> DispatchReport | None:
        """One webhook dispatcher pass; ``None`` when it failed (the error is logged)."""
        try:
            report = self.billing.deliver_webhooks()
        except Exception:  # what it claimed stays due (its lease ends); the next pass retries
            log.exception("webhook dispatch failed; retrying in %s s", self.webhook_interval)
            return None
        self.dispatches += 1
        self.last_dispatch = report
        return report

    def run(self) -> None:
        """Tick until :meth:`stop` is called (blocks the calling thread; the dispatcher runs on a
        thread of its own meanwhile)."""
        dispatcher = self._dispatcher_thread()
        try:
            self._loop(self.tick, self.interval)
        finally:
            if dispatcher is not None:
                dispatcher.join()

    def start(self) -> Worker:
        """Run in daemon threads; returns self."""
        if any(thread.is_alive() for thread in self._threads):
            return self
        self._stop.clear()
        runner = threading.Thread(
            target=self._loop, args=(self.tick, self.interval), name="billingkit-worker", daemon=True
        )
        runner.start()
        self._threads = [runner]
        dispatcher = self._dispatcher_thread()
        if dispatcher is not None:
            self._threads.append(dispatcher)
        return self

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the loops to stop and wait for the current runs to finish."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []

    def _loop(self, work: Callable[[], object], interval: float) -> None:
        while not self._stop.is_set():
            work()
            self._stop.wait(interval)

    def _dispatcher_thread(self) -> threading.Thread | None:
        if not self.webhook_interval:
            return None
        thread = threading.Thread(
            target=self._loop,
            args=(self.dispatch, self.webhook_interval),
            name="billingkit-webhooks",
            daemon=True,
        )
        thread.start()
        return thread
