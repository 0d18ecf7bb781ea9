"""The subscription lifecycle state machine (billingkit.testing.lifecycle): it runs clean against
the library, a subclass extends it, and each invariant fails on the break it promises to catch."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from billingkit.domain.invoices import BillingReason
from billingkit.domain.subscriptions import SubscriptionStatus
from billingkit.errors import InvalidOperation
from billingkit.services.plans import PlanCreate
from billingkit.testing import strategies as bks
from billingkit.testing.lifecycle import SubscriptionLifecycle, all_invoices

MODEST = settings(max_examples=20, stateful_step_count=15, deadline=None)

TestSubscriptionLifecycle = SubscriptionLifecycle.TestCase
TestSubscriptionLifecycle.settings = MODEST


class UsagePlans(SubscriptionLifecycle):
    """The docs' extension: a catalogue with usage prices only, a rule that reads usage, and an
    invariant that no invoice is due for less than nothing."""

    @classmethod
    def catalogue_strategy(cls) -> st.SearchStrategy[bks.Catalogue]:
        return bks.catalogues(max_meters=2, shapes=("tiered", "package")).filter(lambda c: bool(c.meters))

    @rule(sub_id=SubscriptionLifecycle.subscriptions)
    def read_the_bill_so_far(self, sub_id: str) -> None:
        if self.scope.subscriptions.get(sub_id).subscription_status is not SubscriptionStatus.ACTIVE:
            return
        preview = self.scope.invoices.preview(sub_id)
        assert preview.subtotal == sum((line.amount for line in preview.line_items), Decimal(0))

    @invariant()
    def nothing_due_below_zero(self) -> None:
        assert all(invoice.amount_due >= 0 for invoice in all_invoices(self.scope))


TestUsagePlans = UsagePlans.TestCase
TestUsagePlans.settings = settings(MODEST, max_examples=10)


def _started() -> SubscriptionLifecycle:
    """A machine with a flat monthly plan and one subscription, a month billed."""
    machine = SubscriptionLifecycle()
    catalogue = bks.Catalogue(
        meters=(),
        plan_draft=PlanCreate.model_validate(
            {
                "name": "Flat",
                "prices": [
                    {"amount": "10", "currency": "usd", "type": "FIXED", "billing_model": "FLAT_FEE",
                     "billing_period": "MONTHLY", "invoice_cadence": "ADVANCE"}
                ],
            }
        ),
    )  # fmt: skip
    machine.catalogue = catalogue.create(machine.scope)
    customer = machine.scope.customers.create(external_id="c-1", name="Ada")
    machine.external_ids.append(customer.external_id)
    sub = machine.scope.subscriptions.create(
        plan_id=machine.catalogue.plan.id, customer_id=customer.id, currency="usd", billing_period="MONTHLY"
    )
    machine.advance_and_bill(days=31, hours=1)
    machine.sub_id = sub.id  # type: ignore[attr-defined]
    machine.invoices_add_up()
    machine.no_double_bill()
    machine.states_valid()
    return machine


def _tamper(machine: SubscriptionLifecycle, **changes: object) -> None:
    (invoice,) = all_invoices(machine.scope, billing_reason=BillingReason.SUBSCRIPTION_CYCLE)
    with machine.billing.storage.unit_of_work(machine.scope.tenant_id, machine.scope.environment_id) as uow:
        uow.invoices.update(invoice.model_copy(update=changes))
        uow.commit()


def test_totals_that_do_not_add_up_are_caught() -> None:
    machine = _started()
    _tamper(machine, subtotal=Decimal("10.01"))
    with pytest.raises(AssertionError, match="subtotal"):
        machine.invoices_add_up()


def test_a_line_billed_twice_is_caught() -> None:
    machine = _started()
    (opening,) = all_invoices(machine.scope, billing_reason=BillingReason.SUBSCRIPTION_CREATE)
    (cycle,) = all_invoices(machine.scope, billing_reason=BillingReason.SUBSCRIPTION_CYCLE)
    # The cycle invoice charges the opening invoice's line for the opening period once more.
    _tamper(machine, line_items=(*cycle.line_items, *opening.line_items))
    with pytest.raises(InvalidOperation, match="already charged"):
        machine.no_double_bill()


def test_a_cancellation_no_step_made_is_caught() -> None:
    machine = _started()
    machine.scope.subscriptions.cancel(machine.sub_id, cancellation_type="immediate")  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match="cancelled by no step"):
        machine.states_valid()


def test_billing_that_falls_behind_the_clock_is_caught() -> None:
    machine = _started()
    machine.clock.advance(timedelta(days=40))  # moved without running the due work
    with pytest.raises(AssertionError, match="period ended"):
        machine.states_valid()


def test_a_refused_pause_leaves_the_subscription_as_it_was() -> None:
    machine = _started()
    sub_id = machine.sub_id  # type: ignore[attr-defined]
    machine.cancel(sub_id, at_once=False)
    version = machine.scope.subscriptions.get(sub_id).version
    machine.pause(sub_id, days=None)  # a pending cancellation: refused
    assert machine.scope.subscriptions.get(sub_id).version == version
