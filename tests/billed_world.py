"""A subscription billed for one month with usage, a coupon and a tax, for the display, frame and
recompute tests: the customer is named ``<script>...`` (displays must escape it) and lives in
Germany (its invoices are written in ``de_DE``).

Opening invoice (May, ADVANCE): Base 1,234.50 - 10 % once (123.45) = 1,111.05; VAT 19 % = 211.10;
total 1,322.15. Period-end invoice (1 June): Base for June 1,234.50 + 150 calls SLAB
(100 x 0.10 + 50 x 0.05 = 12.50) = 1,247.00 (the once coupon is used up); VAT 236.93; total
1,483.93.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from billingkit import Billing, Scoped, TestClock
from billingkit.domain.catalog import PlanDetail
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.subscriptions import Subscription

SCRIPT_NAME = "<script>alert(1)</script>"
START = datetime(2026, 5, 1, tzinfo=UTC)
BILLED_AT = datetime(2026, 6, 1, 1, tzinfo=UTC)

BASE = {
    "type": "FIXED",
    "billing_model": "FLAT_FEE",
    "amount": "1234.5",
    "currency": "eur",
    "billing_period": "MONTHLY",
    "invoice_cadence": "ADVANCE",
    "display_name": "Base",
}


def calls(meter_id: str) -> dict[str, Any]:
    return {
        "type": "USAGE",
        "billing_model": "TIERED",
        "tier_mode": "SLAB",
        "tiers": [{"up_to": 100, "unit_amount": "0.1"}, {"up_to": None, "unit_amount": "0.05"}],
        "currency": "eur",
        "billing_period": "MONTHLY",
        "invoice_cadence": "ARREAR",
        "meter_id": meter_id,
        "display_name": "Calls",
    }


@dataclass
class Billed:
    billing: Billing
    clock: TestClock
    s: Scoped
    customer: Customer
    meter_id: str
    plan: PlanDetail
    sub: Subscription

    def usage(self, count: int, start: datetime, *, prefix: str) -> None:
        """``count`` API calls of customer c1, one a minute from ``start``."""
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "api",
                    "external_customer_id": "c1",
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "event_id": f"{prefix}{i}",
                }
                for i in range(count)
            ]
        )

    def invoices(self) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=self.sub.id, limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def opening(self) -> Invoice:
        return next(i for i in self.invoices() if i.billing_reason is BillingReason.SUBSCRIPTION_CREATE)

    def cycle(self) -> Invoice:
        return next(i for i in self.invoices() if i.billing_reason is BillingReason.SUBSCRIPTION_CYCLE)


def billed_world(storage: Any) -> Billed:
    """The module doc's subscription on ``storage``, billed through 1 June."""
    clock = TestClock(START)
    billing = Billing(storage, clock)
    setup = billing.bootstrap()
    s = billing.scope(setup.tenant.id, setup.environments[0][0].id)
    meter = s.meters.create(name="API calls", event_name="api", aggregation={"type": "COUNT"})
    customer = s.customers.create(external_id="c1", name=SCRIPT_NAME, address_country="DE")
    s.tax_rates.create(name="VAT", code="VAT19", percentage_value="19")
    s.tax_associations.create(tax_rate_code="VAT19", external_customer_id="c1")
    s.coupons.create(
        name="Welcome", coupon_code="WELCOME", type="percentage", cadence="once", percentage_off="10"
    )
    created = s.plans.create(name="Pro", prices=[BASE, calls(meter.id)])
    plan = s.plans.get(created.id)
    sub = s.subscriptions.create(
        customer_id=customer.id,
        plan_id=plan.id,
        currency="eur",
        billing_period="MONTHLY",
        subscription_coupons=[{"coupon_code": "WELCOME"}],
    )
    world = Billed(billing, clock, s, customer, meter.id, plan, sub)
    world.usage(150, datetime(2026, 5, 2, tzinfo=UTC), prefix="may")
    clock.set(BILLED_AT)
    billing.run_due()
    return world
