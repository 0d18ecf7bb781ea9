"""Small stories several test modules start from."""

from __future__ import annotations

from billingkit import Billing, Subscription
from billingkit.services.access import BootstrapResult


def weekly_subscription(billing: Billing, external_id: str = "w-1") -> tuple[BootstrapResult, Subscription]:
    """A new tenant whose test environment has one customer on a 7 usd weekly plan billed in
    advance (so the opening invoice is issued at creation)."""
    setup = billing.bootstrap()
    scoped = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    plan = scoped.plans.create(
        name="Weekly",
        prices=[
            {
                "type": "FIXED",
                "billing_model": "FLAT_FEE",
                "amount": "7",
                "currency": "usd",
                "billing_period": "WEEKLY",
                "invoice_cadence": "ADVANCE",
            }
        ],
    )
    customer = scoped.customers.create(external_id=external_id, name=external_id.upper())
    subscription = scoped.subscriptions.create(
        customer_id=customer.id, plan_id=plan.id, currency="usd", billing_period="WEEKLY"
    )
    return setup, subscription
