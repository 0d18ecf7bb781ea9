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

from billingkit import Billing, Scoped, Settings, TestClock
from billingkit.domain.catalog import PlanDetail
from billingkit.domain.customers import Customer
from billingkit.domain.invoices import BillingReason, Invoice
from billingkit.domain.subscriptions import Subscription
from billingkit.services.usage import UsageReport
from tests.scenario.test_subscription_billing import calls as usd_calls
from tests.scenario.test_subscription_billing import fee

SCRIPT_NAME = "<script>alert(1)</script>"
START = datetime(2026, 5, 1, tzinfo=UTC)
BILLED_AT = datetime(2026, 6, 1, 1, tzinfo=UTC)
MAY_1_TO_4 = {"start_time": datetime(2026, 5, 1, tzinfo=UTC), "end_time": datetime(2026, 5, 4, tzinfo=UTC)}

BASE = fee("1234.5", currency="eur")


def calls(meter_id: str) -> dict[str, Any]:
    """100 calls at 0.10, then 0.05 (SLAB), in arrears, in euros."""
    return {**usd_calls(meter_id), "currency": "eur", "display_name": "Calls"}


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

    def stored_gb(self) -> UsageReport:
        """A SUM of ``gb`` by day over 1-4 May: 2.5 + 1.25 on 2 May, 4 on 3 May (7.75)."""
        events = [
            ("2026-05-02T08:00:00Z", "2.5"),
            ("2026-05-02T09:00:00Z", "1.25"),
            ("2026-05-03T10:00:00Z", "4"),
        ]
        self.s.events.ingest_bulk(
            [
                {
                    "event_name": "storage",
                    "external_customer_id": "c1",
                    "event_id": f"gb{i}",
                    "timestamp": ts,
                    "properties": {"gb": gb},
                }
                for i, (ts, gb) in enumerate(events)
            ]
        )
        return self.s.usage.report(
            event_name="storage", aggregation_type="SUM", property_name="gb", window_size="DAY", **MAY_1_TO_4
        )

    def invoices(self) -> list[Invoice]:
        items = self.s.invoices.list(subscription_id=self.sub.id, limit=100).items
        return sorted(items, key=lambda inv: inv.billing_sequence or 0)

    def opening(self) -> Invoice:
        return next(i for i in self.invoices() if i.billing_reason is BillingReason.SUBSCRIPTION_CREATE)

    def cycle(self) -> Invoice:
        return next(i for i in self.invoices() if i.billing_reason is BillingReason.SUBSCRIPTION_CYCLE)


def billed_world(storage: Any, settings: Settings | None = None) -> Billed:
    """The module doc's subscription on ``storage``, billed through 1 June (``settings``: the
    ``Billing``'s, e.g. a finalization delay that keeps the period-end invoice a DRAFT)."""
    clock = TestClock(START)
    billing = Billing(storage, clock, settings=settings)
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
