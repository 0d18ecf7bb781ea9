"""A state-machine test of the subscription lifecycle, to run as it is or to extend.

:class:`SubscriptionLifecycle` is a hypothesis ``RuleBasedStateMachine``. Each run builds a fresh
in-memory billing on a test clock (:mod:`billingkit.testing.sandbox`), creates a drawn catalogue
(meters and a plan priced over them), then takes random steps: subscribe a new customer, ingest
usage, advance the clock and run the due work, pause, resume, change a fixed line's quantity,
cancel at once or at the period's end. After every step it checks the invariants:

- **no double bill**: no subscription line item is charged twice for overlapping periods, over
  every invoice that was not voided (:func:`~billingkit.domain.invariants.check_no_duplicate_charges`);
- **totals match lines**: every invoice's subtotal, discounts, taxes, credits, total and amount
  due add up (:func:`~billingkit.domain.invariants.check_totals`);
- **states valid**: every subscription is active, paused or cancelled as the steps taken say;
  a cancelled one stays cancelled; an active one's current period contains the clock's time
  once the due work ran; a billing run fails for no subscription.

Run it in your suite (needs the ``testing`` extra)::

    from hypothesis import settings
    from billingkit.testing.lifecycle import SubscriptionLifecycle

    TestLifecycle = SubscriptionLifecycle.TestCase
    TestLifecycle.settings = settings(max_examples=20, stateful_step_count=15, deadline=None)

Extend it by subclassing: add ``@rule`` and ``@invariant`` methods (``self.scope``,
``self.billing``, ``self.clock`` and the ``subscriptions`` bundle are there), override
:meth:`SubscriptionLifecycle.catalogue_strategy` to test your own catalogue, or
:meth:`SubscriptionLifecycle.check_invoice` to add checks on every invoice. docs/testing.md has
worked examples.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, precondition, rule

from billingkit.clock import TestClock
from billingkit.domain.catalog import PriceType
from billingkit.domain.invariants import ChargeKey, check_no_duplicate_charges
from billingkit.domain.invoices import Invoice, InvoiceStatus
from billingkit.domain.money import ZERO
from billingkit.domain.queries import MAX_LIMIT
from billingkit.domain.subscriptions import PauseStatus, Subscription, SubscriptionStatus
from billingkit.errors import InvalidOperation
from billingkit.facade import Billing, Scoped
from billingkit.services.billing_runs import RunReport
from billingkit.testing.inputs import (
    Catalogue,
    CreatedCatalogue,
    catalogues,
    customer_requests,
    subscription_requests,
    usage_event_requests,
)
from billingkit.testing.sandbox import DEFAULT_START, sandbox_billing, sandbox_scope

__all__ = ["SubscriptionLifecycle", "all_invoices"]


def all_invoices(scope: Scoped, **filters: Any) -> list[Invoice]:
    """Every invoice of ``scope`` matching ``filters`` (``InvoiceSearch`` fields), page by page."""
    found: list[Invoice] = []
    while True:
        page = scope.invoices.list(limit=MAX_LIMIT, offset=len(found), **filters)
        found.extend(page.items)
        if not page.items or len(found) >= page.total:
            return found


class SubscriptionLifecycle(RuleBasedStateMachine):
    """Random walks through subscriptions' lives, checking that billing stays right (see the
    module). Attributes a subclass may use: ``billing``, ``clock``, ``scope``, ``catalogue``
    (a :class:`~billingkit.testing.inputs.CreatedCatalogue`), ``cancelled`` (ids of subscriptions
    the steps ended) and ``reports`` (every ``run_due`` report)."""

    #: Where each run's test clock starts.
    start = DEFAULT_START
    #: The most subscriptions one run creates.
    max_subscriptions: ClassVar[int] = 3
    #: Bundle of the ids of the subscriptions created (draw from it in your own rules).
    subscriptions = Bundle("subscriptions")

    def __init__(self) -> None:
        super().__init__()
        self.clock = TestClock(self.start)
        self.billing: Billing = sandbox_billing(clock=self.clock)
        self.scope: Scoped = sandbox_scope(self.billing)
        self.catalogue: CreatedCatalogue | None = None
        self.external_ids: list[str] = []
        self.cancelled: set[str] = set()
        self.reports: list[RunReport] = []
        self._batches = 0
        self._quantity_changed: dict[str, datetime] = {}

    # -- what a subclass overrides ----------------------------------------------------------
    @classmethod
    def catalogue_strategy(cls) -> st.SearchStrategy[Catalogue]:
        """The catalogues runs draw from: by default up to two meters and a monthly usd plan of
        up to four prices (:func:`~billingkit.testing.inputs.catalogues`)."""
        return catalogues(max_meters=2, max_prices=4)

    def check_invoice(self, invoice: Invoice) -> None:
        """Checks every invoice passes after each step: its figures add up (subtotal, discounts,
        taxes, credits, total and amount due). A line may be negative: a change's credit for
        unused time settles on the same invoice as its charge. Extend with
        ``super().check_invoice(invoice)`` plus your own assertions."""
        lines = invoice.line_items
        label = invoice.invoice_number or invoice.id
        assert sum((line.amount for line in lines), ZERO) == invoice.subtotal, f"{label}: subtotal"
        discounts = sum((line.line_item_discount + line.invoice_level_discount for line in lines), ZERO)
        assert discounts == invoice.total_discount, f"{label}: total_discount"
        credits = sum((line.prepaid_credits_applied for line in lines), ZERO)
        assert credits == invoice.total_prepaid_credits_applied, f"{label}: total_prepaid_credits_applied"
        assert sum((tax.tax_amount for tax in invoice.taxes), ZERO) == invoice.total_tax, (
            f"{label}: total_tax"
        )
        total = max(ZERO, invoice.subtotal - invoice.total_discount + invoice.total_tax - credits)
        assert invoice.total == total, f"{label}: total {invoice.total} != {total}"
        assert invoice.amount_due == invoice.total, f"{label}: amount_due"
        assert invoice.amount_remaining == invoice.amount_due - invoice.amount_paid, (
            f"{label}: amount_remaining"
        )

    # -- steps ------------------------------------------------------------------------------
    @initialize(data=st.data())
    def create_catalogue(self, data: st.DataObject) -> None:
        """Create a catalogue drawn from :meth:`catalogue_strategy`."""
        self.catalogue = data.draw(self.catalogue_strategy(), label="catalogue").create(self.scope)

    @precondition(lambda self: len(self.external_ids) < self.max_subscriptions)
    @rule(target=subscriptions, data=st.data())
    def subscribe(self, data: st.DataObject) -> str:
        """A new customer subscribes to the plan, starting now."""
        assert self.catalogue is not None
        customer = self.scope.customers.create(
            data.draw(customer_requests(external_id=f"cust-{len(self.external_ids)}"), label="customer")
        )
        self.external_ids.append(customer.external_id)
        request = data.draw(subscription_requests(self.catalogue.plan, customer_id=customer.id))
        sub = self.scope.subscriptions.create(request)
        assert sub.subscription_status is SubscriptionStatus.ACTIVE, sub.subscription_status
        return sub.id

    @precondition(lambda self: self.catalogue is not None and self.catalogue.meters and self.external_ids)
    @rule(data=st.data())
    def ingest_usage(self, data: st.DataObject) -> None:
        """Usage of the last two days, for the customers so far; every event is accepted."""
        assert self.catalogue is not None
        now = self.clock.now()
        self._batches += 1
        events = data.draw(
            usage_event_requests(
                self.catalogue.meters,
                external_customer_ids=self.external_ids,
                start=now - timedelta(days=2),
                end=now + timedelta(seconds=1),
                max_size=20,
                id_prefix=f"batch{self._batches}",
            ),
            label="events",
        )
        result = self.scope.events.ingest_bulk(events)
        assert not result.duplicate_ids, result.duplicate_ids

    @rule(days=st.integers(min_value=1, max_value=40), hours=st.integers(min_value=0, max_value=23))
    def advance_and_bill(self, days: int, hours: int) -> None:
        """Move the clock forward and run the due work, as a worker would."""
        self.clock.advance(days=days, hours=hours)
        report = self.billing.run_due()
        self.reports.append(report)
        assert not report.failures, report.failures

    @rule(sub_id=subscriptions, days=st.none() | st.integers(min_value=1, max_value=60))
    def pause(self, sub_id: str, days: int | None) -> None:
        """Pause a subscription now, until resumed or for ``days``: only an active one with no
        pause and no cancellation pending may be; any other is refused and left as it was."""
        sub = self.scope.subscriptions.get(sub_id)
        pausable = (
            sub.subscription_status is SubscriptionStatus.ACTIVE
            and sub.pause_status not in (PauseStatus.ACTIVE, PauseStatus.SCHEDULED)
            and sub.cancel_at is None
        )
        if not pausable:
            self._refused(sub, lambda: self.scope.subscriptions.pause(sub_id, pause_days=days))
            return
        result = self.scope.subscriptions.pause(sub_id, pause_days=days)
        assert result.subscription.subscription_status is SubscriptionStatus.PAUSED

    @rule(sub_id=subscriptions)
    def resume(self, sub_id: str) -> None:
        """Resume a paused subscription now."""
        if self.scope.subscriptions.get(sub_id).subscription_status is not SubscriptionStatus.PAUSED:
            return
        result = self.scope.subscriptions.resume(sub_id)
        assert result.subscription.subscription_status is SubscriptionStatus.ACTIVE

    @rule(sub_id=subscriptions, quantity=st.integers(min_value=1, max_value=20))
    def change_quantity(self, sub_id: str, quantity: int) -> None:
        """Set an active subscription's first live FIXED line to ``quantity`` (prorated)."""
        sub = self.scope.subscriptions.get(sub_id)
        if sub.subscription_status is not SubscriptionStatus.ACTIVE or sub.cancel_at is not None:
            return
        now = self.clock.now()
        lines = [
            line
            for line in sub.line_items
            if line.price_type is PriceType.FIXED
            and (line.end_date is None or line.end_date > now)
            and (line.start_date is None or line.start_date <= now)
            and line.quantity != Decimal(quantity)
        ]
        if not lines or not sub.current_period_start <= now < sub.current_period_end:
            return
        if self._quantity_changed.get(sub_id) == now:
            # A second change of one subscription at the same instant: its invoice would repeat
            # the first's (subscription, period, reason), which the invoice store holds once.
            return
        self._quantity_changed[sub_id] = now
        self.scope.subscriptions.modify(
            sub_id,
            type="quantity_change",
            quantity_change_params={"line_items": [{"id": lines[0].id, "quantity": str(quantity)}]},
        )

    @rule(sub_id=subscriptions, at_once=st.booleans())
    def cancel(self, sub_id: str, at_once: bool) -> None:
        """Cancel a subscription now or at the end of its current period; a paused one's period
        ends only once it is resumed, so only an immediate cancellation is taken for it."""
        sub = self.scope.subscriptions.get(sub_id)
        if sub.subscription_status is SubscriptionStatus.CANCELLED or sub.cancel_at is not None:
            return
        if not at_once and sub.subscription_status is SubscriptionStatus.PAUSED:
            self._refused(
                sub, lambda: self.scope.subscriptions.cancel(sub_id, cancellation_type="end_of_period")
            )
            return
        kind = "immediate" if at_once else "end_of_period"
        result = self.scope.subscriptions.cancel(sub_id, cancellation_type=kind)
        if at_once:
            assert result.subscription.subscription_status is SubscriptionStatus.CANCELLED
        self.cancelled.add(sub_id)

    def _refused(self, sub: Subscription, call: Callable[[], object]) -> None:
        """``call`` raises ``InvalidOperation`` and leaves ``sub`` as it was."""
        try:
            call()
        except InvalidOperation:
            after = self.scope.subscriptions.get(sub.id)
            assert (after.subscription_status, after.version) == (sub.subscription_status, sub.version)
            return
        raise AssertionError(f"{sub.id} ({sub.subscription_status.value}) took a change it should refuse")

    # -- invariants -------------------------------------------------------------------------
    def _subscriptions(self) -> list[Subscription]:
        return list(self.scope.subscriptions.list(limit=MAX_LIMIT).items)

    @invariant()
    def invoices_add_up(self) -> None:
        """Every invoice's figures add up (:meth:`check_invoice`)."""
        for invoice in all_invoices(self.scope):
            self.check_invoice(invoice)

    @invariant()
    def no_double_bill(self) -> None:
        """No line item of a subscription is charged twice for overlapping periods, and no line
        item is credited more than it was charged (credits are the negative lines of a change)."""
        for sub in self._subscriptions():
            lines = [
                line
                for invoice in all_invoices(self.scope, subscription_id=sub.id)
                if invoice.invoice_status is not InvoiceStatus.VOIDED
                for line in invoice.line_items
                if line.subscription_line_item_id is not None
            ]
            keys: list[ChargeKey] = [
                (
                    line.subscription_line_item_id,
                    str(line.invoice_cadence),
                    line.period_start,
                    line.period_end,
                )
                for line in lines
                if line.amount >= 0 and line.subscription_line_item_id is not None
            ]
            for index, key in enumerate(keys):  # each charge against the ones stored before it
                check_no_duplicate_charges([key], keys[:index])
            net: dict[str, Decimal] = {}
            for line in lines:
                key_id = line.subscription_line_item_id or ""
                net[key_id] = net.get(key_id, ZERO) + line.amount
            assert all(amount >= 0 for amount in net.values()), f"{sub.id}: credited beyond its charges"

    @invariant()
    def states_valid(self) -> None:
        """Subscriptions are active, paused or cancelled as the steps say; billing keeps up."""
        now = self.clock.now()
        for sub in self._subscriptions():
            status = sub.subscription_status
            assert status in (
                SubscriptionStatus.ACTIVE,
                SubscriptionStatus.PAUSED,
                SubscriptionStatus.CANCELLED,
            )
            assert sub.current_period_start < sub.current_period_end
            if status is SubscriptionStatus.CANCELLED:
                assert sub.id in self.cancelled, f"{sub.id} was cancelled by no step"
            if status is SubscriptionStatus.PAUSED:
                assert sub.pause_status is PauseStatus.ACTIVE, sub.pause_status
            if status is SubscriptionStatus.ACTIVE and self.reports:
                assert now < sub.current_period_end, f"{sub.id}'s period ended at {sub.current_period_end}"

    def teardown(self) -> None:
        self.billing.close()
